//! The message envelope: a bus message's payload is the upstream Deribit notification frame
//! exactly as the publisher received it (an edge feeds it to its hub as a direct upstream
//! frame, so its clients cannot tell the difference); two NATS headers carry what the
//! frame does not:
//!
//! - `Ticktrade-Publisher`: the publisher's run id, new at every start, so an edge sees a
//!   publisher restart even when the sequence happens to line up;
//! - `Ticktrade-Seq`: the publisher's sequence on that subject (1, 2, 3…), so an edge sees a
//!   lost message on channels without a `change_id` chain (trades, tickers) and on books too.
//!
//! A snapshot reply carries the same two headers: the sequence of the last message the
//! snapshot includes.
//!
//! Owns: the header names and the encoding of their values.
//! Must not: do I/O or look inside the payload.

/// Header naming the publisher run.
pub const PUBLISHER_HEADER: &str = "Ticktrade-Publisher";
/// Header carrying the per-subject sequence.
pub const SEQ_HEADER: &str = "Ticktrade-Seq";

/// Where a message stands in its publisher's stream of one subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The publisher's run id.
    pub publisher: u64,
    /// The sequence on this subject, from 1 (0: a snapshot taken before anything was published).
    pub seq: u64,
}

/// Why a message's headers are not an envelope.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    #[error("header {0} missing")]
    Missing(&'static str),
    #[error("header {name} is not a decimal u64 ({value:?})")]
    NotANumber { name: &'static str, value: String },
}

impl Envelope {
    /// The header values, as `(name, value)`.
    pub fn headers(&self) -> [(&'static str, String); 2] {
        [(PUBLISHER_HEADER, self.publisher.to_string()), (SEQ_HEADER, self.seq.to_string())]
    }

    /// Decodes the envelope from header values looked up by name.
    pub fn decode<'a>(header: impl Fn(&str) -> Option<&'a str>) -> Result<Envelope, EnvelopeError> {
        let number = |name: &'static str| {
            let value = header(name).ok_or(EnvelopeError::Missing(name))?;
            value.trim().parse::<u64>().map_err(|_| EnvelopeError::NotANumber { name, value: value.to_owned() })
        };
        Ok(Envelope { publisher: number(PUBLISHER_HEADER)?, seq: number(SEQ_HEADER)? })
    }

    /// The envelope of a NATS message's headers; `None` without headers or with bad ones.
    pub fn from_headers(headers: Option<&async_nats::HeaderMap>) -> Option<Envelope> {
        let headers = headers?;
        Envelope::decode(|name| headers.get(name).map(AsRef::as_ref)).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lookup<'a>(pairs: &'a [(&'static str, String)]) -> impl Fn(&str) -> Option<&'a str> {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn missing_or_bad_headers_are_errors() {
        let none: [(&'static str, String); 0] = [];
        assert_eq!(Envelope::decode(lookup(&none)), Err(EnvelopeError::Missing(PUBLISHER_HEADER)));
        let only = [(PUBLISHER_HEADER, "7".to_owned())];
        assert_eq!(Envelope::decode(lookup(&only)), Err(EnvelopeError::Missing(SEQ_HEADER)));
        let bad = [(PUBLISHER_HEADER, "7".to_owned()), (SEQ_HEADER, "-1".to_owned())];
        assert_eq!(
            Envelope::decode(lookup(&bad)),
            Err(EnvelopeError::NotANumber { name: SEQ_HEADER, value: "-1".to_owned() })
        );
    }

    #[test]
    fn a_messages_headers_give_its_envelope() {
        assert_eq!(Envelope::from_headers(None), None);
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(PUBLISHER_HEADER, "7");
        assert_eq!(Envelope::from_headers(Some(&headers)), None, "no sequence");
        headers.insert(SEQ_HEADER, "12");
        assert_eq!(Envelope::from_headers(Some(&headers)), Some(Envelope { publisher: 7, seq: 12 }));
    }

    proptest! {
        #[test]
        fn headers_round_trip(publisher in any::<u64>(), seq in any::<u64>()) {
            let env = Envelope { publisher, seq };
            let headers = env.headers();
            prop_assert_eq!(Envelope::decode(lookup(&headers)), Ok(env));
        }
    }
}
