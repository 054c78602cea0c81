//! The hot loop's blocking connection against the real simulator on loopback, over `wss://`
//! (its generated certificate as the private root) and `ws://`: the handshake, a JSON-RPC
//! `public/test` exchange, each connect failure with its own error, and the allocations per
//! round trip (counted on this thread by `CountingAlloc`; the simulator's threads are not).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

use std::time::{Duration, Instant};

use ticktrade_net::frame::{Opcode, Role, WsReader, WsWriter};
use ticktrade_net::hot::{self, ConnectError, HotOptions, HotStream, Step, TlsRoots};
use ticktrade_sim::{RateLimits, SimConfig, SimHandle, TlsSource};

#[global_allocator]
static ALLOC: ticktrade_testkit::CountingAlloc = ticktrade_testkit::CountingAlloc::new();

/// Allocations rustls 0.23's buffered client makes per round trip (one request record
/// encrypted, one response record decrypted), measured by `tls_allocations_per_round_trip`.
const MAX_TLS_ALLOCS_PER_ROUND_TRIP: usize = 2;
const ROUND_TRIPS: usize = 2_000;

fn sim(tls: bool) -> (tokio::runtime::Runtime, SimHandle) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    // No credit limits: the allocation test sends requests back to back.
    let config = SimConfig {
        tls: tls.then_some(TlsSource::SelfSigned),
        limits: RateLimits::unlimited(),
        ..SimConfig::default()
    };
    let sim = runtime.block_on(ticktrade_sim::spawn_loopback(config)).unwrap();
    (runtime, sim)
}

/// The simulator's certificate written where a `--ca-cert` option would read it.
fn root_file(sim: &SimHandle, name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("ticktrade-hot-tls-{}-{name}.pem", std::process::id()));
    std::fs::write(&path, sim.certificate_pem().unwrap()).unwrap();
    path
}

/// Sends `public/test` with `id` and reads until its response; returns the response's length.
fn public_test(
    stream: &mut HotStream,
    reader: &mut WsReader,
    writer: &mut WsWriter,
    request: &[u8],
    id: &[u8],
) -> usize {
    writer.frame_of(Opcode::Text, request);
    writer.write_to(stream).unwrap();
    loop {
        while let Some(message) = reader.next_message().unwrap() {
            if message.opcode == Opcode::Text && contains(message.payload, id) {
                return message.payload.len();
            }
        }
        reader.fill(stream).unwrap();
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

const TEST_REQUEST: &[u8] = br#"{"jsonrpc":"2.0","id":7,"method":"public/test","params":{}}"#;

#[test]
fn wss_with_the_sims_certificate_as_root_exchanges_public_test() {
    let (_runtime, sim) = sim(true);
    let roots = root_file(&sim, "ok");
    let url = format!("wss://localhost:{}/ws/api/v2", sim.addr().port());
    let options = HotOptions { roots: TlsRoots::File(roots.clone()), ..HotOptions::default() };
    let (mut stream, mut reader) = hot::connect(&url, &options).unwrap();
    assert!(stream.is_tls());
    let mut writer = WsWriter::new(Role::Client, 1024, 5);
    writer.frame_of(Opcode::Text, TEST_REQUEST);
    writer.write_to(&mut stream).unwrap();
    let text = loop {
        if let Some(message) = reader.next_message().unwrap() {
            break String::from_utf8(message.payload.to_vec()).unwrap();
        }
        reader.fill(&mut stream).unwrap();
    };
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["id"], 7, "{text}");
    assert!(value["result"]["version"].is_string(), "{text}");
    std::fs::remove_file(roots).unwrap();
}

#[test]
fn wss_without_the_root_fails_with_an_unknown_issuer() {
    let (_runtime, sim) = sim(true);
    let url = format!("wss://localhost:{}/ws/api/v2", sim.addr().port());
    let err = hot::connect(&url, &HotOptions::default()).unwrap_err();
    assert_eq!(err.step(), Some(Step::Tls), "{err}");
    assert!(err.to_string().contains("UnknownIssuer"), "{err}");
}

#[test]
fn a_refused_port_and_an_unresolvable_host_fail_quickly_with_their_own_errors() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let started = Instant::now();
    let err = hot::connect(&format!("ws://127.0.0.1:{port}/ws/api/v2"), &HotOptions::default()).unwrap_err();
    assert!(matches!(err, ConnectError::Refused { .. }), "{err}");
    assert!(err.to_string().contains("refused"), "{err}");

    // `.invalid` never resolves (RFC 2606); without a resolver the lookup fails or times out,
    // named as DNS either way.
    let options = HotOptions { deadline: Duration::from_secs(3), ..HotOptions::default() };
    let err = hot::connect("wss://venue.invalid/ws/api/v2", &options).unwrap_err();
    assert_eq!(err.step(), Some(Step::Dns), "{err}");
    assert!(err.to_string().contains("DNS"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
}

#[test]
fn a_refused_upgrade_names_its_status_line() {
    let (_runtime, sim) = sim(false);
    let url = format!("ws://127.0.0.1:{}/no/such/path", sim.addr().port());
    let err = hot::connect(&url, &HotOptions::default()).unwrap_err();
    assert_eq!(err.step(), Some(Step::Upgrade), "{err}");
    assert!(err.to_string().contains("HTTP/1.1 4"), "{err}");
}

/// Round trips of `public/test` after a warm-up; returns allocations per round trip on this
/// thread (the framer's and the TLS library's; the simulator runs on other threads).
fn allocations_per_round_trip(tls: bool) -> f64 {
    let (_runtime, sim) = sim(tls);
    let roots = tls.then(|| root_file(&sim, "alloc"));
    let scheme = if tls { "wss" } else { "ws" };
    let url = format!("{scheme}://localhost:{}/ws/api/v2", sim.addr().port());
    let roots_option = roots.clone().map_or(TlsRoots::Webpki, TlsRoots::File);
    let options = HotOptions { roots: roots_option, ..HotOptions::default() };
    let (mut stream, mut reader) = hot::connect(&url, &options).unwrap();
    let mut writer = WsWriter::new(Role::Client, 1024, 9);
    for _ in 0..100 {
        public_test(&mut stream, &mut reader, &mut writer, TEST_REQUEST, br#""id":7"#);
    }
    let (total, count) = ALLOC.measure(|| {
        (0..ROUND_TRIPS)
            .map(|_| public_test(&mut stream, &mut reader, &mut writer, TEST_REQUEST, br#""id":7"#))
            .sum::<usize>()
    });
    assert!(total > 0);
    if let Some(roots) = roots {
        std::fs::remove_file(roots).unwrap();
    }
    count.n_allocs as f64 / ROUND_TRIPS as f64
}

#[test]
fn plain_round_trips_allocate_nothing() {
    assert_eq!(allocations_per_round_trip(false), 0.0);
}

#[test]
fn tls_allocations_per_round_trip_are_rustls_own() {
    let per_round_trip = allocations_per_round_trip(true);
    println!("allocations per round trip over TLS: {per_round_trip}");
    assert!(per_round_trip <= MAX_TLS_ALLOCS_PER_ROUND_TRIP as f64, "{per_round_trip} per round trip");
}

/// Busy polling: reads return `WouldBlock` instead of waiting, and a write still hands every
/// byte to the kernel before returning, over TLS as over plain TCP. 200 requests of 30 KiB
/// (under the venue's 32 KiB limit; 6 MiB in all, more than the socket takes before the venue
/// has read some) go out in a burst, and every answer comes back.
fn busy_round_trips(tls: bool) {
    let (_runtime, sim) = sim(tls);
    let roots = tls.then(|| root_file(&sim, "busy"));
    let scheme = if tls { "wss" } else { "ws" };
    let url = format!("{scheme}://localhost:{}/ws/api/v2", sim.addr().port());
    let options = HotOptions { roots: roots.clone().map_or(TlsRoots::Webpki, TlsRoots::File), ..HotOptions::default() };
    let (mut stream, mut reader) = hot::connect(&url, &options).unwrap();
    stream.set_busy_poll(true).unwrap();
    assert!(stream.is_busy_poll());
    let mut writer = WsWriter::new(Role::Client, 1 << 20, 11);
    let padding = "x".repeat(30 * 1024);
    const BURST: u64 = 200;
    for id in 0..BURST {
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"public/test","params":{{"pad":"{padding}"}}}}"#);
        writer.frame_of(Opcode::Text, request.as_bytes());
        writer.write_to(&mut stream).unwrap();
    }
    let (mut answered, mut would_block) = (0u64, 0u64);
    let deadline = Instant::now() + Duration::from_secs(20);
    while answered < BURST {
        assert!(Instant::now() < deadline, "{answered} of {BURST} answers");
        while let Some(message) = reader.next_message().unwrap() {
            let value: serde_json::Value = serde_json::from_slice(message.payload).unwrap();
            assert_eq!(value["id"], answered, "answers in order: {value}");
            answered += 1;
        }
        match reader.fill(&mut stream) {
            Ok(_) => {}
            Err(ticktrade_net::frame::WsError::Io(std::io::ErrorKind::WouldBlock)) => would_block += 1,
            Err(e) => panic!("read failed: {e}"),
        }
    }
    assert!(would_block > 0, "a busy read never returned WouldBlock");
    if let Some(roots) = roots {
        std::fs::remove_file(roots).unwrap();
    }
}

#[test]
fn busy_polling_reads_never_wait_and_writes_complete_plain() {
    busy_round_trips(false);
}

#[test]
fn busy_polling_reads_never_wait_and_writes_complete_over_tls() {
    busy_round_trips(true);
}

/// A venue that accepts one connection (over TLS with a fresh self-signed certificate, or
/// plain), completes the upgrade, reads nothing for `stall`, then reads to the end. Returns
/// the port, the root to trust, and the bytes it read after the upgrade.
fn stalling_venue(tls: bool, stall: Duration) -> (u16, std::path::PathBuf, std::thread::JoinHandle<Vec<u8>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let root = std::env::temp_dir().join(format!("ticktrade-hot-stall-{}-{tls}.pem", std::process::id()));
    std::fs::write(&root, certified.cert.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let config =
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![certified.cert.der().clone()], key)
            .unwrap();
    let handle = std::thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        let mut read = Vec::new();
        let mut drain = |stream: &mut dyn std::io::Read| {
            std::thread::sleep(stall);
            // The client closes when it is done writing.
            let _ = stream.read_to_end(&mut read);
        };
        if tls {
            let conn = rustls::ServerConnection::new(std::sync::Arc::new(config)).unwrap();
            let mut stream = rustls::StreamOwned::new(conn, tcp);
            ticktrade_net::handshake::server(&mut stream).unwrap();
            drain(&mut stream);
        } else {
            let mut stream = tcp;
            ticktrade_net::handshake::server(&mut stream).unwrap();
            drain(&mut stream);
        }
        read
    });
    (port, root, handle)
}

/// A busy-polling write larger than the socket buffers while the venue is not reading: it
/// spins until the venue drains, and every byte arrives in order, over TLS and plain.
fn busy_write_outlasts_a_full_socket(tls: bool) {
    use std::io::Write as _;
    let stall = Duration::from_millis(300);
    let (port, root, venue) = stalling_venue(tls, stall);
    let scheme = if tls { "wss" } else { "ws" };
    let options = HotOptions { roots: TlsRoots::File(root.clone()), ..HotOptions::default() };
    let (mut stream, _reader) = hot::connect(&format!("{scheme}://localhost:{port}/ws"), &options).unwrap();
    stream.set_busy_poll(true).unwrap();
    let sent: Vec<u8> = (0..32u32 << 20).map(|i| (i % 251) as u8).collect();
    let started = Instant::now();
    stream.write_all(&sent).unwrap();
    stream.flush().unwrap();
    let took = started.elapsed();
    stream.tcp().shutdown(std::net::Shutdown::Write).unwrap();
    let read = venue.join().unwrap();
    std::fs::remove_file(root).unwrap();
    assert!(took >= stall / 2, "32 MiB went into the socket in {took:?} while nobody read");
    assert_eq!(read.len(), sent.len());
    assert!(read == sent, "bytes arrived out of order or changed");
}

#[test]
fn a_busy_write_waits_out_a_full_socket_plain() {
    busy_write_outlasts_a_full_socket(false);
}

#[test]
fn a_busy_write_waits_out_a_full_socket_over_tls() {
    busy_write_outlasts_a_full_socket(true);
}
