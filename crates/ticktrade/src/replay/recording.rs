//! Reading a recorded Deribit WebSocket session into the frames the client received.
//!
//! Owns: the two recording formats of `testdata/deribit/market_data/cryptofeed/` (ORIGIN.md):
//! cryptofeed's text recording (`<epoch>: <json>` for received frames, `wss://… <- <epoch>:`
//! for sent ones, `wss://… <-> <epoch>` for connects, `https://… -> <epoch>:` for HTTP
//! replies) and `*.frames.jsonl` (`{"t":…,"dir":"server->client"|"client->server","msg":…}`).
//! Must not: decode the frames themselves (that is `ticktrade_deribit_proto`). A line it cannot
//! read becomes a `LineError` and reading goes on.

use serde::Deserialize;
use serde_json::value::RawValue;

/// One frame received by the recorded client, borrowed from the recording.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    /// 1-based line number in the recording.
    pub line: usize,
    pub text: &'a str,
}

/// A line that could not be read or applied.
#[derive(Clone, Debug)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

#[derive(Deserialize)]
struct JsonlLine<'a> {
    #[serde(borrow)]
    dir: &'a str,
    #[serde(borrow)]
    msg: &'a RawValue,
}

/// Every received frame of the recording in order, and the lines that could not be read.
pub fn frames(data: &[u8]) -> (Vec<Frame<'_>>, Vec<LineError>) {
    let mut frames = Vec::new();
    let mut errors = Vec::new();
    for (idx, raw) in data.split(|&b| b == b'\n').enumerate() {
        let line = idx + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Ok(text) = std::str::from_utf8(raw) else {
            errors.push(LineError { line, message: "not UTF-8 text".into() });
            continue;
        };
        match read_line(text) {
            Ok(Some(frame)) => frames.push(Frame { line, text: frame }),
            Ok(None) => {}
            Err(message) => errors.push(LineError { line, message }),
        }
    }
    (frames, errors)
}

/// The received frame on a line, `None` for lines that hold no received frame.
fn read_line(text: &str) -> Result<Option<&str>, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.starts_with("configuration:") {
        return Ok(None);
    }
    if trimmed.starts_with('{') {
        let line: JsonlLine<'_> =
            serde_json::from_str(trimmed).map_err(|e| format!("not a frames.jsonl record: {e}"))?;
        return match line.dir {
            "server->client" => Ok(Some(line.msg.get())),
            "client->server" => Ok(None),
            other => Err(format!("unknown direction {other:?}")),
        };
    }
    if trimmed.starts_with("wss://") || trimmed.starts_with("ws://") {
        // A connect (`<->`) or a frame the client sent (`<-`).
        return if trimmed.contains(" <-> ") || trimmed.contains(" <- ") {
            Ok(None)
        } else {
            Err("unrecognised WebSocket line (expected `<->` or `<-`)".into())
        };
    }
    if trimmed.starts_with("https://") || trimmed.starts_with("http://") {
        return if trimmed.contains(" -> ") { Ok(None) } else { Err("unrecognised HTTP line".into()) };
    }
    let (epoch, json) = trimmed.split_once(": ").ok_or("not a recorded frame (`<epoch>: <json>`)")?;
    let is_epoch = !epoch.is_empty() && epoch.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if !is_epoch || !json.starts_with('{') {
        return Err("not a recorded frame (`<epoch>: <json>`)".into());
    }
    Ok(Some(json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_and_bad_lines() {
        let data = b"configuration: {}\n\
            wss://www.deribit.com/ws/api/v2 <-> 1617644856.5\n\
            wss://www.deribit.com/ws/api/v2 <- 1617644856.8: {\"id\":0}\n\
            1617644856.9: {\"a\":1}\n\
            {\"t\":1.0,\"dir\":\"server->client\",\"msg\":{\"b\":2}}\n\
            {\"t\":1.0,\"dir\":\"client->server\",\"msg\":{\"c\":3}}\n\
            \n\
            garbage\n\
            {\"t\":1.0,\"dir\":\"sideways\",\"msg\":{}}\n\
            \xff\xfe\n";
        let (frames, errors) = frames(data);
        let texts: Vec<_> = frames.iter().map(|f| (f.line, f.text)).collect();
        assert_eq!(texts, [(4, "{\"a\":1}"), (5, "{\"b\":2}")]);
        let lines: Vec<_> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [8, 9, 10]);
    }
}
