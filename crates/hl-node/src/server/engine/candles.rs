//! What the engine keeps from the trades of each fills line: every coin's candles of every
//! interval (`ticktrade_hl_proto::candle`), for the `candle` feed and `candleSnapshot`, and its
//! volume since the server started (`dayNtlVlm`/`dayBaseVlm` of its asset context).
//!
//! Owns: the per-coin candles and volume (a coin gets them on its first trade), the decode and pairing
//! buffers of the fills line (kept from line to line), and the `candle` frames.
//! Must not: allocate per trade in steady state (a trade in an open bucket touches the coin's
//! fourteen open candles and nothing else), or cost anything per line for the feed when
//! nobody follows a candle (an `is_empty` check of its index).
//!
//! Every fills line is decoded, with or without subscribers: a `candleSnapshot` asks about
//! trades from before anyone asked. Candles are bucketed by each trade's own time, never by
//! the clock.

use bytes::Bytes;

use ticktrade_hl_proto::asset_ctx::Volume;
use ticktrade_hl_proto::candle::{CoinCandles, Interval, UnitTrade, write_candle_frame, write_candle_snapshot};
use ticktrade_hl_proto::info::CandleRequest;
use ticktrade_hl_proto::node::{NodeFill, WsTrade};

use super::Engine;
use super::feeds::ListOf;
use crate::coins::CoinId;

/// The trades' state between lines.
#[derive(Default)]
pub(super) struct TradeState {
    /// Per coin (by `CoinId`), from its first trade.
    coins: Vec<Option<Box<CoinTrades>>>,
    /// The last line's fills and trades, emptied (`decode::recycle`), and the pairing scratch.
    pub(super) fills: Vec<NodeFill<'static>>,
    pub(super) trades: Vec<WsTrade<'static>>,
    pub(super) used: Vec<bool>,
    /// The coins of this line's trades, each with its earliest trade time.
    touched: Vec<(CoinId, i64)>,
    /// A `candle` frame being written.
    out: Vec<u8>,
}

/// One coin's candles and volume.
#[derive(Default)]
pub(super) struct CoinTrades {
    candles: CoinCandles,
    volume: Volume,
}

impl TradeState {
    fn coin(&self, coin: CoinId) -> Option<&CoinTrades> {
        self.coins.get(coin.0 as usize).and_then(|c| c.as_deref())
    }

    fn coin_mut(&mut self, coin: CoinId) -> &mut CoinTrades {
        let at = coin.0 as usize;
        if self.coins.len() <= at {
            self.coins.resize_with(at + 1, || None);
        }
        self.coins[at].get_or_insert_with(Box::default)
    }
}

impl Engine {
    /// Adds a line's trades to their coins' candles, then sends the changed candles to their
    /// `candle` subscribers. A trade of an unknown or filtered coin, or whose price or size is
    /// not in the coin's units, is left out.
    pub(super) fn record_trades(&mut self, trades: &[WsTrade<'_>]) {
        let feed = !self.subs.candle.is_empty();
        self.trade_state.touched.clear();
        for trade in trades {
            let Some(coin) = self.books.coins.id(trade.coin).filter(|_| self.allowed(trade.coin)) else { continue };
            let spec = self.books.coins.spec(coin);
            let (Some(px), Some(sz)) = (spec.parse_px(trade.px), spec.parse_sz(trade.sz)) else { continue };
            let time_ms = i64::try_from(trade.time).unwrap_or(i64::MAX);
            let unit = UnitTrade { time_ms, px: px.raw(), sz: sz.raw() };
            let state = self.trade_state.coin_mut(coin);
            state.candles.record(unit);
            state.volume.add(unit.px, unit.sz);
            if feed {
                let touched = &mut self.trade_state.touched;
                match touched.iter_mut().find(|(c, _)| *c == coin) {
                    Some((_, since)) => *since = (*since).min(time_ms),
                    None => touched.push((coin, time_ms)),
                }
            }
        }
        if feed {
            self.publish_candles();
        }
    }

    /// Every candle a trade of this line may have changed, to the subscribers of its coin and
    /// interval, oldest first.
    fn publish_candles(&mut self) {
        let touched = std::mem::take(&mut self.trade_state.touched);
        for &(coin, since) in &touched {
            for interval in Interval::ALL {
                if !self.subs.candle.contains_key(&(coin, interval)) {
                    continue;
                }
                let spec = self.books.coins.spec(coin);
                let state = &mut self.trade_state;
                let Some(trades) = state.coins.get(coin.0 as usize).and_then(|c| c.as_deref()) else { continue };
                let mut frames = Vec::new();
                for candle in trades.candles.series(interval).since(since) {
                    state.out.clear();
                    write_candle_frame(&mut state.out, &spec.name, interval, spec.units, candle);
                    frames.push(Bytes::copy_from_slice(&state.out));
                }
                for frame in frames {
                    self.send_to_list(ListOf::Candle(coin, interval), &frame);
                }
            }
        }
        self.trade_state.touched = touched;
    }

    /// `[dayNtlVlm, dayBaseVlm]` of `coin`: its volume since the server started (`0.0` before
    /// its first trade).
    pub(super) fn volume_texts(&self, coin: CoinId) -> Option<[String; 2]> {
        let volume = self.trade_state.coin(coin).map_or(Volume::default(), |t| t.volume);
        volume.texts(self.books.coins.spec(coin).units)
    }

    /// The `candleSnapshot` answer: `[]` for a coin not served or without trades.
    pub(super) fn candle_snapshot(&self, req: &CandleRequest) -> String {
        let mut out = Vec::new();
        let coin = self.books.coins.id(&req.coin).filter(|_| self.allowed(&req.coin));
        let Some(coin) = coin else { return "[]".to_owned() };
        let spec = self.books.coins.spec(coin);
        let series = self.trade_state.coin(coin).map(|t| t.candles.series(req.interval));
        let end_ms = req.end_time.unwrap_or(i64::MAX);
        write_candle_snapshot(&mut out, &spec.name, req.interval, spec.units, series, req.start_time, end_ms);
        String::from_utf8(out).unwrap_or_else(|_| "[]".to_owned())
    }
}
