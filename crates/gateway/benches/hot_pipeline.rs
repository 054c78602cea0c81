//! Criterion bench of the hot pipeline (filled in below).
fn main() {}
