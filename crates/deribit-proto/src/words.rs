//! Word-at-a-time (SWAR) scans of byte strings for the hand-written decoders and encoders:
//! eight bytes per step with plain integer operations, no `unsafe` and no call into `memchr`
//! or `bcmp` (each call cost more than the short scans these do).
//!
//! Owns: finding a string's end, checking a label needs no escaping, counting the digits that
//! begin a word or end a slice, comparing two slices, loading eight bytes at any offset.
//! Must not: read past a slice or depend on alignment.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The top bit of each byte of `x` that is `"`, `\\` or a control byte, and maybe of bytes after
/// it (SWAR: a byte equal to `c` makes `(x ^ c·0x01…) - 0x01…` borrow into its top bit; the
/// lowest flagged byte is always a true match, because borrows only travel upwards).
#[inline(always)]
fn escape_flags(x: u64) -> u64 {
    let quote = x ^ (ONES * u64::from(b'"'));
    let backslash = x ^ (ONES * u64::from(b'\\'));
    ((quote.wrapping_sub(ONES) & !quote)
        | (backslash.wrapping_sub(ONES) & !backslash)
        | (x.wrapping_sub(ONES * 0x20) & !x))
        & HIGHS
}

/// The index of the first `"`, `\\` or control byte, eight bytes at a time ([`escape_flags`]).
#[inline]
pub(crate) fn string_end(bytes: &[u8]) -> Option<usize> {
    let mut chunks = bytes.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let found = escape_flags(u64::from_le_bytes(word));
        if found != 0 {
            return Some(base + (found.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks.remainder().iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).map(|i| base + i)
}

/// How many of the word's bytes, from the first, are ASCII digits (0–8). A byte `b` is a digit
/// when `b ^ 0x30` is at most 9: its high nibble is then 0 and adding 6 does not carry into it.
/// Carries from a non-digit byte only reach later bytes, so the first non-digit is exact.
#[inline(always)]
pub(crate) fn leading_digits(word: u64) -> usize {
    let t = word ^ (ONES * 0x30);
    let flags = (t | t.wrapping_add(ONES * 6)) & (ONES * 0xF0);
    (flags.trailing_zeros() / 8) as usize
}

/// How many ASCII digits end `bytes`, eight at a time from the end (the stamps at the end of
/// a response, `"usOut":1733270400123456`, are read backwards).
#[inline]
pub(crate) fn digits_before(bytes: &[u8]) -> usize {
    let mut n = 0;
    while n + 8 <= bytes.len() {
        let end = bytes.len() - n;
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[end - 8..end]);
        // Big-endian: the last byte is the lowest, so the word's leading digits are the
        // slice's last ones.
        let k = leading_digits(u64::from_be_bytes(word));
        n += k;
        if k < 8 {
            return n;
        }
    }
    n + bytes[..bytes.len() - n].iter().rev().take_while(|b| b.is_ascii_digit()).count()
}

/// Whether a JSON string body needs no escaping and is ASCII: no `"`, `\\`, control byte or
/// byte of 0x80 and up ([`escape_flags`] with each byte's top bit, in one pass).
#[inline]
pub(crate) fn plain_ascii(bytes: &[u8]) -> bool {
    // A byte of 0x80 and up is flagged by its own top bit.
    let flags = |x: u64| escape_flags(x) | (x & HIGHS);
    let word_at = |at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(word)
    };
    let n = bytes.len();
    if n < 8 {
        let mut word = [b' '; 8];
        word[..n].copy_from_slice(bytes);
        return flags(u64::from_le_bytes(word)) == 0;
    }
    // Whole words, then the last eight bytes (overlapping the one before): any flagged byte
    // is one of the input's, so overlap cannot change the answer.
    let mut any = flags(word_at(n - 8));
    let mut at = 0;
    while at + 8 < n {
        any |= flags(word_at(at));
        at += 8;
    }
    any == 0
}

/// Whether two slices are equal, without a call into `bcmp`: words of eight bytes XORed and
/// ORed together without an early exit, the last word overlapping the one before (four-byte
/// words below eight bytes).
#[inline(always)]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if b.len() != n {
        return false;
    }
    if n < 8 {
        if n < 4 {
            return a.iter().zip(b).all(|(x, y)| x == y);
        }
        let word = |s: &[u8], at: usize| s.get(at..at + 4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        return word(a, 0) == word(b, 0) && word(a, n - 4) == word(b, n - 4);
    }
    let word = |s: &[u8], at: usize| load8(s, at);
    let mut diff = 0u64;
    let mut at = 0;
    while at + 8 <= n {
        diff |= word(a, at) ^ word(b, at);
        at += 8;
    }
    diff |= word(a, n - 8) ^ word(b, n - 8);
    diff == 0
}

/// Eight bytes from `buf[at..]` as a little-endian word (the first byte lowest); past the end
/// the missing bytes read as 0, which is not a digit.
#[inline(always)]
pub(crate) fn load8(buf: &[u8], at: usize) -> u64 {
    match buf.get(at..at + 8) {
        Some(bytes) => {
            let mut word = [0u8; 8];
            word.copy_from_slice(bytes);
            u64::from_le_bytes(word)
        }
        None => load8_tail(buf, at),
    }
}

#[cold]
#[inline(never)]
fn load8_tail(buf: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    let rest = buf.get(at..).unwrap_or(&[]);
    word[..rest.len()].copy_from_slice(rest);
    u64::from_le_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn same_bytes_matches_eq(a in proptest::collection::vec(0u8..3, 0..24), b in proptest::collection::vec(0u8..3, 0..24)) {
            proptest::prop_assert_eq!(same_bytes(&a, &b), a == b);
            proptest::prop_assert!(same_bytes(&a, &a));
        }

        #[test]
        fn string_end_matches_naive(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)) {
            let naive = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
            proptest::prop_assert_eq!(string_end(&bytes), naive);
        }

        #[test]
        fn digits_before_matches_naive(bytes in proptest::collection::vec(
            proptest::prop_oneof![b'0'..=b'9', proptest::prelude::any::<u8>()], 0..40)
        ) {
            let naive = bytes.iter().rev().take_while(|b| b.is_ascii_digit()).count();
            proptest::prop_assert_eq!(digits_before(&bytes), naive);
        }

        #[test]
        fn plain_ascii_matches_naive(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![0x20u8..0x7f, proptest::prelude::any::<u8>()], 0..40)
        ) {
            let naive = bytes.iter().all(|&b| (0x20..0x80).contains(&b) && b != b'"' && b != b'\\');
            proptest::prop_assert_eq!(plain_ascii(&bytes), naive);
        }
    }
}
