//! The plain way to send an order and wait for its ack, measured in the same run as
//! `OrderClient`: a tokio current-thread runtime, tokio-tungstenite (`TCP_NODELAY` on), a
//! `format!`-built request, the ack parsed into a `serde_json::Value`.
//!
//! Owns: that client and its stamps (the same TSC clock as the hot side).
//! Must not: share any of ticktrade's fast paths.

use std::time::Duration;

use super::acker::Acker;
use anyhow::{Context, anyhow, bail};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use ticktrade_core::{Clock, Price};
use ticktrade_gateway::hot::feed::btc_perpetual;
use ticktrade_latency::{RawTicks, TscClock};
use tokio_tungstenite::tungstenite::Message;

use super::OrderResult;

pub(crate) fn run(clock: &TscClock, gap: Duration, orders: u64) -> anyhow::Result<OrderResult> {
    let acker = Acker::spawn()?;
    let url = format!("ws://{}/ws/api/v2", acker.addr);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let task_clock = clock.clone();
    let result = runtime.block_on(async move {
        tokio::spawn(client(url, task_clock, gap, orders)).await.map_err(|e| anyhow!("baseline task: {e}"))?
    })?;
    acker.join()?;
    Ok(result)
}

async fn client(url: String, clock: TscClock, gap: Duration, orders: u64) -> anyhow::Result<OrderResult> {
    let (mut ws, _) =
        tokio_tungstenite::connect_async_with_config(url.as_str(), None, true).await.context("baseline connect")?;
    let anchor_mono = clock.mono().0 as i64;
    let anchor_utc = clock.utc().0;
    let utc_of = |raw: RawTicks| anchor_utc + (clock.to_mono(raw).0 as i64 - anchor_mono);
    let spec = btc_perpetual().map_err(|e| anyhow!("spec: {e}"))?;
    let warm = 1_000u64;
    // Raw stamps, turned into histograms after the run (as the hot side does).
    let mut samples = Vec::with_capacity(usize::try_from(orders).context("orders")?);
    for i in 0..orders + warm {
        if !gap.is_zero() {
            std::thread::sleep(gap);
        }
        let called = clock.raw();
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"private/buy","params":{{"instrument_name":"BTC-PERPETUAL","amount":10,"type":"limit","price":{},"label":"tt.{}.{}","post_only":true}}}}"#,
            i + 1,
            spec.format_price(Price::from_raw(120_000 + (i % 64) as i64)),
            anchor_utc,
            i
        );
        let encoded = clock.raw();
        ws.send(Message::text(request)).await.context("baseline send")?;
        let written = clock.raw();
        let (ack, received) = loop {
            let message = ws.next().await.ok_or_else(|| anyhow!("acker closed"))?.context("baseline read")?;
            let received = clock.raw();
            if let Message::Text(text) = message {
                let value: Value = serde_json::from_str(text.as_str()).context("ack JSON")?;
                break (value, received);
            }
        };
        if ack["id"].as_u64() != Some(i + 1) {
            bail!("baseline ack {ack} does not answer order {}", i + 1);
        }
        if i < warm {
            continue;
        }
        samples.push((called, encoded, written, received, ack["usIn"].as_u64(), ack["usOut"].as_u64()));
    }
    ws.close(None).await.ok();
    let mut result = OrderResult::default();
    for (called, encoded, written, received, us_in, us_out) in samples {
        result.call_to_encoded.record(clock.nanos_between(called, encoded));
        result.call_to_write.record(clock.nanos_between(called, written));
        result.round_trip.record(clock.nanos_between(written, received));
        result.call_to_ack.record(clock.nanos_between(called, received));
        result.record_split(utc_of(written), utc_of(received), us_in, us_out);
    }
    Ok(result)
}
