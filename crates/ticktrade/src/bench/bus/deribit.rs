//! `bench bus` for Deribit: the in-process simulator as upstream, `serve --publish`, a
//! `serve --upstream nats://…` edge and, in the delay run, a direct `serve` on the same
//! simulator, each server on its own runtime and named threads.
//!
//! Delays are the servers' own fan-out stamps, one sample per frame per client: direct,
//! upstream frame received → client frame written; via NATS, the publisher's upstream frame
//! received → the edge's client frame written (the edge takes the publisher's receive instant
//! through `ticktrade_serve::BusOrigins`, a hook only a same-process benchmark can use).
//!
//! Owns: the Deribit stack, its clients and their channels.
//! Must not: time the fan-out itself (the servers record it).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use futures_util::{SinkExt as _, StreamExt as _};
use ticktrade_latency::Histogram;
use ticktrade_serve::{BusConfig, BusCounters, BusOrigins, ServeConfig, ServeHandle, UpstreamSource};
use ticktrade_sim::{SimConfig, SimHandle};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

use super::host::NatsProcess;
use super::{Args, CLIENTS_PER_WAVE, DIRECT, EDGE, PUBLISHER, Stack, UPSTREAM, client_config, runtime, wait_ready};

/// Channels one load client subscribes to (a server takes up to 1,000 per connection).
const CHANNELS_PER_CLIENT: usize = 200;

/// A server and the runtime it runs on.
struct Server {
    rt: Runtime,
    handle: ServeHandle,
}

impl Server {
    fn start(name: &str, threads: u64, config: ServeConfig) -> anyhow::Result<Server> {
        let rt = runtime(name, usize::try_from(threads).unwrap_or(2))?;
        let handle = rt.block_on(ticktrade_serve::spawn(config)).with_context(|| format!("starting {name}"))?;
        Ok(Server { rt, handle })
    }

    fn bus(&self) -> BusCounters {
        self.rt.block_on(self.handle.totals()).and_then(|t| t.bus).unwrap_or_default()
    }

    fn stop(self) {
        self.rt.block_on(self.handle.shutdown());
        self.rt.shutdown_timeout(Duration::from_secs(1));
    }

    /// The fan-out delays the server recorded, as a histogram.
    fn recorded(&self) -> Histogram {
        let mut h = Histogram::new();
        for (ns, count) in self.handle.fanout_recorded() {
            h.record_n(ns, count);
        }
        h
    }
}

/// The Deribit bus path on loopback.
pub(super) struct Deribit {
    sim_rt: Runtime,
    sim: SimHandle,
    publisher: Server,
    edge: Server,
    direct: Option<Server>,
    instrument: String,
    clients: Vec<JoinHandle<()>>,
}

impl Deribit {
    /// `rate`: simulator events a second; `delay`: the delay run (one instrument, a direct
    /// server, `clients` clients a side), else the load run (every instrument).
    pub(super) fn start(
        args: &Args,
        nats: &NatsProcess,
        rate: u32,
        delay: bool,
        clients: usize,
    ) -> anyhow::Result<Deribit> {
        let instrument = args.instrument.clone().unwrap_or_else(|| "BTC-PERPETUAL".to_owned());
        let sim_rt = runtime(UPSTREAM, 1)?;
        let sim_config = SimConfig { rate_per_s: rate, ..SimConfig::default() };
        let sim = sim_rt.block_on(ticktrade_sim::spawn_loopback(sim_config)).context("starting the simulator")?;
        let bus = BusConfig::parse(&nats.url(), None, |_| None).context("the NATS URL")?;
        let origins = Arc::new(BusOrigins::default());
        let base = ServeConfig {
            instruments: delay.then(|| vec![instrument.clone()]),
            max_connections: clients + 64,
            bus_origins: Some(Arc::clone(&origins)),
            ..ServeConfig::default()
        };
        let direct = delay
            .then(|| {
                let config =
                    ServeConfig { upstream: UpstreamSource::Url(sim.ws_url()), bus_origins: None, ..base.clone() };
                Server::start(DIRECT, args.server_threads, config)
            })
            .transpose()?;
        let config =
            ServeConfig { upstream: UpstreamSource::Url(sim.ws_url()), publish: Some(bus.clone()), ..base.clone() };
        let publisher = Server::start(PUBLISHER, args.server_threads, config)?;
        let edge =
            Server::start(EDGE, args.server_threads, ServeConfig { upstream: UpstreamSource::Nats(bus), ..base })?;
        Ok(Deribit { sim_rt, sim, publisher, edge, direct, instrument, clients: Vec::new() })
    }

    fn start_clients(&mut self, rt: &Runtime, url: &str, lists: Vec<Vec<String>>) -> Arc<AtomicUsize> {
        let ready = Arc::new(AtomicUsize::new(0));
        for (i, channels) in lists.into_iter().enumerate() {
            if i % CLIENTS_PER_WAVE == CLIENTS_PER_WAVE - 1 {
                // Let the accept queue keep up.
                std::thread::sleep(Duration::from_millis(5));
            }
            self.clients.push(rt.spawn(client(url.to_owned(), channels, Arc::clone(&ready))));
        }
        ready
    }
}

impl Stack for Deribit {
    fn delay_clients(&mut self, rt: &Runtime, n: usize) -> anyhow::Result<()> {
        let channel = format!("book.{}.raw", self.instrument);
        let Some(direct_url) = self.direct.as_ref().map(|d| d.handle.ws_url()) else {
            bail!("the delay run has a direct server")
        };
        let direct_ready = self.start_clients(rt, &direct_url, vec![vec![channel.clone()]; n]);
        let edge_url = self.edge.handle.ws_url();
        let edge_ready = self.start_clients(rt, &edge_url, vec![vec![channel]; n]);
        wait_ready("direct server", &direct_ready, n, Duration::from_secs(60))?;
        wait_ready("edge", &edge_ready, n, Duration::from_secs(60))
    }

    fn load_clients(&mut self, rt: &Runtime, timed: bool) -> anyhow::Result<usize> {
        let names = rt.block_on(instrument_names(self.sim.ws_url()))?;
        let channels: Vec<String> = if timed {
            names.iter().map(|n| format!("book.{n}.raw")).collect()
        } else {
            names
                .iter()
                .flat_map(|n| [format!("book.{n}.100ms"), format!("trades.{n}.100ms"), format!("ticker.{n}.100ms")])
                .collect()
        };
        let lists: Vec<Vec<String>> = channels.chunks(CHANNELS_PER_CLIENT).map(<[String]>::to_vec).collect();
        let n = lists.len();
        let url = self.edge.handle.ws_url();
        let ready = self.start_clients(rt, &url, lists);
        wait_ready("load clients", &ready, n, Duration::from_secs(60))?;
        Ok(channels.len())
    }

    fn reset_delays(&mut self) {
        if let Some(direct) = &self.direct {
            direct.handle.reset_fanout();
        }
        self.edge.handle.reset_fanout();
    }

    fn delays(&mut self) -> (Histogram, Histogram) {
        (self.direct.as_ref().map(Server::recorded).unwrap_or_default(), self.edge.recorded())
    }

    fn publisher(&self) -> BusCounters {
        self.publisher.bus()
    }

    fn edge(&self) -> BusCounters {
        self.edge.bus()
    }

    fn stop(self: Box<Self>) -> anyhow::Result<()> {
        for task in &self.clients {
            task.abort();
        }
        if let Some(direct) = self.direct {
            direct.stop();
        }
        self.edge.stop();
        self.publisher.stop();
        self.sim_rt.block_on(self.sim.shutdown());
        self.sim_rt.shutdown_timeout(Duration::from_secs(1));
        Ok(())
    }
}

/// The simulator's instrument names (`public/get_instruments`, every currency).
async fn instrument_names(url: String) -> anyhow::Result<Vec<String>> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str()).await.context("connecting to the simulator")?;
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"public/get_instruments","params":{"currency":"any"}}"#;
    ws.send(Message::text(request)).await.context("asking for instruments")?;
    while let Some(msg) = ws.next().await {
        let Message::Text(text) = msg.context("reading instruments")? else { continue };
        if text.contains(r#""id":1"#) {
            let specs = ticktrade_deribit_proto::instrument::parse_instruments_response(&text, 0)
                .map_err(|e| anyhow::anyhow!("the simulator's instrument list: {e}"))?;
            return Ok(specs.into_iter().map(|s| s.name).collect());
        }
    }
    bail!("the simulator closed before listing its instruments")
}

/// A client of `url` on `channels` that reads and discards; counts itself in `ready` at its
/// first notification.
async fn client(url: String, channels: Vec<String>, ready: Arc<AtomicUsize>) {
    let connect = tokio_tungstenite::connect_async_with_config(url.as_str(), Some(client_config()), true);
    let Ok((mut ws, _)) = connect.await else {
        eprintln!("bench bus: a client could not connect to {url}");
        return;
    };
    let sub = serde_json::json!({"jsonrpc":"2.0","id":1,"method":"public/subscribe","params":{"channels":channels}});
    if ws.send(Message::text(sub.to_string())).await.is_err() {
        return;
    }
    let mut first = true;
    while let Some(Ok(msg)) = ws.next().await {
        if first && matches!(&msg, Message::Text(t) if t.contains(r#""method":"subscription""#)) {
            first = false;
            ready.fetch_add(1, Ordering::Relaxed);
        }
    }
}
