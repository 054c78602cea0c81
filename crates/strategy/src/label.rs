//! Short ASCII strings held inline (order labels, venue order ids, trade ids, reject texts),
//! the label generator, and a fixed-capacity index keyed by them.
//!
//! Owns: `Inline<N>`, `Label`, `VenueId`, `TradeId`, `LabelGen` (`<prefix>-<nonce>-<counter>`)
//! and `FixedIndex`, an open-addressing map from an inline key to a slot number whose table is
//! sized once at start-up.
//! Must not: allocate after construction, or truncate silently: a string that does not fit is
//! refused (`None`), so two different venue ids can never collapse into one key.
//!
//! Why a run nonce in every label: the venue keeps labels of earlier runs (open orders survive a
//! restart when cancel-on-disconnect is off), so a counter alone would collide across runs. The
//! session passes a 32-bit nonce it takes once at start (e.g. the start time in seconds); labels stay
//! unique as long as two runs of one account never share a nonce.

use std::fmt;

/// Up to `N` bytes of ASCII, inline, `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Inline<const N: usize> {
    len: u8,
    bytes: [u8; N],
}

/// Our order label, unique on the venue within and across runs.
pub type Label = Inline<32>;
/// The venue's order id (Deribit: `ETH-584849853`, `USDC-104819327443`).
pub type VenueId = Inline<40>;
/// The venue's trade id, the key that makes a duplicate fill harmless.
pub type TradeId = Inline<40>;

impl<const N: usize> Inline<N> {
    pub const EMPTY: Inline<N> = Inline { len: 0, bytes: [0; N] };

    /// `None` when `bytes` is longer than `N` or not printable ASCII.
    pub fn try_from_bytes(bytes: &[u8]) -> Option<Inline<N>> {
        if bytes.len() > N || bytes.len() > usize::from(u8::MAX) || !bytes.iter().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        let mut out = Inline::EMPTY;
        out.bytes[..bytes.len()].copy_from_slice(bytes);
        out.len = bytes.len() as u8;
        Some(out)
    }

    pub fn try_from_str(text: &str) -> Option<Inline<N>> {
        Inline::try_from_bytes(text.as_bytes())
    }

    /// Like `try_from_str`, but keeps the first `N` bytes (for display texts such as a
    /// venue's reject message, never for keys), replacing non-printable bytes with `?`.
    pub fn truncated(text: &str) -> Inline<N> {
        let mut out = Inline::EMPTY;
        let n = text.len().min(N).min(usize::from(u8::MAX));
        for (dst, src) in out.bytes.iter_mut().zip(&text.as_bytes()[..n]) {
            *dst = if src.is_ascii_graphic() || *src == b' ' { *src } else { b'?' };
        }
        out.len = n as u8;
        out
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Always valid: only printable ASCII gets in.
    #[inline]
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn starts_with(&self, prefix: &[u8]) -> bool {
        self.as_bytes().starts_with(prefix)
    }

    /// FxHash over the bytes, eight at a time: the index looks a label up several times per
    /// order (FNV-1a, a byte at a time, was a tenth of a book tick's instructions).
    #[inline]
    fn hash64(&self) -> u64 {
        use std::hash::Hasher;
        let mut hasher = rustc_hash::FxHasher::default();
        hasher.write(self.as_bytes());
        hasher.finish()
    }
}

impl<const N: usize> Default for Inline<N> {
    fn default() -> Self {
        Inline::EMPTY
    }
}

impl<const N: usize> fmt::Debug for Inline<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<const N: usize> fmt::Display for Inline<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Makes `<prefix>-<nonce in hex>-<counter>` labels without allocating.
#[derive(Clone, Debug)]
pub struct LabelGen {
    /// `<prefix>-<nonce>-`, the part every label of this run shares.
    head: Label,
    next: u64,
}

/// Longest prefix accepted: leaves room for an 8-digit nonce, two dashes and a counter.
pub const MAX_PREFIX_LEN: usize = 8;

impl LabelGen {
    /// `None` if `prefix` is empty, longer than [`MAX_PREFIX_LEN`], or not `[A-Za-z0-9_]`.
    pub fn new(prefix: &str, run_nonce: u32) -> Option<LabelGen> {
        if !valid_prefix(prefix) {
            return None;
        }
        let mut head = [0u8; 32];
        let mut n = 0;
        for b in prefix.bytes().chain(std::iter::once(b'-')) {
            head[n] = b;
            n += 1;
        }
        let digits = hex_digits(run_nonce);
        for b in digits.iter().copied().skip_while(|d| *d == b'0').chain(std::iter::once(b'-')) {
            head[n] = b;
            n += 1;
        }
        if run_nonce == 0 {
            // "0" would otherwise be skipped entirely.
            head[n - 1] = b'0';
            head[n] = b'-';
            n += 1;
        }
        Some(LabelGen { head: Label::try_from_bytes(&head[..n])?, next: 1 })
    }

    /// The next label. With the longest prefix and nonce (8 + 8 hex digits) the counter has 14
    /// digits before a label would exceed 32 bytes, far beyond any run; past that `None`,
    /// never a repeat.
    pub fn next_label(&mut self) -> Option<Label> {
        let mut buf = [0u8; 32];
        let head = self.head.as_bytes();
        buf[..head.len()].copy_from_slice(head);
        let mut digits = [0u8; 20];
        let mut value = self.next;
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        let tail = &digits[at..];
        let len = head.len() + tail.len();
        if len > buf.len() {
            return None;
        }
        buf[head.len()..len].copy_from_slice(tail);
        self.next += 1;
        Label::try_from_bytes(&buf[..len])
    }

    /// `<prefix>-`: a venue order carrying it is one of ours (from this run or an earlier one).
    pub fn prefix(&self) -> &[u8] {
        let head = self.head.as_bytes();
        let first_dash = head.iter().position(|b| *b == b'-').unwrap_or(head.len());
        &head[..(first_dash + 1).min(head.len())]
    }
}

/// A label prefix: 1 to [`MAX_PREFIX_LEN`] of `[A-Za-z0-9_]` (no dash, so the prefix ends
/// unambiguously at the first one).
pub fn valid_prefix(prefix: &str) -> bool {
    !prefix.is_empty()
        && prefix.len() <= MAX_PREFIX_LEN
        && prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn hex_digits(value: u32) -> [u8; 8] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 8];
    for (i, d) in out.iter_mut().enumerate() {
        *d = HEX[((value >> (28 - 4 * i)) & 0xf) as usize];
    }
    out
}

/// Open-addressing map `Inline<N>` → `u32`, linear probing with backward-shift deletion, so no
/// tombstones pile up however many keys come and go. The table holds at least twice the
/// capacity it was built for and never grows: `insert` past capacity returns `false`.
#[derive(Clone, Debug)]
pub struct FixedIndex<const N: usize> {
    keys: Vec<Inline<N>>,
    values: Vec<u32>,
    used: Vec<bool>,
    mask: usize,
    len: usize,
    capacity: usize,
}

impl<const N: usize> FixedIndex<N> {
    pub fn with_capacity(capacity: usize) -> FixedIndex<N> {
        let size = (capacity.max(1) * 2).next_power_of_two();
        FixedIndex {
            keys: vec![Inline::EMPTY; size],
            values: vec![0; size],
            used: vec![false; size],
            mask: size - 1,
            len: 0,
            capacity: capacity.max(1),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn find(&self, key: &Inline<N>) -> Result<usize, usize> {
        let mut at = (key.hash64() as usize) & self.mask;
        loop {
            if !self.used[at] {
                return Err(at);
            }
            if self.keys[at] == *key {
                return Ok(at);
            }
            at = (at + 1) & self.mask;
        }
    }

    #[inline]
    pub fn get(&self, key: &Inline<N>) -> Option<u32> {
        self.find(key).ok().map(|at| self.values[at])
    }

    /// Inserts or overwrites; `false` if the key is new and the index is full.
    pub fn insert(&mut self, key: Inline<N>, value: u32) -> bool {
        match self.find(&key) {
            Ok(at) => {
                self.values[at] = value;
                true
            }
            Err(_) if self.len >= self.capacity => false,
            Err(at) => {
                self.used[at] = true;
                self.keys[at] = key;
                self.values[at] = value;
                self.len += 1;
                true
            }
        }
    }

    pub fn remove(&mut self, key: &Inline<N>) -> Option<u32> {
        let mut hole = self.find(key).ok()?;
        let value = self.values[hole];
        self.used[hole] = false;
        self.len -= 1;
        // Backward shift: pull later entries of the probe run into the hole when their home
        // slot is at or before it, so lookups never stop early at a gap.
        let mut at = (hole + 1) & self.mask;
        while self.used[at] {
            let home = (self.keys[at].hash64() as usize) & self.mask;
            let dist_at = at.wrapping_sub(home) & self.mask;
            let dist_hole = hole.wrapping_sub(home) & self.mask;
            if dist_hole <= dist_at {
                self.keys[hole] = self.keys[at];
                self.values[hole] = self.values[at];
                self.used[hole] = true;
                self.used[at] = false;
                hole = at;
            }
            at = (at + 1) & self.mask;
        }
        Some(value)
    }
}

/// The last `capacity` trade ids seen, for dropping duplicate fills. Oldest forgotten first.
#[derive(Clone, Debug)]
pub struct RecentTrades {
    index: FixedIndex<40>,
    ring: Vec<TradeId>,
    head: usize,
}

impl RecentTrades {
    pub fn with_capacity(capacity: usize) -> RecentTrades {
        let capacity = capacity.max(1);
        RecentTrades { index: FixedIndex::with_capacity(capacity), ring: Vec::with_capacity(capacity), head: 0 }
    }

    /// Records `id`; `false` if it was already among the remembered ones.
    pub fn insert(&mut self, id: TradeId) -> bool {
        if self.index.get(&id).is_some() {
            return false;
        }
        if self.ring.len() < self.ring.capacity() {
            self.ring.push(id);
        } else {
            let old = std::mem::replace(&mut self.ring[self.head], id);
            self.index.remove(&old);
            self.head = (self.head + 1) % self.ring.len();
        }
        self.index.insert(id, 0);
        true
    }

    pub fn contains(&self, id: &TradeId) -> bool {
        self.index.get(id).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn labels_are_prefixed_nonced_and_counted() {
        let mut g = LabelGen::new("tt", 0xbeef).unwrap();
        assert_eq!(g.next_label().unwrap().as_str(), "tt-beef-1");
        assert_eq!(g.next_label().unwrap().as_str(), "tt-beef-2");
        assert_eq!(g.prefix(), b"tt-");
        let mut z = LabelGen::new("q", 0).unwrap();
        assert_eq!(z.next_label().unwrap().as_str(), "q-0-1");
        let mut big = LabelGen::new("abcdefgh", u32::MAX).unwrap();
        let label = big.next_label().unwrap();
        assert_eq!(label.as_str(), "abcdefgh-ffffffff-1");
        big.next = 99_999_999_999_999;
        assert_eq!(big.next_label().unwrap().as_str().len(), 32);
        assert_eq!(big.next_label(), None, "a label that does not fit is refused, not cut");
        assert!(LabelGen::new("", 1).is_none());
        assert!(LabelGen::new("a-b", 1).is_none());
        assert!(LabelGen::new("toolongpx", 1).is_none());
    }

    #[test]
    fn inline_refuses_what_does_not_fit() {
        assert!(Label::try_from_str(&"x".repeat(33)).is_none());
        assert!(Label::try_from_str("a b").is_none());
        assert_eq!(Inline::<4>::truncated("abcdef").as_str(), "abcd");
        assert_eq!(Inline::<8>::truncated("a\nb").as_str(), "a?b");
    }

    #[test]
    fn recent_trades_forget_the_oldest() {
        let mut seen = RecentTrades::with_capacity(2);
        let id = |s: &str| TradeId::try_from_str(s).unwrap();
        assert!(seen.insert(id("a")));
        assert!(!seen.insert(id("a")));
        assert!(seen.insert(id("b")));
        assert!(seen.insert(id("c")));
        assert!(!seen.contains(&id("a")));
        assert!(seen.contains(&id("b")) && seen.contains(&id("c")));
    }

    proptest! {
        #[test]
        fn fixed_index_matches_hashmap(ops in prop::collection::vec((0u8..3, 0u8..40, any::<u32>()), 0..400)) {
            let mut index = FixedIndex::<8>::with_capacity(24);
            let mut model: HashMap<u8, u32> = HashMap::new();
            for (op, key, value) in ops {
                let k = Inline::<8>::try_from_str(&format!("k{key}")).unwrap();
                match op {
                    0 => {
                        let fits = model.contains_key(&key) || model.len() < 24;
                        prop_assert_eq!(index.insert(k, value), fits);
                        if fits { model.insert(key, value); }
                    }
                    1 => prop_assert_eq!(index.remove(&k), model.remove(&key)),
                    _ => prop_assert_eq!(index.get(&k), model.get(&key).copied()),
                }
                prop_assert_eq!(index.len(), model.len());
            }
            for (key, value) in &model {
                let k = Inline::<8>::try_from_str(&format!("k{key}")).unwrap();
                prop_assert_eq!(index.get(&k), Some(*value));
            }
        }
    }
}
