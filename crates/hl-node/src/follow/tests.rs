use std::io::Write;

use super::*;

fn append(dir: &Path, key: HourKey, text: &str) {
    let path = hourly_path(dir, Stream::Diffs, key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn texts(lines: &[Line]) -> Vec<&str> {
    lines.iter().map(|l| l.text.as_str()).collect()
}

#[test]
fn partial_lines_and_rollover() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut f = Follower::new(dir, Stream::Diffs);
    let mut out = Vec::new();
    assert_eq!(f.poll(&mut out).unwrap(), 0, "no file yet");
    append(dir, (20260430, 23), "{\"block_number\":1}\n{\"block_nu");
    f.poll(&mut out).unwrap();
    assert_eq!(texts(&out), vec!["{\"block_number\":1}"]);
    append(dir, (20260430, 23), "mber\":2}\n");
    out.clear();
    f.poll(&mut out).unwrap();
    assert_eq!(texts(&out), vec!["{\"block_number\":2}"]);
    assert_eq!(out[0].origin.line, 2);
    // The node finishes the hour and starts the next day's hour 0.
    append(dir, (20260430, 23), "{\"block_number\":3}\n");
    append(dir, (20260501, 0), "{\"block_number\":4}\n");
    out.clear();
    f.poll(&mut out).unwrap();
    assert_eq!(texts(&out), vec!["{\"block_number\":3}", "{\"block_number\":4}"]);
    assert!(out[1].origin.file.ends_with("20260501/0"));
    assert_eq!(out[1].origin.line, 1);
}

#[test]
fn seek_height_picks_the_file_holding_the_next_block() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    append(dir, (20260430, 1), "{\"block_number\":1}\n{\"block_number\":2}\n");
    append(dir, (20260430, 2), "{\"block_number\":3}\n{\"block_number\":4}\n");
    append(dir, (20260430, 10), "{\"block_number\":5}\n");
    let mut f = Follower::new(dir, Stream::Diffs);
    f.seek_height(3).unwrap();
    let mut out = Vec::new();
    f.poll(&mut out).unwrap();
    assert_eq!(texts(&out), vec!["{\"block_number\":3}", "{\"block_number\":4}", "{\"block_number\":5}"]);
    f.seek_height(0).unwrap();
    out.clear();
    f.poll(&mut out).unwrap();
    assert_eq!(out.len(), 5);
    f.seek_end().unwrap();
    out.clear();
    f.poll(&mut out).unwrap();
    assert!(out.is_empty());
    append(dir, (20260430, 10), "{\"block_number\":6}\n");
    f.poll(&mut out).unwrap();
    assert_eq!(texts(&out), vec!["{\"block_number\":6}"]);
    assert_eq!(out[0].origin.line, 2);
}

#[test]
fn find_newline_finds_the_first_newline_at_every_position() {
    for len in [0usize, 1, 63, 64, 65, 127, 128, 200] {
        assert_eq!(find_newline(&vec![b'x'; len]), None, "len {len}");
        for at in 0..len {
            let mut bytes = vec![b'x'; len];
            bytes[at] = b'\n';
            if at + 3 < len {
                bytes[at + 3] = b'\n';
            }
            assert_eq!(find_newline(&bytes), Some(at), "len {len} at {at}");
        }
    }
}

#[test]
fn long_lines_written_in_pieces_come_out_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut f = Follower::new(dir, Stream::Diffs);
    let mut out = Vec::new();
    let long: String = (0..300_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let line = format!("{{\"block_number\":1,\"x\":\"{long}\"}}");
    let (a, b) = line.split_at(100_001);
    append(dir, (20260430, 23), a);
    f.poll_current(&mut out).unwrap();
    assert!(out.is_empty());
    append(dir, (20260430, 23), &format!("{b}\n{{\"block_number\":2}}\n{{\"block_"));
    f.poll_current(&mut out).unwrap();
    assert_eq!(texts(&out), vec![line.as_str(), "{\"block_number\":2}"]);
    append(dir, (20260430, 23), "number\":3}\n");
    out.clear();
    f.poll_current(&mut out).unwrap();
    assert_eq!(texts(&out), vec!["{\"block_number\":3}"]);
    assert_eq!(out[0].origin.line, 3);
}

/// A follower reads at most its limit per call and says when more is waiting; called again
/// while `pending`, it hands out every line once, in order, with true line numbers, across a
/// partial line longer than the limit and across the hourly rollover (the old file is read to
/// its end before the next one is opened).
#[test]
fn bounded_reads_lose_nothing_across_rollover() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let line = |h: u64| format!("{{\"block_number\":{h},\"pad\":\"{}\"}}", "x".repeat((h % 7) as usize * 9));
    let old: String = (1..=40).map(|h| line(h) + "\n").collect();
    let long = format!("{{\"block_number\":41,\"pad\":\"{}\"}}", "y".repeat(500));
    append(dir, (20260430, 23), &old);
    append(dir, (20260430, 23), &format!("{long}\n"));
    append(dir, (20260501, 0), &(42..=60).map(|h| line(h) + "\n").collect::<String>());
    let limit = 128;
    let mut f = Follower::new(dir, Stream::Diffs).read_limit(limit);
    let (mut all, mut calls) = (Vec::new(), 0);
    loop {
        let mut out = Vec::new();
        f.poll(&mut out).unwrap();
        calls += 1;
        let bytes: usize = out.iter().map(|l| l.text.len() + 1).sum();
        // One call hands out at most what it read plus the partial line it held before.
        assert!(bytes <= limit as usize + long.len() + 1, "call {calls}: {bytes} bytes");
        all.extend(out);
        if !f.pending() {
            break;
        }
    }
    assert!(calls > 10, "{calls} calls: the limit did not bound the reads");
    let heights: Vec<u64> = all.iter().map(|l| scan_block_number(&l.text).unwrap()).collect();
    assert_eq!(heights, (1..=60).collect::<Vec<_>>());
    assert_eq!(all[40].text, long);
    assert_eq!((all[40].origin.line, all[41].origin.line), (41, 1));
    assert!(all[41].origin.file.ends_with("20260501/0"));
    // Nothing left: a further call reads nothing and is not pending.
    let mut out = Vec::new();
    assert_eq!(f.poll(&mut out).unwrap(), 0);
    assert!(!f.pending());
}

#[test]
fn watched_reads_only_what_is_written_after_seek_end() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    append(dir, (20260430, 1), "{\"block_number\":1}\n");
    let mut watched = Watched::new(dir, &[Stream::Diffs, Stream::Statuses]);
    watched.seek_end().unwrap();
    append(dir, (20260430, 1), "{\"block_number\":2}\n{\"block_nu");
    let mut out = Vec::new();
    // Woken by the notification, or by the polling fallback: the same lines either way.
    while out.is_empty() {
        watched.wait_lines(std::time::Duration::from_millis(200), &mut out);
    }
    assert_eq!(texts(&out), vec!["{\"block_number\":2}"]);
    // The rest of the partial line and the next hour's file, each read once.
    append(dir, (20260430, 1), "mber\":3}\n");
    append(dir, (20260430, 2), "{\"block_number\":4}\n");
    out.clear();
    while out.len() < 2 {
        watched.wait_lines(std::time::Duration::from_millis(200), &mut out);
    }
    assert_eq!(texts(&out), vec!["{\"block_number\":3}", "{\"block_number\":4}"]);
    watched.wait_lines(std::time::Duration::from_millis(1), &mut out);
    assert_eq!(out.len(), 2, "nothing read twice");
}

/// Lines copied into handed-back buffers are the same text as into fresh ones: across a
/// partial line completed by a later read, a line longer than every kept buffer, invalid UTF-8
/// (replaced as `from_utf8_lossy` does) and empty lines; and a kept buffer is used (no fresh
/// allocation) when the line fits.
#[test]
fn lines_read_into_handed_back_buffers_are_the_same() {
    let long = format!("{{\"block_number\":3,\"x\":\"{}\"}}", "L".repeat(5000));
    let writes: Vec<Vec<u8>> = vec![
        b"{\"block_number\":1,\"pad\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}\n{\"block_number\":2,\"p".to_vec(),
        b"ad\":\"bb\"}\n\n".to_vec(),
        format!("{long}\n{{\"block_number\":4}}\n").into_bytes(),
        b"{\"block_number\":5,\"bad\":\"\xff\xfe\xc3\"}\n{\"block_number\":6,\"ok\":\"\xc3\xa9\"}\n{\"block_nu"
            .to_vec(),
        b"mber\":7}\n".to_vec(),
    ];
    let run = |recycle: bool| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = hourly_path(dir, Stream::Diffs, (20260430, 23));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = Follower::new(dir, Stream::Diffs);
        let (mut all, mut reused) = (Vec::new(), 0);
        for bytes in &writes {
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).unwrap();
            file.write_all(bytes).unwrap();
            let kept: Vec<*const u8> = f.spares.free.iter().map(|s| s.as_ptr()).collect();
            let mut out = Vec::new();
            f.poll_current(&mut out).unwrap();
            reused += out.iter().filter(|l| kept.contains(&l.text.as_ptr())).count();
            for line in out {
                all.push((line.text.clone(), line.origin.line));
                if recycle {
                    f.recycle(line.text);
                }
            }
        }
        (all, reused)
    };
    let (fresh, none) = run(false);
    let (recycled, reused) = run(true);
    assert_eq!(none, 0);
    assert_eq!(recycled, fresh);
    let heights: Vec<_> = fresh.iter().map(|(t, _)| scan_block_number(t).unwrap()).collect();
    assert_eq!(heights, (1..=7).collect::<Vec<_>>(), "the empty line is skipped");
    assert_eq!(fresh[2].0, long);
    assert_eq!(fresh[4].0, "{\"block_number\":5,\"bad\":\"\u{fffd}\u{fffd}\u{fffd}\"}");
    assert_eq!(fresh[5].0, "{\"block_number\":6,\"ok\":\"é\"}");
    assert_eq!(fresh[6].1, 8, "line numbers count the empty line");
    // Lines 2 (into line 1's buffer), 4 (into 3's) and 6 fit a kept buffer; 3 (the long one)
    // and 5 (invalid UTF-8, replaced) do not take one.
    assert!(reused >= 3, "{reused} lines read into a kept buffer");
}

/// At most `SPARES` buffers are kept, the largest ones, none above `SPARE_MAX_BYTES`; a line
/// takes the smallest one it fits in.
#[test]
fn kept_buffers_are_bounded() {
    let mut spares = Spares::default();
    for cap in [10usize, 300, 20, 4000, 50, 7, 600, 0] {
        spares.put(String::with_capacity(cap));
        assert!(spares.free.len() <= SPARES);
    }
    spares.put(String::with_capacity(SPARE_MAX_BYTES + 1));
    let mut caps: Vec<_> = spares.free.iter().map(String::capacity).collect();
    caps.sort_unstable();
    assert_eq!(caps, vec![50, 300, 600, 4000]);
    let mut s = String::with_capacity(100);
    s.push_str("old text");
    spares.put(s);
    assert_eq!(spares.free.len(), SPARES);
    assert!(spares.free.iter().all(String::is_empty), "kept buffers are emptied");
    let line = "x".repeat(250);
    let text = spares.text(&line);
    assert_eq!((text.as_str(), text.capacity()), (line.as_str(), 300), "the smallest that fits");
    let text = spares.text(&"y".repeat(5000));
    assert_eq!(text.len(), 5000, "longer than every kept buffer: a new one");
    assert_eq!(spares.free.len(), SPARES - 1);
}
