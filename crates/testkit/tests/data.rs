//! The loaders against the real `testdata/`.

use ticktrade_testkit::{
    Direction, deribit_vector, hl_vector, read_testdata, recorded_frame_lines, recorded_frames, testdata, vector_names,
};

const RECORDING: &str = "DERIBIT.ws.30.0__2021-04-17.frames.jsonl";

#[test]
fn testdata_is_the_repository_folder() {
    assert!(testdata("ORIGIN.md").is_file(), "{}", testdata("ORIGIN.md").display());
    assert!(!read_testdata("ORIGIN.md").is_empty());
}

#[test]
fn vectors_load_and_are_listed() {
    let names = vector_names("deribit/examples");
    assert!(names.len() > 100, "{}", names.len());
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted");
    assert!(names.iter().any(|n| n == "INDEX.md"));
    let json = names.iter().find(|n| n.ends_with(".json")).unwrap();
    let bytes = deribit_vector(json);
    assert!(bytes.starts_with(b"{") || bytes.starts_with(b"["), "{json}");

    let hl = vector_names("hyperliquid/examples");
    let hl_json = hl.iter().find(|n| n.ends_with(".json")).unwrap();
    assert!(!hl_vector(hl_json).is_empty());
}

#[test]
#[should_panic(expected = "no-such-vector.json")]
fn missing_vector_names_the_path() {
    deribit_vector("no-such-vector.json");
}

#[test]
fn recordings_by_name_or_path_agree() {
    let by_name = recorded_frame_lines(RECORDING);
    let by_path = recorded_frame_lines(&format!("deribit/market_data/cryptofeed/{RECORDING}"));
    assert_eq!(by_name, by_path);
    let n_lines = read_testdata(&format!("deribit/market_data/cryptofeed/{RECORDING}"))
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert_eq!(by_name.len(), n_lines);
    assert_eq!(by_name[0].direction, Direction::ClientToServer);
    assert_eq!(by_name[0].recv_utc_ns, 1_618_677_848_823_514_200);
    assert!(by_name.windows(2).all(|w| w[0].recv_utc_ns <= w[1].recv_utc_ns), "time-ordered");
}

#[test]
fn recorded_frames_are_the_servers_json() {
    let frames = recorded_frames(RECORDING);
    let n_server = recorded_frame_lines(RECORDING).iter().filter(|f| f.direction == Direction::ServerToClient).count();
    assert_eq!(frames.len(), n_server);
    assert!(frames.iter().all(|f| f.starts_with('{') && f.ends_with('}')));
    let n_book_changes = frames.iter().filter(|f| f.contains(r#""type":"change""#)).count();
    assert!(n_book_changes > 0);
}
