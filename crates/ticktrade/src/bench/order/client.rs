//! `OrderClient`: sends limit orders on the hot path's own WebSocket (blocking socket, no
//! runtime) and reads their acknowledgements, with the stamps `ticktrade bench order` reports:
//! call → encoded → write returned, and write → ack read, split with the venue's `usIn`/`usOut`.
//!
//! Owns: one connection's socket, reader, writers, order encoders and request ids.
//! Must not: allocate on `send` (the encoder writes into a fixed frame buffer), or interpret an
//! ack beyond its id and timing members (order state is the control plane's).
//!
//! Layout: what `send` reads or writes between its two stamps is this struct's first line and
//! one 1 KiB-aligned block, [`OrderFrame`] (mask state, every constant of the request inline,
//! the frame buffer). The `Vec` encoder and framer stay for the orders the fixed encoder
//! declines (a price or amount beyond `i64` in the instrument's units, an instrument name over
//! ~70 bytes). No pending-request table is written inside the span: `send` returns the id, and
//! the caller matches the ack to it after the write.

use std::io::Write;
use std::net::TcpStream;

use ticktrade_core::InstrumentSpec;
use ticktrade_deribit_proto::order::LimitOrder;
use ticktrade_deribit_proto::{Id, Incoming, classify};
use ticktrade_latency::{RawTicks, TscClock};

use super::frame::OrderFramer;
use ticktrade_net::frame::{Opcode, Role, WsError, WsReader, WsWriter};

/// Stamps of one `send`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendStamps {
    pub id: u64,
    /// When `send` was entered.
    pub called: RawTicks,
    /// When the frame was encoded, masked and ready.
    pub encoded: RawTicks,
    /// When the socket write returned.
    pub written: RawTicks,
}

/// A response read by `wait_ack`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    pub id: Option<i64>,
    pub ok: bool,
    /// When the read that completed the response returned.
    pub received: RawTicks,
    /// The venue's µs-since-epoch stamps: request read, response written.
    pub us_in: Option<u64>,
    pub us_out: Option<u64>,
}

/// Why sending or reading failed.
#[derive(Debug, thiserror::Error)]
pub enum OrderClientError {
    #[error("websocket: {0}")]
    Ws(#[from] WsError),
    #[error("the venue closed the connection")]
    Closed,
}

pub struct OrderClient {
    /// Builds each order; `writer` holds the orders its fixed encoder declines.
    orders: OrderFramer,
    next_id: u64,
    stream: TcpStream,
    clock: TscClock,
    reader: WsReader,
    writer: WsWriter,
    control: WsWriter,
}

impl OrderClient {
    /// A client on a connected WebSocket (`ticktrade_net::handshake::connect`).
    pub fn new(stream: TcpStream, reader: WsReader, spec: &InstrumentSpec, clock: TscClock) -> OrderClient {
        OrderClient {
            orders: OrderFramer::new(spec, 0x2545_F491),
            next_id: 1,
            stream,
            clock,
            reader,
            writer: WsWriter::new(Role::Client, 1024, 0x2545_F491),
            control: WsWriter::new(Role::Client, 256, 0x9E37_79B9),
        }
    }

    /// Encodes `order` with the next id straight into the frame buffer and writes it.
    #[inline]
    pub fn send(&mut self, order: &LimitOrder) -> Result<SendStamps, OrderClientError> {
        let called = self.clock.raw();
        let id = self.next_id;
        self.next_id += 1;
        self.orders.build(id, order, &mut self.writer);
        let encoded = self.clock.raw();
        self.stream.write_all(self.orders.frame(&self.writer)).map_err(WsError::from)?;
        let written = self.clock.raw();
        Ok(SendStamps { id, called, encoded, written })
    }

    /// Writes the last order frame again, unchanged (the `write_floor` measurement); returns
    /// the nanoseconds the write took.
    pub fn rewrite_last(&mut self) -> Result<u64, OrderClientError> {
        let start = self.clock.raw();
        self.stream.write_all(self.orders.frame(&self.writer)).map_err(WsError::from)?;
        Ok(self.clock.nanos_between(start, self.clock.raw()))
    }

    /// Reads until the next JSON-RPC response; answers pings, skips notifications.
    pub fn wait_ack(&mut self) -> Result<Ack, OrderClientError> {
        let mut received = self.clock.raw();
        loop {
            while let Some(message) = self.reader.next_message()? {
                match message.opcode {
                    Opcode::Ping => {
                        self.control.frame_of(Opcode::Pong, message.payload);
                        self.control.write_to(&mut self.stream)?;
                        continue;
                    }
                    Opcode::Close => return Err(OrderClientError::Closed),
                    Opcode::Text => {}
                    _ => continue,
                }
                let Ok(text) = std::str::from_utf8(message.payload) else { continue };
                if let Ok(Incoming::Response(response)) = classify(text) {
                    let id = match response.id {
                        Some(Id::Num(n)) => Some(n),
                        _ => None,
                    };
                    return Ok(Ack {
                        id,
                        ok: response.outcome.is_ok(),
                        received,
                        us_in: response.us_in,
                        us_out: response.us_out,
                    });
                }
            }
            self.reader.fill(&mut self.stream)?;
            received = self.clock.raw();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
#[path = "client_tests.rs"]
mod tests;
