//! The market the l2 benchmarks run on: the synthetic generator's (229 coins) over a sequence
//! of blocks, and per block both sides (best first) of every coin it changed, as a lane
//! gathers them.

// Each bench that includes this reads only the parts it needs.
#![allow(dead_code)]

use ticktrade_core::{Decimal, Utc};
use ticktrade_hl_node::synth::{GenConfig, Generator};
use ticktrade_hl_proto::ws::{UnitLevel, Units};

/// One coin a block changed: its index and both sides, best first.
pub struct Changed {
    pub coin: usize,
    pub sides: [Vec<UnitLevel>; 2],
}

pub struct Market {
    pub units: Vec<Units>,
    pub names: Vec<String>,
    pub blocks: Vec<Vec<Changed>>,
}

/// `n_blocks` blocks of the default generated market.
pub fn market(n_blocks: usize) -> Market {
    let mut generator = Generator::new(&GenConfig::default());
    let side = |g: &Generator, c: usize, bid: bool| -> Vec<UnitLevel> {
        g.coins()[c].levels(bid).into_iter().map(|(px, sz, n)| UnitLevel { px, sz, n }).collect()
    };
    let n_coins = generator.coins().len();
    let mut last: Vec<[Vec<UnitLevel>; 2]> =
        (0..n_coins).map(|c| [side(&generator, c, true), side(&generator, c, false)]).collect();
    let mut blocks = Vec::new();
    for b in 0..n_blocks {
        generator.next_block(Utc::from_millis(1_700_000_000_000 + 100 * b as i64));
        let mut changed = Vec::new();
        for (c, before) in last.iter_mut().enumerate() {
            let now = [side(&generator, c, true), side(&generator, c, false)];
            if now != *before {
                changed.push(Changed { coin: c, sides: now.clone() });
                *before = now;
            }
        }
        blocks.push(changed);
    }
    let coins = generator.coins();
    let unit = |scale: u32| Decimal::new(1, scale as u8).unwrap_or(Decimal::from_int(1));
    Market {
        units: coins.iter().map(|c| Units { px: unit(c.px_scale), sz: unit(c.sz_decimals) }).collect(),
        names: coins.iter().map(|c| c.name.clone()).collect(),
        blocks,
    }
}
