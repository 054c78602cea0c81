//! `--tls`: wss:// and https:// with the self-signed certificate generated at start.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use rustls::pki_types::{CertificateDer, ServerName};
use ticktrade_sim::{SimConfig, TlsSource};
use ticktrade_testkit::WsClient;
use ticktrade_testkit::ws::{Connector, Message};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn client_config(cert: &[u8]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(cert.to_vec())).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

#[tokio::test]
async fn wss_and_https_with_a_self_signed_certificate() {
    let sim = ticktrade_sim::spawn_loopback(SimConfig { tls: Some(TlsSource::SelfSigned), ..SimConfig::default() })
        .await
        .unwrap();
    assert!(sim.ws_url().starts_with("wss://"));
    let config = client_config(sim.certificate_der().unwrap());

    let mut client = WsClient::connect_tls(&sim.ws_url(), Connector::Rustls(config.clone())).await;
    let v = client.call("public/test", serde_json::json!({})).await;
    assert_eq!(v["result"]["version"], "1.2.26");
    // Pings are answered.
    let ws = &mut client.ws;
    ws.send(Message::Ping(b"p".to_vec().into())).await.unwrap();
    let pong = loop {
        match ws.next().await {
            Some(Ok(Message::Pong(p))) => break p,
            Some(Ok(_)) => continue,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(&pong[..], b"p");

    let tcp = tokio::net::TcpStream::connect(sim.addr()).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(config);
    let mut tls = connector.connect(ServerName::try_from("127.0.0.1").unwrap(), tcp).await.unwrap();
    tls.write_all(b"GET /api/v2/public/get_time HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = Vec::new();
    let _ = tls.read_to_end(&mut response).await;
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"result\":"), "{text}");
    sim.shutdown().await;
}
