//! `ticktrade hl gen`: realistic synthetic hl-node output, seeded and deterministic.
//!
//! Writes `<out>/snapshot.json`, `meta.json`, `spotMeta.json` and then the three by-block
//! streams. Without `--hours` it runs in real time (one block every `--block-ms`, stamped with
//! the wall clock, until interrupted); with `--hours H` it writes H hours of block time as fast
//! as it can (block times are synthetic, starting at the current hour).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use ticktrade_core::Utc;
use ticktrade_hl_node::join::Stream;
use ticktrade_hl_node::synth::writer::GenWriter;
use ticktrade_hl_node::synth::{GenConfig, Generator};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output data directory (what `ticktrade hl --data-dir` reads).
    #[arg(long)]
    pub out: PathBuf,
    /// Number of coins (about one in eight is a spot pair).
    #[arg(long, default_value_t = 229)]
    pub coins: usize,
    /// Block interval.
    #[arg(long, default_value_t = 100)]
    pub block_ms: u64,
    /// Order actions per block across all coins (55% rejected Alo, 23% resting, 14% cancels,
    /// 6% takers, 2% trigger placements).
    #[arg(long, default_value_t = 600)]
    pub orders_per_block: usize,
    /// Write this many hours of blocks as fast as possible instead of running in real time.
    #[arg(long)]
    pub hours: Option<u64>,
    /// Stop after this many blocks (real-time mode).
    #[arg(long)]
    pub blocks: Option<u64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Resting orders per side per coin at the start.
    #[arg(long, default_value_t = 60)]
    pub depth: usize,
}

fn now() -> Utc {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    Utc::from_nanos(since.as_nanos() as i64)
}

const ORDERS: [[Stream; 3]; 3] = [
    [Stream::Statuses, Stream::Diffs, Stream::Fills],
    [Stream::Fills, Stream::Diffs, Stream::Statuses],
    [Stream::Diffs, Stream::Statuses, Stream::Fills],
];

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = GenConfig {
        seed: args.seed,
        n_coins: args.coins,
        orders_per_block: args.orders_per_block,
        depth: args.depth,
        ..GenConfig::default()
    };
    let mut generator = Generator::new(&config);
    let mut writer = GenWriter::new(&args.out);
    writer.write_bootstrap(&generator).with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!("snapshot at block {} for {} coins in {}", generator.height(), args.coins, args.out.display());
    let block_ns = args.block_ms.max(1) as i64 * 1_000_000;
    if let Some(hours) = args.hours {
        let start = now().as_nanos() / 3_600_000_000_000 * 3_600_000_000_000;
        let n_blocks = hours as i64 * 3_600_000_000_000 / block_ns;
        for i in 0..n_blocks {
            let block = generator.next_block(Utc::from_nanos(start + i * block_ns));
            writer.write_block(&block, ORDERS[(block.height % 3) as usize])?;
        }
        eprintln!("wrote {n_blocks} blocks, last {}", generator.height());
        return Ok(ExitCode::SUCCESS);
    }
    realtime(&mut generator, &mut writer, args.block_ms, args.blocks, &AtomicBool::new(false))?;
    Ok(ExitCode::SUCCESS)
}

/// Writes one block every `block_ms`, stamped with the wall clock, until `blocks` were written
/// or `stop` is set (`ticktrade hl --demo` runs it on a thread beside the server).
pub fn realtime(
    generator: &mut Generator,
    writer: &mut GenWriter,
    block_ms: u64,
    blocks: Option<u64>,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    let period = Duration::from_millis(block_ms.max(1));
    let mut next = Instant::now();
    let mut written = 0u64;
    while blocks.is_none_or(|n| written < n) && !stop.load(Ordering::Relaxed) {
        let block = generator.next_block(now());
        writer.write_block(&block, ORDERS[(block.height % 3) as usize])?;
        written += 1;
        next += period;
        let wait = next.saturating_duration_since(Instant::now());
        std::thread::sleep(wait);
    }
    Ok(())
}
