//! One-off requests on a short-lived connection of the live session's kind, made before a
//! session starts (the venue's instrument list, to check a configuration against) and by tests
//! and tools that look at an account from the outside.
//!
//! Owns: [`Query`], a blocking JSON-RPC client over `ticktrade_net::hot` (ws or wss, the same
//! TLS roots and deadline as the session), and [`fetch_instruments`].
//! Must not: be used on the hot thread, or wait past its deadline.

use std::time::{Duration, Instant};

use ticktrade_core::InstrumentSpec;
use ticktrade_deribit_proto::envelope::encode_request_serde;
use ticktrade_deribit_proto::frame::{Frame, scan_frame};
use ticktrade_deribit_proto::instrument::parse_instruments;
use ticktrade_deribit_proto::requests;
use ticktrade_net::frame::{Opcode, Role, WsError, WsReader, WsWriter};
use ticktrade_net::hot::{HotOptions, HotStream};

use super::session::LiveError;
use crate::venue::Credentials;

/// A blocking JSON-RPC connection for a few requests.
pub struct Query {
    stream: HotStream,
    reader: WsReader,
    writer: WsWriter,
    next_id: u64,
    deadline: Duration,
    url: String,
}

impl Query {
    /// Connects within `options.deadline`; each later call must be answered within it too.
    pub fn connect(url: &str, options: &HotOptions) -> Result<Query, LiveError> {
        let (stream, reader) = ticktrade_net::hot::connect(url, options)
            .map_err(|source| LiveError::Connect { url: url.to_owned(), source })?;
        stream
            .tcp()
            .set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| LiveError::Setup(format!("setting the read timeout: {e}")))?;
        Ok(Query {
            stream,
            reader,
            writer: WsWriter::new(Role::Client, 1024, 0x2545_F491),
            next_id: 1,
            deadline: options.deadline,
            url: url.to_owned(),
        })
    }

    /// Authenticates with `client_credentials` (this connection only).
    pub fn auth(&mut self, credentials: &Credentials) -> Result<(), LiveError> {
        let secret = &credentials.client_secret;
        self.call_with(|out, id| requests::auth_client_credentials(out, id, &credentials.client_id, secret)).map_err(
            |e| match e {
                LiveError::Refused { code, message, .. } => LiveError::Auth { code, message },
                other => other,
            },
        )?;
        Ok(())
    }

    /// Calls `method` with `params` (a JSON object's text) and returns the result's JSON text.
    pub fn call(&mut self, method: &str, params: &str) -> Result<String, LiveError> {
        let params: serde_json::Value = serde_json::from_str(params)
            .map_err(|e| LiveError::Setup(format!("{method}: params are not JSON: {e}")))?;
        // Writing a `Value` into a `Vec` cannot fail.
        self.call_with(|out, id| {
            let _ = encode_request_serde(out, id, method, &params);
        })
    }

    fn call_with(&mut self, encode: impl FnOnce(&mut Vec<u8>, u64)) -> Result<String, LiveError> {
        let id = self.next_id;
        self.next_id += 1;
        encode(self.writer.begin(), id);
        self.writer.finish(Opcode::Text);
        self.writer.write_to(&mut self.stream).map_err(|e| self.lost(e))?;
        let started = Instant::now();
        loop {
            match self.reader.next_message().map_err(|e| LiveError::Setup(format!("{}: {e}", self.url)))? {
                Some(message) if message.opcode == Opcode::Text => match scan_frame(message.payload) {
                    Ok(Frame::Result { id: Some(got), result }) if got == id => {
                        return Ok(String::from_utf8_lossy(result).into_owned());
                    }
                    Ok(Frame::Error { id: Some(got), error }) if got == id => {
                        return Err(LiveError::Refused {
                            what: "a request",
                            code: error.code,
                            message: error.message.to_owned(),
                        });
                    }
                    _ => continue,
                },
                Some(_) => continue,
                None => {}
            }
            if started.elapsed() > self.deadline {
                return Err(LiveError::Setup(format!("{}: no answer within {:?}", self.url, self.deadline)));
            }
            match self.reader.fill(&mut self.stream) {
                Ok(_) => {}
                Err(WsError::Io(std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)) => {}
                Err(e) => return Err(self.lost(e)),
            }
        }
    }

    fn lost(&self, error: WsError) -> LiveError {
        LiveError::Setup(format!("{}: connection lost: {error}", self.url))
    }
}

/// Every live instrument the venue lists (all currencies), ids in the venue's order.
pub fn fetch_instruments(url: &str, options: &HotOptions) -> Result<Vec<InstrumentSpec>, LiveError> {
    let mut query = Query::connect(url, options)?;
    let result = query.call("public/get_instruments", r#"{"currency":"any","expired":false}"#)?;
    parse_instruments(&result).map_err(|e| LiveError::Setup(format!("the instrument list of {url}: {e}")))
}
