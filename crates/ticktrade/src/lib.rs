//! The `ticktrade` library: what the binary's subcommands share with programs built on
//! ticktrade.
//!
//! Owns: `run`, the live strategy runner's command line and wiring, generic over the strategy,
//! so that a user's own binary runs its strategy exactly as `ticktrade run` runs the built-in
//! ones (`examples/my-strategy` is the template); `credentials`, loading an API key from the
//! environment or a private file; `status`, the servers' runtime, banner and status ticker;
//! `shell`, the interactive trading shell of `ticktrade trade` (a user interface over the
//! gateway's exchange-agnostic `Venue`); [`error_text`], how a failed command's error is
//! printed.
//! Must not: hold protocol, book or strategy logic (the library crates do), or print a secret.

pub mod credentials;
pub mod run;
pub mod shell;
pub mod status;

/// An error and its causes on one line, each cause once. The library errors show their source
/// in their own message (for callers that print only that) and also return it as their
/// `source()`, so `{:#}` alone would print each cause twice; a cause already contained in the
/// text is skipped.
pub fn error_text(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_text;

    #[derive(Debug, thiserror::Error)]
    #[error("connecting to NATS at {addr}: {source}")]
    struct Connect {
        addr: &'static str,
        source: std::io::Error,
    }

    #[test]
    fn each_cause_is_printed_once() {
        let io = std::io::Error::other("invalid peer certificate: UnknownIssuer");
        let error = anyhow::Error::new(Connect { addr: "tls://127.0.0.1:4222", source: io }).context("starting");
        assert_eq!(
            error_text(&error),
            "starting: connecting to NATS at tls://127.0.0.1:4222: invalid peer certificate: UnknownIssuer"
        );
        // A cause the message does not show is still printed.
        let bare = anyhow::Error::new(std::io::Error::other("refused")).context("binding 127.0.0.1:80");
        assert_eq!(error_text(&bare), "binding 127.0.0.1:80: refused");
    }
}
