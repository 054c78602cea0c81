//! Shared helpers: a generated market written into a temp dir and an engine following it.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use ticktrade_core::{Side, Utc};
use ticktrade_hl_node::books::{Books, levels_of};
use ticktrade_hl_node::follow::Follower;
use ticktrade_hl_node::join::Stream;
use ticktrade_hl_node::server::engine::{Engine, EngineConfig};
use ticktrade_hl_node::server::{MetaDocs, Running, ServeConfig, start};
use ticktrade_hl_node::synth::writer::GenWriter;
use ticktrade_hl_node::synth::{GenConfig, Generator};
use ticktrade_hl_proto::asset_ctx::BaseCtxs;
use ticktrade_hl_proto::info::{Meta, SpotMeta, coins_from_meta};
use ticktrade_hl_proto::snapshot::Snapshot;

/// 2026-04-30 20:59:50 UTC: ten seconds before an hour boundary.
/// An `l2Book` subscription's aggregation as the documented parameters give it:
/// `(nSigFigs, mantissa)`.
pub type Variant = (Option<u32>, Option<u32>);

/// The seven aggregations Hyperliquid documents, in the order the tests walk them.
pub const VARIANTS: [Variant; 7] = [
    (None, None),
    (Some(5), None),
    (Some(5), Some(2)),
    (Some(5), Some(5)),
    (Some(4), None),
    (Some(3), None),
    (Some(2), None),
];

pub const T0_MS: i64 = 1_777_582_790_000;

pub fn generator(n_coins: usize, orders_per_block: usize) -> Generator {
    Generator::new(&GenConfig { seed: 42, n_coins, orders_per_block, depth: 30, start_height: 5_000 })
}

/// Books loaded from the generator's current snapshot, as `ticktrade hl` loads them.
pub fn books_from(generator: &Generator) -> Books {
    let (meta, spot) = generator.meta_json();
    let meta: Meta = serde_json::from_str(&meta).unwrap();
    let spot: SpotMeta = serde_json::from_str(&spot).unwrap();
    let mut books = Books::new(&coins_from_meta(&meta, Some(&spot)));
    let text = generator.snapshot_json();
    books.load_snapshot(&Snapshot::parse(text.as_bytes()).unwrap(), Utc::from_millis(0)).unwrap();
    books
}

pub fn followers(dir: &Path, after: u64) -> Vec<Follower> {
    [Stream::Statuses, Stream::Diffs, Stream::Fills]
        .into_iter()
        .map(|s| {
            let mut f = Follower::new(dir, s);
            f.seek_height(after).unwrap();
            f
        })
        .collect()
}

pub fn engine(dir: &Path, generator: &Generator) -> Engine {
    let books = books_from(generator);
    let height = books.height();
    Engine::new(EngineConfig::default(), books, followers(dir, height))
}

/// A generated market (`n_coins`, `orders_per_block`) bootstrapped into `dir`, its writer, and
/// the server following `dir` on a free loopback port with the generator's metadata and asset
/// contexts and the default configuration, as `ticktrade hl` runs it.
pub async fn served(dir: &Path, n_coins: usize, orders_per_block: usize) -> (Generator, GenWriter, Running) {
    let generator = generator(n_coins, orders_per_block);
    let writer = GenWriter::new(dir);
    writer.write_bootstrap(&generator).unwrap();
    let engine = engine(dir, &generator);
    let (meta, spot_meta) = generator.meta_json();
    let (perp, spot) = generator.asset_ctxs_json();
    let docs = MetaDocs {
        meta,
        spot_meta,
        perp_ctxs: BaseCtxs::from_perp_doc(&perp).unwrap(),
        spot_ctxs: BaseCtxs::from_spot_doc(&spot).unwrap(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = start(listener, engine, dir, docs, ServeConfig::default()).unwrap();
    (generator, writer, server)
}

/// Stream write order for block `i`: varies so the join by height is exercised.
pub fn order(i: u64) -> [Stream; 3] {
    match i % 3 {
        0 => [Stream::Statuses, Stream::Diffs, Stream::Fills],
        1 => [Stream::Fills, Stream::Diffs, Stream::Statuses],
        _ => [Stream::Diffs, Stream::Fills, Stream::Statuses],
    }
}

/// Writes `n` blocks 1.5 s apart from `T0_MS` on; returns their fills lines.
pub fn write_blocks(generator: &mut Generator, writer: &mut GenWriter, n: u64) -> Vec<String> {
    let mut fills = Vec::new();
    for _ in 0..n {
        let i = generator.height();
        let block = generator.next_block(Utc::from_millis(T0_MS + (i as i64 - 5_000) * 1_500));
        writer.write_block(&block, order(i)).unwrap();
        fills.push(block.fills);
    }
    fills
}

/// Asserts the engine's books equal the generator's model for every coin; returns the coins
/// compared.
pub fn assert_books_equal(generator: &Generator, books: &Books, skip: &[&str]) -> usize {
    let mut n = 0;
    for coin in generator.coins() {
        if skip.contains(&coin.name.as_str()) {
            continue;
        }
        let id = books.coins.id(&coin.name).unwrap();
        let book = books.book(id).unwrap();
        assert!(!book.stale, "{} stale", coin.name);
        for (bid, side) in [(true, Side::Buy), (false, Side::Sell)] {
            let got: Vec<(i64, i64, u32)> =
                levels_of(&book.book, side).into_iter().map(|(p, q, n)| (p.raw(), q.raw(), n)).collect();
            assert_eq!(got, coin.levels(bid), "{} {:?} at height {}", coin.name, side, books.height());
        }
        n += 1;
    }
    n
}

/// `POST /info` with `body` on a fresh connection: the status and the body.
pub async fn http_post(addr: std::net::SocketAddr, body: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /info HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_string(&mut response)).await.unwrap().unwrap();
    let status: u16 = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}
