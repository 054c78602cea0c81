//! `ticktrade_net::frame` beside tungstenite's synchronous `WebSocket` on the same bytes, in the
//! same run: why the workspace keeps a hand-written framer for the hot path and the fan-out.
//! - `read_book/{unmasked,masked}`: one Deribit book-change notification (the recorded
//!   `book…change.real_probe` vector) per frame, read from an in-memory stream that replays
//!   frames back to back: as a client reads a venue's frames (unmasked) and as a server reads a
//!   client's (masked);
//! - `write_order`: one `private/buy` request (the recorded vector) framed and masked as a client
//!   sends it, written to a sink.
//!
//! Run: `cargo bench -p ticktrade-net --bench framer`.

#![allow(clippy::unwrap_used)] // benches may unwrap, like tests

use std::hint::black_box;
use std::io::{self, Read, Write};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ticktrade_net::frame::{Opcode, Role, WsReader, WsWriter, push_frame};
use tokio_tungstenite::tungstenite::protocol::{Role as TRole, WebSocket, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

const BOOK: &[u8] = include_bytes!(
    "../../../testdata/deribit/examples/book.instrument_name.interval.notification.change.real_probe.json"
);
const ORDER: &str = include_str!("../../../testdata/deribit/examples/private_buy.request.json");
/// Frames in the replayed stream (then it starts again).
const FRAMES: usize = 256;

/// Replays `data` (whole frames) forever; writes go nowhere.
struct Replay {
    data: Vec<u8>,
    at: usize,
}

impl Read for Replay {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.data.len() {
            self.at = 0;
        }
        let n = buf.len().min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Write for Replay {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn replay(mask: Option<[u8; 4]>) -> Replay {
    let mut data = Vec::new();
    for _ in 0..FRAMES {
        push_frame(&mut data, Opcode::Text, mask, BOOK);
    }
    Replay { data, at: 0 }
}

/// tungstenite with the same 64 KiB read buffer as `WsReader` here.
fn tungstenite_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(64 << 10)
}

fn read_book(c: &mut Criterion) {
    let mut group = c.benchmark_group("read_book");
    group.throughput(Throughput::Bytes(BOOK.len() as u64));
    for (name, mask, role, trole) in [
        ("unmasked", None, Role::Client, TRole::Client),
        ("masked", Some([0x37, 0xfa, 0x21, 0x3d]), Role::Server, TRole::Server),
    ] {
        let mut src = replay(mask);
        let mut reader = WsReader::new(role, 64 << 10);
        group.bench_function(format!("{name}/net"), |b| {
            b.iter(|| {
                loop {
                    if let Some(message) = reader.next_message().unwrap() {
                        break black_box(message.payload.len());
                    }
                    reader.fill(&mut src).unwrap();
                }
            })
        });
        let mut ws = WebSocket::from_raw_socket(replay(mask), trole, Some(tungstenite_config()));
        group.bench_function(format!("{name}/tungstenite"), |b| {
            b.iter(|| match ws.read().unwrap() {
                Message::Text(text) => black_box(text.len()),
                other => panic!("unexpected {other:?}"),
            })
        });
    }
    group.finish();
}

fn write_order(c: &mut Criterion) {
    let mut group = c.benchmark_group("write_order");
    group.throughput(Throughput::Bytes(ORDER.len() as u64));
    let mut sink = replay(None);
    let mut writer = WsWriter::new(Role::Client, 1024, 0x1234_5678);
    group.bench_function("net", |b| {
        b.iter(|| {
            writer.begin().extend_from_slice(black_box(ORDER.as_bytes()));
            writer.finish(Opcode::Text);
            writer.write_to(&mut sink).unwrap();
        })
    });
    let mut ws = WebSocket::from_raw_socket(replay(None), TRole::Client, Some(tungstenite_config()));
    let order = Utf8Bytes::from_static(ORDER);
    group.bench_function("tungstenite", |b| b.iter(|| ws.send(Message::Text(black_box(order.clone()))).unwrap()));
    group.finish();
}

criterion_group!(benches, read_book, write_order);
criterion_main!(benches);
