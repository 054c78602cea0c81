//! Joins the order-status and raw-diff streams by block height.
//!
//! Owns: per-stream buffers of lines keyed by height, the next height to emit, and gap
//! detection (a stream that has moved past a height without writing it lost that block).
//! Must not: parse events or look at arrival order across streams: the node writes the three
//! files independently, so a block's lines can arrive in any order. Nor keep a line it will not
//! emit: `push` and a `Joined::Gap` give such lines back, so their buffers return to the
//! follower that read them.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Which by-block stream a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    Statuses,
    Diffs,
    Fills,
}

impl Stream {
    pub const ALL: [Stream; 3] = [Stream::Statuses, Stream::Diffs, Stream::Fills];

    /// Directory name under the data root in `--batch-by-block` mode.
    pub fn dir_name(self) -> &'static str {
        match self {
            Stream::Statuses => "node_order_statuses_by_block",
            Stream::Diffs => "node_raw_book_diffs_by_block",
            Stream::Fills => "node_fills_by_block",
        }
    }
}

/// Where a line was read, for error reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub file: Arc<str>,
    /// 1-based line number in the file.
    pub line: u64,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One complete line of a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub stream: Stream,
    pub text: String,
    pub origin: Origin,
}

/// What the joiner hands out, strictly in height order.
#[derive(Debug, PartialEq, Eq)]
pub enum Joined {
    /// Both lines of block `height`.
    Block { height: u64, statuses: Line, diffs: Line },
    /// Block `height` is missing from at least one stream and never will arrive; `line` is
    /// the one stream's line of it, if one came (dropped: handed back for its buffer).
    Gap { height: u64, line: Option<Line> },
}

/// The by-height join. Lines at or below the last emitted height are dropped.
#[derive(Debug)]
pub struct Joiner {
    next: u64,
    statuses: BTreeMap<u64, Line>,
    diffs: BTreeMap<u64, Line>,
}

impl Joiner {
    /// A joiner whose first block will be `after + 1` (`after` = snapshot height).
    pub fn new(after: u64) -> Joiner {
        Joiner { next: after + 1, statuses: BTreeMap::new(), diffs: BTreeMap::new() }
    }

    pub fn next_height(&self) -> u64 {
        self.next
    }

    /// Buffers a status or diff line of block `height` (fills are not joined). Returns the
    /// line it does not keep, if any: this one (below the next height, or a fills line) or the
    /// one of the same stream and height it replaces.
    pub fn push(&mut self, height: u64, line: Line) -> Option<Line> {
        if height < self.next {
            return Some(line);
        }
        match line.stream {
            Stream::Statuses => self.statuses.insert(height, line),
            Stream::Diffs => self.diffs.insert(height, line),
            Stream::Fills => Some(line),
        }
    }

    /// The next joined block or gap, if one is decided.
    pub fn pop(&mut self) -> Option<Joined> {
        let h = self.next;
        if self.statuses.contains_key(&h) && self.diffs.contains_key(&h) {
            let statuses = self.statuses.remove(&h)?;
            let diffs = self.diffs.remove(&h)?;
            self.next += 1;
            return Some(Joined::Block { height: h, statuses, diffs });
        }
        let past = |map: &BTreeMap<u64, Line>| map.keys().next().is_some_and(|&k| k > h);
        if past(&self.statuses) || past(&self.diffs) {
            // At most one of the two is there (both would have made a block).
            let line = self.statuses.remove(&h).or_else(|| self.diffs.remove(&h));
            self.next += 1;
            return Some(Joined::Gap { height: h, line });
        }
        None
    }

    /// Lines waiting for their partner.
    pub fn pending(&self) -> usize {
        self.statuses.len() + self.diffs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(stream: Stream, text: &str) -> Line {
        Line { stream, text: text.into(), origin: Origin { file: "f".into(), line: 1 } }
    }

    #[test]
    fn joins_out_of_order_arrivals() {
        let mut j = Joiner::new(10);
        j.push(12, line(Stream::Diffs, "d12"));
        j.push(11, line(Stream::Diffs, "d11"));
        assert_eq!(j.pop(), None);
        j.push(11, line(Stream::Statuses, "s11"));
        assert_eq!(j.push(10, line(Stream::Statuses, "old")).map(|l| l.text), Some("old".into()), "below next");
        assert!(matches!(j.pop(), Some(Joined::Block { height: 11, .. })));
        assert_eq!(j.pop(), None);
        j.push(12, line(Stream::Statuses, "s12"));
        let Some(Joined::Block { statuses, diffs, .. }) = j.pop() else { panic!() };
        assert_eq!((statuses.text.as_str(), diffs.text.as_str()), ("s12", "d12"));
        assert_eq!(j.pending(), 0);
    }

    #[test]
    fn a_stream_past_a_height_means_a_gap() {
        let mut j = Joiner::new(0);
        j.push(1, line(Stream::Statuses, "s1"));
        j.push(2, line(Stream::Diffs, "d2"));
        assert_eq!(j.push(2, line(Stream::Statuses, "s2")), None);
        assert_eq!(j.pop(), Some(Joined::Gap { height: 1, line: Some(line(Stream::Statuses, "s1")) }));
        assert!(matches!(j.pop(), Some(Joined::Block { height: 2, .. })));
        assert_eq!(j.next_height(), 3);
        j.push(4, line(Stream::Diffs, "d4"));
        assert_eq!(j.pop(), Some(Joined::Gap { height: 3, line: None }), "neither stream wrote 3");
    }

    /// Every line pushed comes back exactly once: in a block, a gap, or from `push` (below the
    /// next height, a fills line, or replaced by a later line of its stream and height).
    #[test]
    fn every_line_comes_back_once() {
        let mut j = Joiner::new(0);
        let mut back = Vec::new();
        let pushes = [
            (1, Stream::Statuses, "s1"),
            (1, Stream::Statuses, "s1 again"),
            (1, Stream::Fills, "f1"),
            (2, Stream::Diffs, "d2"),
            (1, Stream::Diffs, "d1"),
            (3, Stream::Statuses, "s3"),
            (2, Stream::Statuses, "s2"),
            (1, Stream::Diffs, "d1 late"),
            (5, Stream::Diffs, "d5"),
            (5, Stream::Statuses, "s5"),
        ];
        for (h, stream, text) in pushes {
            back.extend(j.push(h, line(stream, text)));
            while let Some(joined) = j.pop() {
                match joined {
                    Joined::Block { statuses, diffs, .. } => back.extend([statuses, diffs]),
                    Joined::Gap { line, .. } => back.extend(line),
                }
            }
        }
        let mut texts: Vec<_> = back.iter().map(|l| l.text.as_str()).collect();
        texts.sort_unstable();
        let mut all: Vec<_> = pushes.iter().map(|p| p.2).collect();
        all.sort_unstable();
        assert_eq!(texts, all);
        assert_eq!(j.pending(), 0);
    }
}
