//! Books rebuilt from generated hl-node files equal the generator's own books at every block,
//! across an hourly rollover, a restart mid-hour, and damaged lines.

use crate::common;

use common::*;
use ticktrade_hl_node::join::Stream;
use ticktrade_hl_node::synth::writer::GenWriter;

#[test]
fn books_match_the_generator_at_every_block_across_rollover() {
    let tmp = tempfile::tempdir().unwrap();
    let mut generator = generator(40, 400);
    let mut engine = engine(tmp.path(), &generator);
    let mut writer = GenWriter::new(tmp.path());
    for _ in 0..30 {
        write_blocks(&mut generator, &mut writer, 1);
        engine.poll_files();
        assert_eq!(engine.books().height(), generator.height());
        assert_eq!(assert_books_equal(&generator, engine.books(), &[]), 40);
    }
    // 30 blocks 1.5 s apart from 20:59:50 crossed into hour 21 of the same day.
    let hours = ticktrade_hl_node::follow::list_hours(tmp.path(), Stream::Diffs).unwrap();
    assert_eq!(hours, vec![(20260430, 20), (20260430, 21)]);
    assert!(engine.stats().lock().unwrap().reports.is_empty());
}

#[test]
fn restart_mid_hour_from_a_snapshot_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut generator = generator(30, 300);
    let mut writer = GenWriter::new(tmp.path());
    write_blocks(&mut generator, &mut writer, 12);
    // The server restarts from a snapshot taken now, mid-hour, while the node keeps writing.
    let snapshot_generator_height = generator.height();
    let mut engine = engine(tmp.path(), &generator);
    assert_eq!(engine.books().height(), snapshot_generator_height);
    write_blocks(&mut generator, &mut writer, 15);
    engine.poll_files();
    assert_eq!(engine.books().height(), generator.height());
    assert_books_equal(&generator, engine.books(), &[]);
}

#[test]
fn restart_from_an_old_snapshot_replays_the_files() {
    let tmp = tempfile::tempdir().unwrap();
    let mut generator = generator(30, 300);
    let mut writer = GenWriter::new(tmp.path());
    // Snapshot at the start, then 25 blocks across the hour boundary written before the
    // server starts: it must find block start+1 in the older hourly file and replay all.
    let mut engine = engine(tmp.path(), &generator);
    write_blocks(&mut generator, &mut writer, 25);
    engine.poll_files();
    assert_eq!(engine.books().height(), generator.height());
    assert_books_equal(&generator, engine.books(), &[]);
}

#[test]
fn damaged_events_mark_only_their_coin_stale_and_are_reported_with_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let mut generator = generator(20, 300);
    let mut engine = engine(tmp.path(), &generator);
    let mut writer = GenWriter::new(tmp.path());
    write_blocks(&mut generator, &mut writer, 3);
    engine.poll_files();
    // Damage one BTC diff in the next block: its px becomes text that is not a number.
    let mut block = generator.next_block(ticktrade_core::Utc::from_millis(T0_MS + 3 * 1_500));
    let at = block.diffs.find("\"coin\":\"BTC\"").expect("a BTC diff in the block");
    let px = at + block.diffs[at..].find("\"px\":\"").unwrap() + 6;
    block.diffs.insert(px, 'x');
    writer.write_block(&block, order(0)).unwrap();
    write_blocks(&mut generator, &mut writer, 5);
    engine.poll_files();
    assert_eq!(engine.books().height(), generator.height());
    let btc = engine.books().coins.id("BTC").unwrap();
    assert!(engine.books().book(btc).unwrap().stale);
    assert_eq!(assert_books_equal(&generator, engine.books(), &["BTC"]), 19);
    let reports = engine.stats().lock().unwrap().reports.clone();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert!(reports[0].contains("node_raw_book_diffs_by_block/hourly/20260430/20:4"), "{}", reports[0]);
}

#[test]
fn a_truncated_line_is_reported_and_only_its_coins_go_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let mut generator = generator(20, 40);
    let mut engine = engine(tmp.path(), &generator);
    let mut writer = GenWriter::new(tmp.path());
    let block = generator.next_block(ticktrade_core::Utc::from_millis(T0_MS));
    // The statuses line loses its tail (a crash mid-write): JSON no longer parses, but the
    // block number and the coins it named can still be read.
    let cut = block.statuses.len() * 2 / 3;
    let damaged_coins: Vec<String> =
        ticktrade_hl_proto::node::scan_coins(&block.statuses[..cut]).into_iter().map(str::to_owned).collect();
    let key = ticktrade_hl_proto::time::date_hour(block.time);
    writer.write_line(Stream::Statuses, key, &block.statuses.as_bytes()[..cut]).unwrap();
    writer.write_line(Stream::Diffs, key, block.diffs.as_bytes()).unwrap();
    writer.write_line(Stream::Fills, key, block.fills.as_bytes()).unwrap();
    write_blocks(&mut generator, &mut writer, 4);
    engine.poll_files();
    assert_eq!(engine.books().height(), generator.height());
    let skip: Vec<&str> = damaged_coins.iter().map(String::as_str).collect();
    for name in &skip {
        let id = engine.books().coins.id(name).unwrap();
        assert!(engine.books().book(id).unwrap().stale, "{name}");
    }
    assert!(assert_books_equal(&generator, engine.books(), &skip) > 0);
    let reports = engine.stats().lock().unwrap().reports.clone();
    assert!(
        reports.iter().any(|r| r.contains("node_order_statuses_by_block/hourly/20260430/20:1: malformed line")),
        "{reports:?}"
    );
}

#[test]
fn verify_agrees_with_a_later_snapshot_and_finds_a_difference() {
    use ticktrade_hl_node::server::engine::{Engine, EngineConfig};
    use ticktrade_hl_proto::snapshot::Snapshot;
    let tmp = tempfile::tempdir().unwrap();
    let mut generator = generator(20, 300);
    let books = books_from(&generator);
    let mut writer = GenWriter::new(tmp.path());
    write_blocks(&mut generator, &mut writer, 10);
    let later = generator.snapshot_json();
    let stop = generator.height();
    write_blocks(&mut generator, &mut writer, 5);
    let config = EngineConfig { stop_after: Some(stop), ..EngineConfig::default() };
    let height = books.height();
    let mut engine = Engine::new(config, books, followers(tmp.path(), height));
    engine.poll_files();
    let snapshot = Snapshot::parse(later.as_bytes()).unwrap();
    assert_eq!(ticktrade_hl_node::verify::compare(engine.books(), &snapshot, 10), Vec::<String>::new());
    let tampered = later.replacen("\"sz\":\"", "\"sz\":\"9", 1);
    let snapshot = Snapshot::parse(tampered.as_bytes()).unwrap();
    assert_eq!(ticktrade_hl_node::verify::compare(engine.books(), &snapshot, 10).len(), 1);
}
