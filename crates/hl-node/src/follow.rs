//! Follows one hl-node stream (`<data>/<stream_dir>/hourly/<YYYYMMDD>/<H>`) as it is written.
//!
//! Owns: the open hourly file and read offset, the partial last line, line numbers, hourly
//! rollover (drain the old file, then open the next one from its start) and positioning at a
//! given block height on start or restart.
//! Must not: wait or sleep, or hold more than a bounded amount of a file at once. `poll` reads
//! what is there, at most [`READ_LIMIT`] bytes per call, with one `read_to_end` into a kept
//! buffer, and returns; the caller decides when to call it (file-system notification, with a
//! polling fallback — see [`watch_dir`]) and calls again at once while [`Follower::pending`]
//! says more is waiting (catching up on an hourly file of gigabytes after a restart goes in
//! steps, each step's lines handled in between).
//! A consumer done with a line hands its `String` back ([`Follower::recycle`]): the next line
//! is copied into it instead of into a fresh allocation (`Spares`, at most [`SPARES`] kept), so
//! reading allocates nothing in steady state.
//!
//! [`watch_dir`] is the one recursive create/modify watcher of the data directory: it wakes
//! the engine. [`Watched`] is a set of followers woken by their own `watch_dir`: the file-level
//! floor reader of `ticktrade hl stats` and `bench hl`.

/// Most bytes one `poll` or `poll_current` reads (the default of [`Follower::read_limit`]).
pub const READ_LIMIT: u64 = 64 << 20;

/// Most line buffers a follower keeps for reuse (`Follower::recycle`).
pub const SPARES: usize = 4;

/// Largest capacity of a kept line buffer: a longer line's buffer is freed, not kept.
pub const SPARE_MAX_BYTES: usize = 8 << 20;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ticktrade_hl_proto::node::scan_block_number;

use crate::join::{Line, Origin, Stream};

/// `(yyyymmdd, hour)`: how hourly files sort.
pub type HourKey = (u32, u32);

/// The path of one hourly file.
pub fn hourly_path(data_dir: &Path, stream: Stream, (date, hour): HourKey) -> PathBuf {
    data_dir.join(stream.dir_name()).join("hourly").join(date.to_string()).join(hour.to_string())
}

/// Every hourly file of a stream, oldest first.
pub fn list_hours(data_dir: &Path, stream: Stream) -> io::Result<Vec<HourKey>> {
    let root = data_dir.join(stream.dir_name()).join("hourly");
    let mut keys = Vec::new();
    let dates = match std::fs::read_dir(&root) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(keys),
        Err(e) => return Err(e),
    };
    for date in dates {
        let date = date?;
        let Some(d) = date.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        for hour in std::fs::read_dir(date.path())? {
            let hour = hour?;
            if let Some(h) = hour.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) {
                keys.push((d, h));
            }
        }
    }
    keys.sort_unstable();
    Ok(keys)
}

struct Current {
    key: HourKey,
    name: Arc<str>,
    file: File,
    line_no: u64,
}

/// A follower of one stream.
pub struct Follower {
    data_dir: PathBuf,
    stream: Stream,
    current: Option<Current>,
    /// What was read and not yet handed out: the start of an unfinished line (no newline
    /// in it). Reads append here, so its capacity (a block's largest line) is reused.
    partial: Vec<u8>,
    /// When no file is open yet: only files at or after this hour are considered.
    start_key: HourKey,
    /// Most bytes read per call.
    read_limit: u64,
    /// The last call stopped at `read_limit`: more may be waiting.
    pending: bool,
    /// Bytes of the last `read_available`.
    last_read: u64,
    /// Handed-back line buffers, for the next lines.
    spares: Spares,
}

/// Line buffers handed back by the consumer, at most [`SPARES`] of at most [`SPARE_MAX_BYTES`]
/// each. A line is copied into the smallest one it fits in, else into a new one: no allocation,
/// and pages already mapped. A fresh block-sized allocation (~0.3 MB) gets new pages whenever
/// the allocator handed the last line's memory to something that is kept (in `bench hl`'s
/// per-block run, the generator's blocks: ~64 page faults per block in the copy, each a first
/// touch and a cleared page).
#[derive(Debug, Default)]
struct Spares {
    free: Vec<String>,
}

impl Spares {
    /// A buffer holding `text`: the smallest kept one with room for it, else a new one.
    fn text(&mut self, text: &str) -> String {
        let fit =
            self.free.iter().enumerate().filter(|(_, s)| s.capacity() >= text.len()).min_by_key(|(_, s)| s.capacity());
        match fit {
            Some((i, _)) => {
                let mut s = self.free.swap_remove(i);
                s.push_str(text);
                s
            }
            None => text.to_owned(),
        }
    }

    /// The text of a line's bytes, invalid UTF-8 replaced (`String::from_utf8_lossy`).
    fn line(&mut self, bytes: &[u8]) -> String {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.text(text),
            Err(_) => String::from_utf8_lossy(bytes).into_owned(),
        }
    }

    /// Keeps `s` (emptied) for a later line. When [`SPARES`] are kept already, the smallest of
    /// them and `s` is freed: what is kept is what fits the longest lines.
    fn put(&mut self, mut s: String) {
        if s.capacity() == 0 || s.capacity() > SPARE_MAX_BYTES {
            return;
        }
        s.clear();
        if self.free.len() < SPARES {
            self.free.push(s);
        } else if let Some(smallest) = self.free.iter_mut().min_by_key(|k| k.capacity())
            && smallest.capacity() < s.capacity()
        {
            *smallest = s;
        }
    }
}

impl Follower {
    /// A follower that will read the earliest file present at its first `poll`.
    pub fn new(data_dir: &Path, stream: Stream) -> Follower {
        Follower {
            data_dir: data_dir.to_owned(),
            stream,
            current: None,
            partial: Vec::new(),
            start_key: (0, 0),
            read_limit: READ_LIMIT,
            pending: false,
            last_read: 0,
            spares: Spares::default(),
        }
    }

    /// The same follower reading at most `bytes` (at least 1) per call.
    pub fn read_limit(mut self, bytes: u64) -> Follower {
        self.read_limit = bytes.max(1);
        self
    }

    /// True when the last `poll`/`poll_current` stopped at the read limit: call again (after
    /// handling its lines) before waiting for the next notification.
    pub fn pending(&self) -> bool {
        self.pending
    }

    pub fn stream(&self) -> Stream {
        self.stream
    }

    /// Hands back a line's text once the line is done with: a later line is read into it
    /// (at most [`SPARES`] are kept, each of at most [`SPARE_MAX_BYTES`]).
    pub fn recycle(&mut self, text: String) {
        self.spares.put(text);
    }

    /// Positions at the file holding block `after + 1`: the newest file whose first block is at
    /// most `after + 1` (earlier lines are skipped by the caller by height).
    pub fn seek_height(&mut self, after: u64) -> io::Result<()> {
        let keys = list_hours(&self.data_dir, self.stream)?;
        let mut chosen = keys.first().copied();
        for &key in keys.iter().rev() {
            if first_height(&hourly_path(&self.data_dir, self.stream, key))?.is_some_and(|h| h <= after + 1) {
                chosen = Some(key);
                break;
            }
        }
        self.current = None;
        self.partial.clear();
        if let Some(key) = chosen {
            self.open(key)?;
        }
        Ok(())
    }

    /// Positions after the end of the newest file (skip history; used by tools that only want
    /// new blocks).
    pub fn seek_end(&mut self) -> io::Result<()> {
        let keys = list_hours(&self.data_dir, self.stream)?;
        self.current = None;
        self.partial.clear();
        if let Some(&key) = keys.last() {
            self.open(key)?;
            if let Some(cur) = &mut self.current {
                let len = cur.file.seek(SeekFrom::End(0))?;
                // Count lines so later reports carry true line numbers.
                cur.file.seek(SeekFrom::Start(0))?;
                let mut reader = BufReader::new(&mut cur.file);
                let (mut lines, mut buf) = (0u64, Vec::new());
                while reader.read_until(b'\n', &mut buf)? > 0 {
                    if buf.last() == Some(&b'\n') {
                        lines += 1;
                    } else {
                        self.partial = std::mem::take(&mut buf);
                    }
                    buf.clear();
                }
                cur.line_no = lines;
                cur.file.seek(SeekFrom::Start(len))?;
            }
        }
        Ok(())
    }

    fn open(&mut self, key: HourKey) -> io::Result<()> {
        let path = hourly_path(&self.data_dir, self.stream, key);
        let file = File::open(&path)?;
        self.current = Some(Current { key, name: path.display().to_string().into(), file, line_no: 0 });
        Ok(())
    }

    /// Opens the first hourly file at or after the start hour if none is open yet. False when
    /// there is no such file (yet).
    fn ensure_open(&mut self) -> io::Result<bool> {
        if self.current.is_none() {
            let keys = list_hours(&self.data_dir, self.stream)?;
            match keys.into_iter().find(|&k| k >= self.start_key) {
                Some(key) => self.open(key)?,
                None => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Reads every complete line written since the last call to the open hourly file (opening
    /// the first one if none is open) without looking for a newer file: the cheap read a
    /// caller does first on a notification, before the directory listing of [`Follower::poll`].
    /// Returns how many lines it appended.
    pub fn poll_current(&mut self, out: &mut Vec<Line>) -> io::Result<usize> {
        let before = out.len();
        self.pending = false;
        if !self.ensure_open()? {
            return Ok(0);
        }
        self.pending = self.read_available(out, self.read_limit)?;
        Ok(out.len() - before)
    }

    /// Reads every complete line written since the last call, crossing into newer hourly files
    /// when they exist. Returns how many lines it appended.
    pub fn poll(&mut self, out: &mut Vec<Line>) -> io::Result<usize> {
        let before = out.len();
        self.pending = false;
        if !self.ensure_open()? {
            return Ok(0);
        }
        let mut budget = self.read_limit;
        loop {
            if self.read_available(out, budget)? {
                self.pending = true;
                break;
            }
            budget = budget.saturating_sub(self.last_read);
            let Some(cur) = &self.current else { break };
            let key = cur.key;
            let next = list_hours(&self.data_dir, self.stream)?.into_iter().find(|&k| k > key);
            let Some(next) = next else { break };
            // The node has moved on: drain what is left of the old file, then switch (not
            // before all of it has been read, so nothing of it is lost).
            if budget == 0 || self.read_available(out, budget)? {
                self.pending = true;
                break;
            }
            budget = budget.saturating_sub(self.last_read);
            if !self.partial.is_empty() {
                let text = self.spares.line(&self.partial);
                self.partial.clear();
                if let Some(cur) = &mut self.current {
                    cur.line_no += 1;
                    out.push(Line {
                        stream: self.stream,
                        text,
                        origin: Origin { file: cur.name.clone(), line: cur.line_no },
                    });
                }
            }
            self.open(next)?;
        }
        Ok(out.len() - before)
    }

    /// Reads what was written since the last read, at most `limit` bytes, in one go
    /// (`read_to_end` sizes the buffer from the file's length), and hands out each complete line
    /// with one copy, into a handed-back buffer when one has room (`Spares`). True when it
    /// stopped at `limit` (more may be waiting); the bytes read are in `last_read`.
    fn read_available(&mut self, out: &mut Vec<Line>, limit: u64) -> io::Result<bool> {
        self.last_read = 0;
        let Some(cur) = &mut self.current else { return Ok(false) };
        // The kept partial line holds no newline: the scan starts after it.
        let mut from = self.partial.len();
        let read = (&mut cur.file).take(limit).read_to_end(&mut self.partial);
        let mut start = 0;
        while let Some(pos) = find_newline(&self.partial[from..]) {
            let end = from + pos;
            cur.line_no += 1;
            if end > start {
                let text = self.spares.line(&self.partial[start..end]);
                out.push(Line {
                    stream: self.stream,
                    text,
                    origin: Origin { file: cur.name.clone(), line: cur.line_no },
                });
            }
            start = end + 1;
            from = start;
        }
        self.partial.drain(..start);
        let n = read? as u64;
        self.last_read = n;
        Ok(n >= limit)
    }
}

/// Calls `on_change` when a file under `data_dir` (recursively) is created or written: how the
/// engine and [`Watched`] learn that a stream grew. `None` (the caller polls) when notifications
/// cannot be set up.
pub fn watch_dir(data_dir: &Path, on_change: impl Fn() + Send + 'static) -> Option<notify::RecommendedWatcher> {
    use notify::{EventKind, RecursiveMode, Watcher as _};
    let handler = move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event
            && matches!(event.kind, EventKind::Create(_) | EventKind::Modify(_))
        {
            on_change();
        }
    };
    let watcher = notify::recommended_watcher(handler)
        .and_then(|mut watcher| watcher.watch(data_dir, RecursiveMode::Recursive).map(|()| watcher));
    match watcher {
        Ok(watcher) => Some(watcher),
        Err(err) => {
            tracing::warn!("file notifications unavailable ({err}); polling only");
            None
        }
    }
}

/// Followers of several streams woken by file-system notifications on the data directory,
/// with a polling fallback: how a reader outside the server (the latency tools' file-level
/// floor) follows hl-node's files the way the engine does.
pub struct Watched {
    followers: Vec<Follower>,
    woken: std::sync::mpsc::Receiver<()>,
    _watcher: Option<notify::RecommendedWatcher>,
}

impl Watched {
    /// Follows `streams` under `data_dir` from the start of their files (see
    /// [`Watched::seek_end`]). Without notifications (the watch could not be set up) it polls.
    pub fn new(data_dir: &Path, streams: &[Stream]) -> Watched {
        // One pending wake-up is enough: the reader reads everything there is when it wakes.
        let (tx, woken) = std::sync::mpsc::sync_channel::<()>(1);
        let watcher = watch_dir(data_dir, move || {
            let _ = tx.try_send(());
        });
        let followers = streams.iter().map(|&s| Follower::new(data_dir, s)).collect();
        Watched { followers, woken, _watcher: watcher }
    }

    /// Skips what the files hold now: only lines written from here on are read.
    pub fn seek_end(&mut self) -> io::Result<()> {
        self.followers.iter_mut().try_for_each(Follower::seek_end)
    }

    /// Waits for a notification (at most `timeout`: the polling fallback), then appends every
    /// complete line each stream has, in the followers' bounded steps. A stream that cannot be
    /// read now is tried again on the next call.
    pub fn wait_lines(&mut self, timeout: std::time::Duration, out: &mut Vec<Line>) {
        let _ = self.woken.recv_timeout(timeout);
        for f in &mut self.followers {
            while f.poll(out).is_ok() && f.pending() {}
        }
    }
}

/// The index of the first `\n` in `bytes`. Blocks of 64 bytes are tested without an early
/// exit, which the compiler turns into vector compares (a plain `position` goes byte by
/// byte: a block's lines are ~0.4 MB); the block holding a newline is then searched.
fn find_newline(bytes: &[u8]) -> Option<usize> {
    let mut chunks = bytes.chunks_exact(64);
    let mut base = 0;
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |any, &b| any | (b == b'\n')) {
            return chunk.iter().position(|&b| b == b'\n').map(|i| base + i);
        }
        base += 64;
    }
    chunks.remainder().iter().position(|&b| b == b'\n').map(|i| base + i)
}

/// The block number of a file's first complete line.
fn first_height(path: &Path) -> io::Result<Option<u64>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut reader = BufReader::new(file.take(1 << 20));
    let mut head = Vec::new();
    reader.read_until(b'\n', &mut head)?;
    Ok(scan_block_number(&String::from_utf8_lossy(&head)))
}

#[cfg(test)]
mod tests;
