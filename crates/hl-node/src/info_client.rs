//! The one outbound call `ticktrade hl` makes: `POST` JSON to the node's info server
//! (`http://localhost:3001/info`) for the start-up snapshot and metadata.
//!
//! Owns: a plain-HTTP/1 request with a timeout. Must not: be called on a timer: each
//! `fileSnapshot` request makes hl-node write a ~300 MB file and stall block processing for
//! seconds (~2.7 s for a ~300 MB snapshot), so `ticktrade hl` asks once, at start.

use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// Why the info server could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum InfoClientError {
    #[error("bad info url {0}")]
    Url(String),
    #[error("request to the info server failed: {0}")]
    Request(String),
    #[error("info server answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("info server did not answer within {0:?}")]
    Timeout(Duration),
}

/// POSTs `body` to `url` and returns the response body of a 2xx answer.
pub async fn post_json(url: &str, body: String, timeout: Duration) -> Result<Vec<u8>, InfoClientError> {
    let uri: hyper::Uri = url.parse().map_err(|_| InfoClientError::Url(url.to_owned()))?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = hyper::Request::post(uri)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| InfoClientError::Request(e.to_string()))?;
    let call = async {
        let response = client.request(request).await.map_err(|e| InfoClientError::Request(e.to_string()))?;
        let status = response.status().as_u16();
        let bytes =
            response.into_body().collect().await.map_err(|e| InfoClientError::Request(e.to_string()))?.to_bytes();
        if !(200..300).contains(&status) {
            return Err(InfoClientError::Status { status, body: String::from_utf8_lossy(&bytes).into_owned() });
        }
        Ok(bytes.to_vec())
    };
    tokio::time::timeout(timeout, call).await.map_err(|_| InfoClientError::Timeout(timeout))?
}
