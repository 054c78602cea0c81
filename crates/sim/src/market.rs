//! The simulated venue: `ticktrade-exchange`'s matching engine and synthetic market, plus
//! what the protocol needs around them (the `get_instruments` objects, id texts, and the
//! engine's state rendered as Deribit API objects).
//!
//! Owns: the `Exchange` and the `SynthMarket` driving it, the catalogue's Deribit objects
//! (built-in, or verbatim from a recorded `public/get_instruments` reply), and rendering of
//! orders, trades, positions, tickers, books and account summaries into `api` objects; the
//! sampled price history (`history`), the combo registry (`combos`), and options' implied
//! volatilities and greeks (`greeks`).
//! Must not: match, validate or account on its own (the exchange does all of it), do I/O, or
//! read a clock (time comes in as `Utc`).

pub mod combos;
mod greeks;
mod history;
mod render;

use ticktrade_core::{InstrumentId, InstrumentKind, Price, Qty, Side, Utc};
use ticktrade_deribit_proto::api;
use ticktrade_exchange::{
    AccountId as ExAccount, Catalogue, CatalogueParams, Config, Event, Exchange, Money, Request, SynthConfig,
    SynthMarket,
};

pub use combos::{ComboError, Combos};
pub use history::{History, Samples, stat, vol_series};
pub use render::money;

/// An account of the simulated venue (API keys map to accounts from `auth::FIRST_ACCOUNT`).
pub type AccountId = u32;

/// The synthetic market's house accounts start here (far above any API key's account).
const HOUSE: u32 = 1_000_000_000;

/// A bad instrument file.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    #[error("instrument file is not a get_instruments reply or array: {0}")]
    Json(#[from] serde_json::Error),
    #[error("instrument file: {0}")]
    Spec(#[from] ticktrade_deribit_proto::instrument::InstrumentError),
    #[error("catalogue: {0}")]
    Catalogue(#[from] ticktrade_exchange::catalogue::CatalogueError),
    #[error("no instruments")]
    Empty,
}

/// The venue. See the module header.
pub struct Market {
    pub ex: Exchange,
    synth: SynthMarket,
    /// `get_instruments` objects, indexed like the catalogue.
    infos: Vec<api::Instrument>,
    started_ms: i64,
    /// Sampled marks and indexes (bounded rings, see `history`).
    pub history: History,
    pub combos: Combos,
    /// Accounts that marked the simulator's announcement as read (one per API key at most).
    pub announcement_read: Vec<AccountId>,
}

impl std::fmt::Debug for Market {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Market").field("instruments", &self.infos.len()).finish_non_exhaustive()
    }
}

/// Reads a `public/get_instruments` reply (or its bare `result` array) into a catalogue and
/// the objects to list verbatim.
pub fn catalogue_from_file(text: &str, now: Utc) -> Result<(Catalogue, Vec<api::Instrument>), CatalogueError> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    let array = value.get("result").cloned().unwrap_or(value);
    let array_text = serde_json::to_string(&array)?;
    // Decoded twice: exactly into specs, and into the objects `get_instruments` lists.
    let specs = ticktrade_deribit_proto::instrument::parse_instruments(&array_text)?;
    let infos: Vec<api::Instrument> = serde_json::from_str(&array_text)?;
    if specs.is_empty() {
        return Err(CatalogueError::Empty);
    }
    let mut catalogue = Catalogue::from_specs(specs, now)?;
    for (i, info) in infos.iter().enumerate() {
        catalogue.set_commissions(InstrumentId(i as u32), info.maker_commission.0, info.taker_commission.0);
    }
    Ok((catalogue, infos))
}

/// The built-in catalogue (Deribit-like, relative to `now`) and its objects.
pub fn builtin_catalogue(now: Utc) -> Result<(Catalogue, Vec<api::Instrument>), CatalogueError> {
    let params = CatalogueParams { today: now, ..CatalogueParams::default() };
    let catalogue = Catalogue::builtin(params)?;
    let infos = catalogue.iter().map(|inst| render::instrument_info(&catalogue, inst)).collect();
    Ok((catalogue, infos))
}

impl Market {
    /// A venue over `catalogue`; the synthetic market performs `rate_per_s` actions a second.
    pub fn new(catalogue: Catalogue, infos: Vec<api::Instrument>, seed: u64, rate_per_s: u32, now: Utc) -> Market {
        let config = Config { first_order_id: 584_849_853, ..Config::default() };
        let mut ex = Exchange::new(catalogue, config);
        let synth_config =
            SynthConfig { seed, actions_per_sec: rate_per_s, maker: ExAccount(HOUSE), ..SynthConfig::default() };
        let synth = SynthMarket::new(&mut ex, synth_config);
        let history = History::new(infos.len(), ex.catalogue().indexes().len());
        let first_combo_id = infos.iter().map(|i| i.instrument_id).max().unwrap_or(0) + 1;
        let combos = Combos::new(ex.catalogue(), first_combo_id, now);
        Market { ex, synth, infos, started_ms: now.as_millis(), history, combos, announcement_read: Vec::new() }
    }

    /// Advances the synthetic market to `now` (the first call builds every book).
    pub fn step(&mut self, now: Utc, out: &mut Vec<Event>) {
        self.synth.step(&mut self.ex, now, out);
        self.history.record(now, &self.ex);
    }

    /// Handles a request of `account` (expiries and good-til-day orders advance first).
    pub fn handle(
        &mut self,
        now: Utc,
        account: AccountId,
        request: Request,
        out: &mut Vec<Event>,
    ) -> Result<ticktrade_exchange::Reply, ticktrade_exchange::Reject> {
        self.ex.handle(now, ExAccount(account), request, out)
    }

    pub fn instrument_count(&self) -> usize {
        self.infos.len()
    }

    pub fn find(&self, name: &str) -> Option<InstrumentId> {
        self.ex.catalogue().lookup(name)
    }

    pub fn find_by_id(&self, id: u32) -> Option<InstrumentId> {
        self.infos.iter().position(|i| i.instrument_id == id).map(|i| InstrumentId(i as u32))
    }

    pub fn info(&self, instrument: InstrumentId) -> &api::Instrument {
        &self.infos[instrument.0 as usize]
    }

    pub fn instruments(&self) -> impl Iterator<Item = (InstrumentId, &api::Instrument)> {
        self.infos.iter().enumerate().map(|(i, info)| (InstrumentId(i as u32), info))
    }

    pub fn spec(&self, instrument: InstrumentId) -> &ticktrade_core::InstrumentSpec {
        // Every id handed out comes from this catalogue.
        match self.ex.catalogue().get(instrument) {
            Some(inst) => &inst.spec,
            None => &self.ex.catalogue().iter().next().expect("catalogue is never empty").spec,
        }
    }

    pub fn name(&self, instrument: InstrumentId) -> &str {
        &self.info(instrument).instrument_name
    }

    pub fn change_id(&self, instrument: InstrumentId) -> i64 {
        self.ex.change_id(instrument) as i64
    }

    pub fn last_change_ms(&self, instrument: InstrumentId) -> i64 {
        self.ex.ticker(instrument).map_or(self.started_ms, |t| t.timestamp.as_millis().max(self.started_ms))
    }

    /// Levels of one side, best first, at most `depth`.
    pub fn levels(&self, instrument: InstrumentId, side: Side, depth: usize) -> Vec<(Price, Qty)> {
        self.ex.book_levels(instrument, side, depth).map(|l| (l.price, l.qty)).collect()
    }

    pub fn best(&self, instrument: InstrumentId, side: Side) -> Option<(Price, Qty)> {
        self.ex.book(instrument).and_then(|b| b.best(side)).map(|l| (l.price, l.qty))
    }

    /// The index price of an index name (`btc_usd`), if the catalogue has it.
    pub fn index_price(&self, index_name: &str) -> Option<Money> {
        self.ex.catalogue().index(index_name).map(|i| self.ex.index_price(i))
    }

    pub fn index_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.infos.iter().map(|i| i.price_index.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    pub fn tape_len(&self, instrument: InstrumentId) -> u64 {
        self.ex.ticker(instrument).map_or(0, |t| t.volume.raw() as u64)
    }

    pub fn started_ms(&self) -> i64 {
        self.started_ms
    }

    /// True for accounts the synthetic market trades with (never an API key's).
    pub fn is_house(account: ExAccount) -> bool {
        account.0 >= HOUSE
    }

    /// The order's text id (`BTC-584849853`).
    pub fn order_id_text(&self, order: &ticktrade_exchange::Order) -> String {
        self.ex.order_id_text(order)
    }

    /// The book restart fault: removes the best `levels` levels of each side without
    /// publishing the changes. Returns what was removed (`bid 60000.5`…) for the fault log.
    pub fn restart_book(&mut self, now: Utc, instrument: InstrumentId, levels: usize) -> Vec<String> {
        let mut removed = Vec::new();
        let mut ids = Vec::new();
        let Some(book) = self.ex.book(instrument) else { return removed };
        let spec = self.spec(instrument).clone();
        for side in [Side::Buy, Side::Sell] {
            for level in book.levels(side).take(levels) {
                removed.push(format!(
                    "{} {}",
                    if side == Side::Buy { "bid" } else { "ask" },
                    spec.price_to_decimal(level.price)
                ));
                ids.extend(book.orders_at(side, level.price).map(|o| (o.id, o.payload)));
            }
        }
        let mut silent = Vec::new();
        for (id, owner) in ids {
            // The owner cancels, so the exchange's own checks hold; the changes are not published.
            let _ = self.ex.handle(now, owner, Request::Cancel { order_id: id }, &mut silent);
        }
        removed
    }

    /// `public/get_currencies` names: every base and settlement currency.
    pub fn currency_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.ex.catalogue().currencies().to_vec();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Settlement currencies (for `get_account_summaries`).
    pub fn settlement_currencies(&self) -> Vec<String> {
        let mut names: Vec<String> = self.infos.iter().map(|i| i.settlement_currency.clone()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Whether the instrument is of `kind` (`any`, `future`, `option`, `spot`, `combo`…).
    pub fn kind_matches(&self, instrument: InstrumentId, kind: &str) -> bool {
        let k = self.spec(instrument).kind;
        match kind {
            "any" => true,
            "combo" => k.is_combo(),
            other => InstrumentKind::parse(other) == Some(k),
        }
    }

    /// Whether the instrument belongs to `currency` (base or settlement; `any` matches all).
    pub fn currency_matches(&self, instrument: InstrumentId, currency: &str) -> bool {
        let info = self.info(instrument);
        currency.eq_ignore_ascii_case("any")
            || info.base_currency.eq_ignore_ascii_case(currency)
            || info.settlement_currency.eq_ignore_ascii_case(currency)
    }
}
