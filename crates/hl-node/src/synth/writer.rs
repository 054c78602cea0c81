//! Writes generated blocks into an hl-node data directory, one hourly file per stream.
//!
//! Owns: the open hourly files, hour rollover by block time, whole-line writes (one `write`
//! per line, no user-space buffering, like `--disable-output-file-buffering`), and the
//! snapshot/metadata files beside the data.
//! Must not: decide block contents or times.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use ticktrade_hl_proto::time::date_hour;

use super::{GenBlock, Generator};
use crate::follow::{HourKey, hourly_path};
use crate::join::Stream;

/// File names the generator writes next to the node's stream directories.
pub const SNAPSHOT_FILE: &str = "snapshot.json";
pub const META_FILE: &str = "meta.json";
pub const SPOT_META_FILE: &str = "spotMeta.json";
/// The asset contexts the server takes funding, open interest, oracle and mark price from.
pub const PERP_CTXS_FILE: &str = "metaAndAssetCtxs.json";
pub const SPOT_CTXS_FILE: &str = "spotMetaAndAssetCtxs.json";

/// The writer.
pub struct GenWriter {
    dir: PathBuf,
    files: [Option<(HourKey, File)>; 3],
    line: Vec<u8>,
}

impl GenWriter {
    pub fn new(dir: &Path) -> GenWriter {
        GenWriter { dir: dir.to_owned(), files: [None, None, None], line: Vec::with_capacity(1 << 16) }
    }

    /// Writes `snapshot.json`, `meta.json`, `spotMeta.json` and the two asset-context
    /// documents for the generator's state.
    pub fn write_bootstrap(&self, generator: &Generator) -> io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let (meta, spot) = generator.meta_json();
        std::fs::write(self.dir.join(META_FILE), meta)?;
        std::fs::write(self.dir.join(SPOT_META_FILE), spot)?;
        let (perp_ctxs, spot_ctxs) = generator.asset_ctxs_json();
        std::fs::write(self.dir.join(PERP_CTXS_FILE), perp_ctxs)?;
        std::fs::write(self.dir.join(SPOT_CTXS_FILE), spot_ctxs)?;
        // Write then rename, so a reader never sees half a snapshot.
        let tmp = self.dir.join(format!("{SNAPSHOT_FILE}.tmp"));
        std::fs::write(&tmp, generator.snapshot_json())?;
        std::fs::rename(tmp, self.dir.join(SNAPSHOT_FILE))
    }

    /// Appends the block's three lines, in the order given (the node writes streams
    /// independently, so callers vary it).
    pub fn write_block(&mut self, block: &GenBlock, order: [Stream; 3]) -> io::Result<()> {
        let key = date_hour(block.time);
        for stream in order {
            let text = match stream {
                Stream::Statuses => &block.statuses,
                Stream::Diffs => &block.diffs,
                Stream::Fills => &block.fills,
            };
            self.write_line(stream, key, text.as_bytes())?;
        }
        Ok(())
    }

    /// Appends raw bytes as one line of `stream` in hour `key` (tests use it for damage).
    pub fn write_line(&mut self, stream: Stream, key: HourKey, text: &[u8]) -> io::Result<()> {
        let slot = &mut self.files[stream as usize];
        if slot.as_ref().is_none_or(|(k, _)| *k != key) {
            let path = hourly_path(&self.dir, stream, key);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let file = OpenOptions::new().create(true).append(true).open(path)?;
            *slot = Some((key, file));
        }
        self.line.clear();
        self.line.extend_from_slice(text);
        self.line.push(b'\n');
        match slot {
            Some((_, file)) => file.write_all(&self.line),
            None => Ok(()),
        }
    }
}
