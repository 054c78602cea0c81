//! The in-process venue `bench tick-to-trade` runs the live session against: one thread on
//! 127.0.0.1 (plain or TLS) that answers the session's control requests as Deribit would,
//! sends the book snapshot once the session has reconciled, then publishes the synthetic feed's
//! changes closed-loop (the next tick as soon as the order for the previous one was read) and
//! acknowledges each order with an order result, so the session's order state moves exactly as
//! on a venue. After every `floor_every` ticks it sends a floor probe, which the session answers
//! by writing its last order's bytes again (`write_floor`, the same write in the same run).
//!
//! Owns: the listening socket, one connection, the tick send times and the venue-side
//! histogram (tick written → order read).
//! Must not: match orders (every order rests, acknowledged as sent), or sit on the session's
//! timed path: the acknowledgement goes out after the order was read, and its decode happens
//! on the session between ticks.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::exchange::Pace;
use anyhow::{Context as _, anyhow};
use ticktrade_deribit_proto::api;
use ticktrade_deribit_proto::envelope::{Id, ServerStamps, encode_error, encode_result};
use ticktrade_gateway::hot::FLOOR_PROBE;
use ticktrade_gateway::hot::feed::SyntheticFeed;
use ticktrade_gateway::live::StopHandle;
use ticktrade_latency::{Histogram, TscClock};
use ticktrade_net::frame::{Opcode, Role, WsError, WsReader, WsWriter};
use ticktrade_net::handshake;

/// What the venue measured.
#[derive(Debug, Default)]
pub(crate) struct VenueReport {
    pub(crate) ticks_sent: u64,
    pub(crate) orders: u64,
    /// Ticks after which no order came within the reply timeout.
    pub(crate) unanswered: u64,
    pub(crate) floor_probes: u64,
    pub(crate) tick_to_order: Histogram,
}

/// A running venue: connect the session to `url`, then `join`.
pub(crate) struct Venue {
    pub(crate) url: String,
    /// The certificate to trust (TLS only), PEM.
    pub(crate) cert_pem: Option<String>,
    handle: JoinHandle<anyhow::Result<VenueReport>>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct VenueConfig {
    pub(crate) ticks: usize,
    pub(crate) floor_every: u32,
    pub(crate) reply_timeout: Duration,
    pub(crate) tls: bool,
    /// Before each tick: nothing (`Reply`, closed loop), a `thread::sleep(gap)` or a spin.
    pub(crate) pause: Pace,
    pub(crate) gap: Duration,
}

impl Venue {
    /// `done` is told when every tick has been sent (the session then stops, and the venue
    /// answers its stop sequence until it closes).
    pub(crate) fn spawn(
        feed: Arc<SyntheticFeed>,
        clock: TscClock,
        config: VenueConfig,
        done: StopHandle,
    ) -> anyhow::Result<Venue> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr: SocketAddr = listener.local_addr()?;
        let (tls, cert_pem) = if config.tls {
            let (server, pem) = tls_config()?;
            (Some(server), Some(pem))
        } else {
            (None, None)
        };
        let scheme = if config.tls { "wss" } else { "ws" };
        let handle = std::thread::Builder::new().name("tt-bench-venue".into()).spawn(move || {
            let (tcp, _) = listener.accept()?;
            tcp.set_nodelay(true)?;
            // The upgrade is read blocking; `serve` sets the reply timeout after it.
            let timeouts = tcp.try_clone()?;
            match tls {
                Some(server) => {
                    let connection = rustls::ServerConnection::new(server)?;
                    serve(rustls::StreamOwned::new(connection, tcp), &timeouts, &feed, &clock, config, &done)
                }
                None => serve(tcp, &timeouts, &feed, &clock, config, &done),
            }
        })?;
        Ok(Venue { url: format!("{scheme}://{addr}/ws/api/v2"), cert_pem, handle })
    }

    pub(crate) fn join(self) -> anyhow::Result<VenueReport> {
        self.handle.join().map_err(|_| anyhow!("the bench venue panicked"))?
    }
}

/// A self-signed certificate for 127.0.0.1 and a server config with it.
fn tls_config() -> anyhow::Result<(Arc<rustls::ServerConfig>, String)> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?;
    let pem = certified.cert.pem();
    let key = PrivateKeyDer::try_from(certified.signing_key.serialize_der()).map_err(|e| anyhow!("key: {e}"))?;
    let certs: Vec<CertificateDer<'static>> = vec![certified.cert.der().clone()];
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    Ok((Arc::new(config), pem))
}

/// What the session's last request was, for the loop.
pub(crate) enum Got {
    Order,
    Other,
    Closed,
    TimedOut,
}

struct Conn<S> {
    stream: S,
    reader: WsReader,
    writer: WsWriter,
    answers: Answers,
}

/// The venue's side of the protocol, without I/O: a request's text in, the reply's out. The
/// socket venue and the in-memory pass answer with it.
pub(crate) struct Answers {
    /// label → (order id, direction) of the orders acknowledged so far.
    orders: HashMap<String, (u64, String)>,
    next_order: u64,
    updated_ms: u64,
    /// Set once the session asked for its position (its last reconciliation query).
    pub(crate) reconciled: bool,
}

fn serve<S: Read + Write>(
    mut stream: S,
    timeouts: &std::net::TcpStream,
    feed: &SyntheticFeed,
    clock: &TscClock,
    config: VenueConfig,
    done: &StopHandle,
) -> anyhow::Result<VenueReport> {
    let (_path, reader) = handshake::server(&mut stream).context("WebSocket upgrade")?;
    timeouts.set_read_timeout(Some(config.reply_timeout.max(Duration::from_micros(1))))?;
    let mut conn = Conn { stream, reader, writer: WsWriter::new(Role::Server, 1 << 16, 1), answers: Answers::new() };
    let mut report = VenueReport::default();
    // Sync: answer until the session asked for its position (its last reconciliation query).
    while !conn.answers.reconciled {
        match conn.next_request()? {
            Got::Closed => return Ok(report),
            Got::Order | Got::Other | Got::TimedOut => {}
        }
    }
    conn.send(&feed.snapshot)?;
    // Let the session apply it and go live before the first tick.
    std::thread::sleep(Duration::from_millis(20));
    let n = config.ticks.min(feed.changes.len());
    for (i, frame) in feed.changes[..n].iter().enumerate() {
        match config.pause {
            Pace::Reply => {}
            Pace::Sleep => std::thread::sleep(config.gap),
            Pace::Spin => {
                let start = clock.raw();
                let gap = u64::try_from(config.gap.as_nanos()).unwrap_or(u64::MAX);
                while clock.nanos_between(start, clock.raw()) < gap {
                    std::hint::spin_loop();
                }
            }
        }
        let sent = clock.raw();
        conn.send(frame)?;
        report.ticks_sent += 1;
        loop {
            match conn.next_request()? {
                Got::Order => {
                    report.orders += 1;
                    report.tick_to_order.record(clock.nanos_between(sent, clock.raw()));
                    break;
                }
                Got::Other => continue,
                Got::TimedOut => {
                    report.unanswered += 1;
                    break;
                }
                Got::Closed => return Ok(report),
            }
        }
        if config.floor_every != 0 && (i as u64 + 1).is_multiple_of(u64::from(config.floor_every)) {
            conn.send(FLOOR_PROBE)?;
            report.floor_probes += 1;
            // The session re-sends its last order: read (and drop) that copy.
            let _ = conn.read_text()?;
        }
    }
    // The run is over: keep answering (the session's stop sequence) until it closes.
    done.stop();
    loop {
        match conn.next_request()? {
            Got::Closed => return Ok(report),
            Got::TimedOut => {
                conn.stream.flush()?;
            }
            Got::Order | Got::Other => {}
        }
    }
}

impl<S: Read + Write> Conn<S> {
    fn send(&mut self, payload: &[u8]) -> anyhow::Result<()> {
        self.writer.frame_of(Opcode::Text, payload);
        self.writer.write_to(&mut self.stream)?;
        self.stream.flush()?;
        Ok(())
    }

    /// The next request's text, or why there is none.
    fn read_text(&mut self) -> anyhow::Result<Result<Vec<u8>, Got>> {
        loop {
            if let Some(message) = self.reader.next_message()? {
                match message.opcode {
                    Opcode::Text => return Ok(Ok(message.payload.to_vec())),
                    Opcode::Close => return Ok(Err(Got::Closed)),
                    _ => continue,
                }
            }
            match self.reader.fill(&mut self.stream) {
                Ok(_) => {}
                Err(WsError::Io(std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)) => {
                    return Ok(Err(Got::TimedOut));
                }
                Err(WsError::Eof | WsError::Io(_)) => return Ok(Err(Got::Closed)),
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Reads one request and answers it.
    fn next_request(&mut self) -> anyhow::Result<Got> {
        let text = match self.read_text()? {
            Ok(text) => text,
            Err(got) => return Ok(got),
        };
        let (reply, got) = self.answers.answer(&text)?;
        self.send(reply.as_bytes())?;
        Ok(got)
    }
}

impl Answers {
    pub(crate) fn new() -> Answers {
        Answers { orders: HashMap::new(), next_order: 1, updated_ms: 1, reconciled: false }
    }

    /// The reply to one request, and what kind of request it was.
    pub(crate) fn answer(&mut self, text: &[u8]) -> anyhow::Result<(String, Got)> {
        let request: serde_json::Value = serde_json::from_slice(text)?;
        let id = Id::Num(request["id"].as_i64().unwrap_or(0));
        let stamps = ServerStamps { us_in: self.updated_ms * 1_000, us_out: self.updated_ms * 1_000, testnet: false };
        let method = request["method"].as_str().unwrap_or("");
        let params = &request["params"];
        let (result, got) = match method {
            "public/auth" => (
                serde_json::json!({"access_token": "bench", "refresh_token": "bench", "expires_in": 31_536_000,
                    "scope": "connection trade:read_write", "token_type": "bearer"}),
                Got::Other,
            ),
            "public/set_heartbeat" | "private/enable_cancel_on_disconnect" => (serde_json::json!("ok"), Got::Other),
            "public/test" => (serde_json::json!({"version": "bench"}), Got::Other),
            "private/get_account_summary" => (
                serde_json::json!({"currency": "BTC", "limits": {"non_matching_engine": {"rate": 1_000_000, "burst": 1_000_000},
                    "matching_engine": {"trading": {"total": {"rate": 1_000_000, "burst": 1_000_000}}}}}),
                Got::Other,
            ),
            "public/subscribe" | "private/subscribe" => (params["channels"].clone(), Got::Other),
            "private/get_open_orders_by_instrument" => (serde_json::json!([]), Got::Other),
            "private/get_user_trades_by_instrument" => {
                (serde_json::json!({"trades": [], "has_more": false}), Got::Other)
            }
            "private/get_position" => {
                self.reconciled = true;
                (
                    serde_json::json!({"size": 0, "average_price": 0, "instrument_name": params["instrument_name"]}),
                    Got::Other,
                )
            }
            "private/cancel_all_by_instrument" | "private/cancel_all" => {
                let n = self.orders.len();
                self.orders.clear();
                (serde_json::json!(n), Got::Other)
            }
            "private/buy" | "private/sell" | "private/edit_by_label" => {
                let result = self.acknowledge(method, params)?;
                return Ok((reply(|out| encode_result(out, id, &result, stamps)), Got::Order));
            }
            _ => {
                let error = |out: &mut Vec<u8>| encode_error(out, Some(id), -32601, "Method not found", None, stamps);
                return Ok((reply(error), Got::Other));
            }
        };
        Ok((reply(|out| encode_result(out, id, &result.to_string(), stamps)), got))
    }

    /// An order result: the order rests, as sent. Written as the simulator writes it (the
    /// fields of `api::Order` in their order), so the session decodes it as it would a real
    /// venue's, on the fixed-layout path.
    fn acknowledge(&mut self, method: &str, params: &serde_json::Value) -> anyhow::Result<String> {
        let label = params["label"].as_str().unwrap_or("").to_owned();
        let (order_id, direction) = match method {
            "private/edit_by_label" => self.orders.get(&label).cloned().unwrap_or((0, "buy".to_owned())),
            _ => {
                let id = self.next_order;
                self.next_order += 1;
                let direction = if method == "private/buy" { "buy" } else { "sell" };
                self.orders.insert(label.clone(), (id, direction.to_owned()));
                (id, direction.to_owned())
            }
        };
        self.updated_ms += 1;
        let num = |name: &str| -> anyhow::Result<api::Num> {
            api::Num::parse(&params[name].to_string()).ok_or_else(|| anyhow!("order without a numeric {name}"))
        };
        let order = api::Order {
            order_id: format!("BENCH-{order_id}"),
            instrument_name: params["instrument_name"].as_str().unwrap_or("").to_owned(),
            direction,
            amount: num("amount")?,
            price: num("price")?.into(),
            order_state: "open".into(),
            order_type: "limit".into(),
            time_in_force: "good_til_cancelled".into(),
            post_only: params["post_only"].as_bool().unwrap_or(false),
            label,
            api: true,
            creation_timestamp: self.updated_ms as i64,
            last_update_timestamp: self.updated_ms as i64,
            ..api::Order::default()
        };
        Ok(serde_json::to_string(&api::OrderWithTrades { order, trades: Vec::new() })?)
    }
}

/// One reply frame's text.
fn reply(encode: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::with_capacity(512);
    encode(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use ticktrade_deribit_proto::frame::{Frame, scan_frame};
    use ticktrade_deribit_proto::report::{DecodePath, decode_order_result};

    use super::*;

    /// The session must decode the venue's acknowledgements as it would the simulator's or
    /// Deribit's: on the fixed-layout path, or the benchmark times a decode no venue causes.
    #[test]
    fn acknowledgements_take_the_sessions_fixed_layout_path() {
        let mut answers = Answers::new();
        let request = br#"{"jsonrpc":"2.0","id":9,"method":"private/buy","params":{"instrument_name":"BTC-PERPETUAL","amount":10,"price":64250.5,"label":"tt1-7","post_only":true}}"#;
        let (reply, got) = answers.answer(request).unwrap();
        assert!(matches!(got, Got::Order));
        let Ok(Frame::Result { id: Some(9), result }) = scan_frame(reply.as_bytes()) else { panic!("{reply}") };
        let (order, path) = decode_order_result(result, |_, _| panic!("no trades")).unwrap();
        assert_eq!(path, DecodePath::Fixed, "{reply}");
        assert_eq!((order.label, order.price.map(|p| p.to_string())), ("tt1-7", Some("64250.5".to_owned())));
        assert!(order.post_only);
    }
}
