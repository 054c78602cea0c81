//! The upstream connection: connect (with backoff), pass the hub's requests up and every
//! frame down with its receive instant, reconnect when it drops.
//!
//! Owns: the upstream socket.
//! Must not: interpret frames (the hub does) or block on the hub for anything but queue room.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use ticktrade_net::{Backoff, ConnectOptions, Message, connect_ws};
use tokio::sync::mpsc;

use crate::hub::{HubMsg, UpEvent};

pub(crate) async fn run(url: String, mut requests: mpsc::Receiver<String>, hub: mpsc::Sender<HubMsg>) {
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));
    loop {
        match connect_ws(&url, &ConnectOptions::default()).await {
            Ok(ws) => {
                backoff.reset();
                if hub.send(HubMsg::Upstream(UpEvent::Connected)).await.is_err() {
                    return;
                }
                let (mut sink, mut stream) = ws.split();
                loop {
                    tokio::select! {
                        request = requests.recv() => match request {
                            Some(text) => {
                                if sink.send(Message::text(text)).await.is_err() {
                                    break;
                                }
                            }
                            None => return,
                        },
                        frame = stream.next() => match frame {
                            Some(Ok(Message::Text(text))) => {
                                let event = UpEvent::Frame(text.to_string(), Instant::now());
                                if hub.send(HubMsg::Upstream(event)).await.is_err() {
                                    return;
                                }
                            }
                            Some(Ok(_)) => {}
                            Some(Err(e)) => {
                                tracing::warn!("upstream {url}: {e}");
                                break;
                            }
                            None => break,
                        },
                    }
                }
                if hub.send(HubMsg::Upstream(UpEvent::Disconnected)).await.is_err() {
                    return;
                }
            }
            Err(e) => tracing::warn!("upstream {url}: {e}"),
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}
