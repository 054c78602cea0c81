//! `Acker`: a minimal in-process venue on 127.0.0.1 that acknowledges every request at once
//! with Deribit's response envelope, including `usIn` (request read) and `usOut` (response
//! about to be written), so `ticktrade bench order` can split a round trip into client →
//! venue, inside the venue, and venue → client. It matches nothing: the order is echoed as
//! `open`. Used until the simulator (`ticktrade_sim`) serves private methods on loopback.
//!
//! Owns: the listening socket, one connection, the system-clock reads for `usIn`/`usOut`.
//! Must not: pretend to be an exchange beyond the envelope (no book, no fills).

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use ticktrade_deribit_proto::envelope::{ServerStamps, encode_result};
use ticktrade_deribit_proto::{Id, order::find_label};

use crate::bench::tick_to_trade::exchange::ExchangeError;
use ticktrade_net::frame::{Opcode, Role, WsError, WsWriter};
use ticktrade_net::handshake;

/// A running acker: connect to `addr`, then `join` after closing.
pub struct Acker {
    pub addr: SocketAddr,
    handle: JoinHandle<Result<u64, ExchangeError>>,
}

impl Acker {
    /// Binds 127.0.0.1:0 and serves one connection on a new thread.
    pub fn spawn() -> Result<Acker, ExchangeError> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let handle = std::thread::Builder::new().name("tt-acker".into()).spawn(move || serve(&listener))?;
        Ok(Acker { addr, handle })
    }

    /// Waits for the connection to end; returns the number of requests acknowledged.
    pub fn join(self) -> Result<u64, ExchangeError> {
        self.handle.join().map_err(|_| ExchangeError::Panicked)?
    }
}

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

fn serve(listener: &TcpListener) -> Result<u64, ExchangeError> {
    let (mut stream, _) = listener.accept()?;
    let (_path, mut reader) = handshake::accept(&mut stream)?;
    let mut writer = WsWriter::new(Role::Server, 4096, 1);
    let mut result = Vec::with_capacity(256);
    let mut acked = 0u64;
    loop {
        let mut us_in = now_us();
        while let Some(message) = reader.next_message()? {
            match message.opcode {
                Opcode::Close => {
                    writer.frame_of(Opcode::Close, &[0x03, 0xE8]);
                    let _ = writer.write_to(&mut stream);
                    return Ok(acked);
                }
                Opcode::Text => {}
                _ => continue,
            }
            let id = request_id(message.payload);
            result.clear();
            result.extend_from_slice(br#"{"order":{"order_id":"ACK-"#);
            // Off the measured path (the venue side); `write!` into a Vec cannot fail.
            let _ = write!(result, "{acked}");
            result.extend_from_slice(br#"","order_state":"open","label":"#);
            match find_label(message.payload) {
                Some(label) => {
                    result.push(b'"');
                    label.write(&mut result);
                    result.push(b'"');
                }
                None => result.extend_from_slice(b"\"\""),
            }
            result.extend_from_slice(br#"},"trades":[]}"#);
            let body = writer.begin();
            let text = std::str::from_utf8(&result).unwrap_or("{}");
            let stamps = ServerStamps { us_in, us_out: now_us(), testnet: true };
            encode_result(body, Id::Num(id), text, stamps);
            writer.finish(Opcode::Text);
            writer.write_to(&mut stream)?;
            acked += 1;
            us_in = now_us();
        }
        match reader.fill(&mut stream) {
            Ok(_) => {}
            Err(WsError::Eof | WsError::Io(_)) => return Ok(acked),
            Err(error) => return Err(error.into()),
        }
    }
}

/// The request's numeric `id` (0 when absent): the first `"id":` member's digits.
fn request_id(frame: &[u8]) -> i64 {
    const KEY: &[u8] = b"\"id\":";
    let Some(at) = frame.windows(KEY.len()).position(|w| w == KEY) else { return 0 };
    frame[at + KEY.len()..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0i64, |v, &b| v.saturating_mul(10).saturating_add(i64::from(b - b'0')))
}
