//! `ticktrade hl serve`: load metadata and one snapshot, then follow the files and serve.
//!
//! The snapshot comes from `--snapshot FILE`, or from the node's info server (`--info-url`,
//! asked exactly once, at start), or from `<data-dir>/snapshot.json` as `ticktrade hl gen`
//! writes it. It is never re-requested on a timer: each request stalls hl-node for seconds.
//!
//! `--demo` needs no node: the generator of `ticktrade hl gen` writes its bootstrap and then
//! one block every 100 ms into a fresh directory under the system's temporary directory, on a
//! thread of this process, and the server follows that directory like any other.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use ticktrade_core::Utc;
use ticktrade_hl_node::books::Books;
use ticktrade_hl_node::follow::Follower;
use ticktrade_hl_node::info_client::post_json;
use ticktrade_hl_node::join::Stream;
use ticktrade_hl_node::server::engine::{Engine, EngineConfig};
use ticktrade_hl_node::server::{MetaDocs, ServeConfig, start};
use ticktrade_hl_node::synth::writer::{
    GenWriter, META_FILE, PERP_CTXS_FILE, SNAPSHOT_FILE, SPOT_CTXS_FILE, SPOT_META_FILE,
};
use ticktrade_hl_node::synth::{GenConfig, Generator};
use ticktrade_hl_proto::asset_ctx::{BaseCtxs, CtxDocError};
use ticktrade_hl_proto::info::{CoinMeta, Meta, SpotMeta, coins_from_meta};
use ticktrade_hl_proto::snapshot::{Snapshot, file_snapshot_request};

#[derive(clap::Args, Debug, Clone)]
#[group(id = "ServeArgs")]
pub struct Args {
    /// hl-node's data directory (the one holding `node_*_by_block/`). Default: ~/hl/data.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// L4 snapshot file (`fileSnapshot`/`l4Snapshots` output with users and height).
    #[arg(long, conflicts_with = "info_url")]
    pub snapshot: Option<PathBuf>,
    /// The node's info server (e.g. http://localhost:3001/info): asked once at start for a
    /// snapshot, for meta/spotMeta unless --meta is given, and for metaAndAssetCtxs /
    /// spotMetaAndAssetCtxs (the asset contexts' funding, open interest, oracle and mark price).
    #[arg(long)]
    pub info_url: Option<String>,
    /// Where the node writes the snapshot it is asked for (a path on the node's machine).
    #[arg(long)]
    pub snapshot_out: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub listen: String,
    /// Only keep and serve these coins (comma separated). Default: every coin.
    #[arg(long, value_delimiter = ',')]
    pub coins: Option<Vec<String>>,
    /// `meta` document (JSON) to serve and to take perps' szDecimals from.
    #[arg(long)]
    pub meta: Option<PathBuf>,
    /// `spotMeta` document (JSON).
    #[arg(long)]
    pub spot_meta: Option<PathBuf>,
    /// Relay the node's lines to every client instead of keeping books.
    #[arg(long)]
    pub raw: bool,
    /// Queue items a client may have unread before it is disconnected as too slow (an item: one
    /// message, or up to 8 l2Book messages of one coin, a client's of one block).
    #[arg(long, default_value_t = 4096)]
    pub queue: usize,
    /// Polling fallback interval (file notifications normally wake the server at once).
    #[arg(long, default_value_t = 100)]
    pub poll_ms: u64,
    /// Threads that decode, apply and publish each block: 1, or 2 (the engine's and one
    /// helper). Default: 2 when the machine has at least 2 CPUs, else 1.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub threads: Option<u8>,
    /// Run each block on the engine's threads (not the connection tasks) under SCHED_FIFO at
    /// this priority, so that no normal thread takes a CPU from a block half-way (needs root or
    /// CAP_SYS_NICE; off by default: see docs/PERFORMANCE.md, "Tuning options"). The engine
    /// thread and its helper switch to it at the start of each block and back to the normal
    /// class at its end. With no CPU left for the connection tasks during a block (2 vCPUs),
    /// frames reach clients later: measured e2e p50 +0.5 ms, p99 lower.
    #[arg(long, value_name = "1-99", value_parser = clap::value_parser!(u8).range(1..=99))]
    pub rt_priority: Option<u8>,
    /// Try it without a node: generate a synthetic market (the `hl gen` generator, 24 coins,
    /// a block every 100 ms) into a fresh temporary directory in this process and serve it.
    #[arg(long, conflicts_with_all = ["data_dir", "snapshot", "info_url", "meta", "spot_meta"])]
    pub demo: bool,
    /// Also publish every coin's l2Book (all seven aggregations, 20 levels), trades, bbo and
    /// allMids to this NATS bus (nats://HOST:PORT[,…] or tls://…; credentials in the URL,
    /// nats://user:pass@host or nats://token@host, or NATS_USER/NATS_PASSWORD, NATS_TOKEN,
    /// NATS_NKEY, NATS_CREDS), and answer edges' snapshot requests. See docs/SCALING.md.
    #[arg(long, value_name = "URLS", conflicts_with = "raw")]
    pub publish: Option<String>,
    /// Serve clients from a NATS bus a `--publish` server feeds (an edge: no node files, no
    /// books; l2Book at 20 levels, trades, bbo, allMids and /info l2Book and allMids are
    /// carried). URLs and credentials as for --publish.
    #[arg(long, value_name = "URLS", conflicts_with_all = [
        "data_dir", "snapshot", "info_url", "snapshot_out", "coins", "meta", "spot_meta", "raw", "threads",
        "rt_priority", "demo", "publish",
    ])]
    pub upstream: Option<String>,
    /// A PEM file of the CA that signed the NATS servers' certificates (requires TLS; also
    /// NATS_CA).
    #[arg(long, value_name = "FILE")]
    pub nats_ca: Option<PathBuf>,
    /// Subject root on the bus (publisher and edges must agree).
    #[arg(long, value_name = "ROOT", default_value = ticktrade_bus::hl::HL_ROOT)]
    pub nats_subjects: String,
    /// Frames each of the publisher's eight bus queues holds before it drops (counted; edges
    /// resync).
    #[arg(long, default_value_t = 8192)]
    pub bus_queue: usize,
}

/// The demo market: small enough to follow by eye, busy enough to move every block.
const DEMO_COINS: usize = 24;
const DEMO_ORDERS_PER_BLOCK: usize = 120;
const DEMO_BLOCK_MS: u64 = 100;

/// The generator thread of `--demo` and the directory it writes (removed on drop).
struct Demo {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl Demo {
    /// Writes the bootstrap (snapshot and metadata) and starts the real-time generator.
    fn start() -> anyhow::Result<Demo> {
        let dir = std::env::temp_dir().join(format!("ticktrade-hl-demo-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
        }
        let config = GenConfig { n_coins: DEMO_COINS, orders_per_block: DEMO_ORDERS_PER_BLOCK, ..GenConfig::default() };
        let mut generator = Generator::new(&config);
        let mut writer = GenWriter::new(&dir);
        writer.write_bootstrap(&generator).with_context(|| format!("writing {}", dir.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("hl-demo-gen".into())
            .spawn(move || super::r#gen::realtime(&mut generator, &mut writer, DEMO_BLOCK_MS, None, &flag))?;
        Ok(Demo { dir, stop, thread: Some(thread) })
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            match thread.join() {
                Ok(Err(err)) => eprintln!("demo generator stopped: {err:#}"),
                Err(_) => eprintln!("demo generator panicked"),
                Ok(Ok(())) => {}
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `$HOME/hl/data`, hl-node's own default.
pub fn default_data_dir() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join("hl").join("data")
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// Everything the server needs before it accepts a client: metadata and loaded books.
pub struct Start {
    pub data_dir: PathBuf,
    pub docs: MetaDocs,
    pub books: Books,
}

/// Loads metadata and the snapshot as `args` say.
pub fn load_start(args: &Args) -> anyhow::Result<Start> {
    let data_dir = args.data_dir.clone().unwrap_or_else(default_data_dir);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let ask = |body: String| -> anyhow::Result<Vec<u8>> {
        let url = args.info_url.as_deref().unwrap_or_default();
        Ok(runtime.block_on(post_json(url, body, Duration::from_secs(120)))?)
    };
    let doc = |flag: &Option<PathBuf>, file: &str, kind: &str| -> anyhow::Result<Option<String>> {
        if let Some(path) = flag {
            return Ok(Some(String::from_utf8(read(path)?)?));
        }
        if args.info_url.is_some() {
            return Ok(Some(String::from_utf8(ask(format!(r#"{{"type":"{kind}"}}"#))?)?));
        }
        let beside = data_dir.join(file);
        Ok(if beside.exists() { Some(String::from_utf8(read(&beside)?)?) } else { None })
    };
    let meta_text = doc(&args.meta, META_FILE, "meta")?;
    let spot_text = doc(&args.spot_meta, SPOT_META_FILE, "spotMeta")?;
    let meta: Option<Meta> = meta_text.as_deref().map(serde_json::from_str).transpose().context("meta document")?;
    let spot: Option<SpotMeta> =
        spot_text.as_deref().map(serde_json::from_str).transpose().context("spotMeta document")?;
    let coins: Vec<CoinMeta> = match &meta {
        Some(meta) => coins_from_meta(meta, spot.as_ref()),
        None => Vec::new(),
    };
    let snapshot_bytes = match (&args.snapshot, &args.info_url) {
        (Some(path), _) => read(path)?,
        (None, Some(_)) => {
            let out = args
                .snapshot_out
                .clone()
                .unwrap_or_else(|| std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join("out.json"));
            let out_text = out.to_str().context("snapshot path is not UTF-8")?;
            eprintln!("asking the node for one L4 snapshot (it pauses block processing while writing it)");
            ask(file_snapshot_request(out_text).to_string())?;
            read(&out)?
        }
        (None, None) => {
            let beside = data_dir.join(SNAPSHOT_FILE);
            if !beside.exists() {
                bail!(
                    "no snapshot in {}: pass --snapshot FILE or --info-url URL (or put {} in the data dir); \
                     to try ticktrade hl without a node, run `ticktrade hl --demo`",
                    data_dir.display(),
                    SNAPSHOT_FILE
                );
            }
            read(&beside)?
        }
    };
    // The contexts' base fields: a missing or refused document leaves them null (the books'
    // fields are served either way), so a node whose info server lacks these types still serves.
    let ctxs = |file: &str, kind: &str, parse: fn(&str) -> Result<BaseCtxs, CtxDocError>| -> BaseCtxs {
        let text = if args.info_url.is_some() {
            ask(format!(r#"{{"type":"{kind}"}}"#))
                .map_err(|e| e.to_string())
                .and_then(|b| String::from_utf8(b).map_err(|e| e.to_string()))
        } else {
            let beside = data_dir.join(file);
            if !beside.exists() {
                return BaseCtxs::default();
            }
            read(&beside).map_err(|e| format!("{e:#}")).and_then(|b| String::from_utf8(b).map_err(|e| e.to_string()))
        };
        match text.and_then(|t| parse(&t).map_err(|e| e.to_string())) {
            Ok(ctxs) => ctxs,
            Err(err) => {
                eprintln!("{kind}: {err}; funding, open interest, oracle and mark price are served as null");
                BaseCtxs::default()
            }
        }
    };
    let perp_ctxs = ctxs(PERP_CTXS_FILE, "metaAndAssetCtxs", BaseCtxs::from_perp_doc);
    let spot_ctxs = ctxs(SPOT_CTXS_FILE, "spotMetaAndAssetCtxs", BaseCtxs::from_spot_doc);
    let snapshot = Snapshot::parse(&snapshot_bytes).context("snapshot file")?;
    let mut books = Books::new(&coins);
    books.load_snapshot(&snapshot, Utc::from_nanos(0)).context("loading the snapshot")?;
    let docs = MetaDocs {
        meta: meta_text.unwrap_or_else(|| r#"{"universe":[]}"#.to_owned()),
        spot_meta: spot_text.unwrap_or_else(|| r#"{"universe":[],"tokens":[]}"#.to_owned()),
        perp_ctxs,
        spot_ctxs,
    };
    Ok(Start { data_dir, docs, books })
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    if let Some(urls) = args.upstream.clone() {
        return super::bus::run_edge(&args, &urls);
    }
    let publish =
        args.publish.as_deref().map(|urls| super::bus::config(&args, urls).context("--publish")).transpose()?;
    let demo = if args.demo { Some(Demo::start()?) } else { None };
    let demo_dir = demo.as_ref().map(|d| d.dir.clone());
    if demo_dir.is_some() {
        args.data_dir.clone_from(&demo_dir);
    }
    let start_state = load_start(&args)?;
    let height = start_state.books.height();
    let n_coins = start_state.books.coins.len();
    let coins: Vec<String> = start_state
        .books
        .coins
        .iter()
        .map(|(_, spec)| spec.name.clone())
        .filter(|name| args.coins.as_ref().is_none_or(|set| set.contains(name)))
        .collect();
    let mut followers = Vec::new();
    for stream in Stream::ALL {
        let mut follower = Follower::new(&start_state.data_dir, stream);
        follower
            .seek_height(height)
            .with_context(|| format!("positioning {} at block {}", stream.dir_name(), height + 1))?;
        followers.push(follower);
    }
    let config = EngineConfig {
        coins: args.coins.clone().map(|c| c.into_iter().collect::<HashSet<_>>()),
        raw: args.raw,
        poll: Duration::from_millis(args.poll_ms.max(1)),
        stop_after: None,
        threads: args.threads.map_or_else(EngineConfig::default_threads, usize::from),
    };
    let engine = Engine::new(config, start_state.books, followers);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async move {
        // The bus first: a bad address or login fails the start before anything is served.
        let bus = match &publish {
            Some(config) => Some(super::bus::connect(config).await?),
            None => None,
        };
        let listener =
            tokio::net::TcpListener::bind(&args.listen).await.with_context(|| format!("binding {}", args.listen))?;
        let server = start(
            listener,
            engine,
            &start_state.data_dir,
            start_state.docs,
            ServeConfig { queue: args.queue, rt_priority: args.rt_priority },
        )?;
        println!(
            "ticktrade hl: snapshot at block {height}, {n_coins} coins; listening on ws://{}/ws and http://{}/info",
            server.addr, server.addr
        );
        if let Some(dir) = &demo_dir {
            print_demo_hints(server.addr, dir);
        }
        let sink = match (bus, &publish) {
            (Some((client, stats)), Some(config)) => {
                let sink_config = ticktrade_hl_node::server::bus::SinkConfig {
                    subjects: super::bus::subjects(&args)?,
                    queue: args.bus_queue.max(1),
                    coins,
                };
                let sink = ticktrade_hl_node::server::bus::start_sink(client, &server.engine(), sink_config, stats);
                println!("publishing to NATS at {} under {}", config.servers_text(), args.nats_subjects);
                Some(sink)
            }
            _ => None,
        };
        match &sink {
            Some(sink) => super::bus::status_until_ctrl_c(|| sink.counters()).await?,
            None => tokio::signal::ctrl_c().await?,
        }
        if let Some(sink) = sink {
            sink.stop();
        }
        server.stop();
        anyhow::Ok(())
    })?;
    drop(demo);
    Ok(ExitCode::SUCCESS)
}

/// What to try against a `--demo` server.
fn print_demo_hints(addr: std::net::SocketAddr, dir: &Path) {
    println!("demo: a synthetic market of {DEMO_COINS} coins, a block every {DEMO_BLOCK_MS} ms, in {}", dir.display());
    println!("try:");
    println!(r#"  curl -s http://{addr}/info -H 'content-type: application/json' -d '{{"type":"allMids"}}'"#);
    println!(
        r#"  curl -s http://{addr}/info -H 'content-type: application/json' -d '{{"type":"l2Book","coin":"BTC"}}'"#
    );
    println!(
        r#"  websocat ws://{addr}/ws  then send  {{"method":"subscribe","subscription":{{"type":"l2Book","coin":"BTC"}}}}"#
    );
    println!("stop with Ctrl-C");
}
