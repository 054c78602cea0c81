//! The live web view at `GET /`: a page a trader leaves open (instrument picker, depth chart,
//! price ladder, trades tape, the server's per-client table and fan-out latency histogram).
//!
//! The page talks to the server only over its own WebSocket at `/ws/api/v2`, in Deribit's
//! protocol: `public/get_instruments`, `public/subscribe` to `book.{i}.100ms` (it checks the
//! `prev_change_id` chain and resyncs with a fresh subscribe on a gap) and `trades.{i}.100ms`,
//! and once a second the method this module adds to the API:
//!
//! `public/ticktrade_get_stats` (no params) → `{"client": <the caller's id>, "clients": [{"id",
//! "subscriptions", "queued", "messages", "bytes", "drops", "conflations", "resyncs", "delay_count",
//! "delay_p50_ns", "delay_p99_ns", "delay_p999_ns", "delay_max_ns"}, …], "clients_total",
//! "totals": {"messages", "bytes", "drops", "conflations", "disconnects", "resyncs",
//! "upstream_frames", "upstream_channels"}, "bus" (only when the server publishes to or reads
//! from NATS): {"publisher", "connected" (0/1), "published", "dropped", "publish_errors",
//! "requests", "received", "malformed", "gaps", "resyncs", "slow_consumers", "disconnects"},
//! "fanout": {"count", "p50_ns", "p90_ns", "p99_ns",
//! "p999_ns", "max_ns", "buckets": [[lo_ns, hi_ns, count], …]}}`. Delays are the fan-out delay
//! (upstream frame received → downstream frame written) in integer nanoseconds, since the start;
//! `buckets` are five per decade, `lo_ns` inclusive, `hi_ns` exclusive, empty ones at either
//! end left out. At most [`MAX_CLIENT_ROWS`] clients are listed (the caller first, then by id).
//!
//! Owns: the embedded static assets (`crates/serve/web/`), their routes, the stats JSON.
//! Must not: fetch anything from outside the binary (no CDN), or hold the hub for long (the
//! stats are built from counters and summaries the hub keeps anyway).

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use hdrhistogram::Histogram;

use crate::hub::{ClientId, Hub};

/// Clients listed in one stats reply.
pub(crate) const MAX_CLIENT_ROWS: usize = 200;

const INDEX_HTML: &str = include_str!("../web/index.html");
const APP_JS: &str = include_str!("../web/app.js");
const APP_CSS: &str = include_str!("../web/app.css");
const FAVICON_SVG: &str = include_str!("../web/favicon.svg");

/// One embedded asset: request path, content type, body.
pub(crate) const ASSETS: [(&str, &str, &str); 5] = [
    ("/", "text/html; charset=utf-8", INDEX_HTML),
    ("/assets/app.js", "text/javascript; charset=utf-8", APP_JS),
    ("/assets/app.css", "text/css; charset=utf-8", APP_CSS),
    ("/favicon.svg", "image/svg+xml", FAVICON_SVG),
    ("/favicon.ico", "image/svg+xml", FAVICON_SVG),
];

/// The routes of the page and its assets, to merge into the server's router.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new();
    for (path, content_type, body) in ASSETS {
        router = router.route(
            path,
            get(move || async move {
                ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
            }),
        );
    }
    router
}

/// Five bucket edges per decade, 100 ns to 100 s.
fn bucket_edges() -> Vec<u64> {
    const MANTISSAS: [u64; 5] = [100, 158, 251, 398, 631];
    let mut edges = Vec::with_capacity(45);
    let mut decade = 1u64; // 100 ns × decade
    while decade <= 100_000_000 {
        for m in MANTISSAS {
            edges.push(m * decade);
        }
        decade *= 10;
    }
    edges.push(100 * decade);
    edges
}

/// `[[lo_ns, hi_ns, count], …]` of the recorded delays, without empty buckets at either end.
pub(crate) fn buckets_json(h: &Histogram<u64>, out: &mut String) {
    let edges = bucket_edges();
    let mut counts = vec![0u64; edges.len() - 1];
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        // The bucket whose [lo, hi) holds `value`; below the first edge counts in the first.
        let i = edges.partition_point(|&e| e <= value).saturating_sub(1).min(counts.len() - 1);
        counts[i] += v.count_at_value();
    }
    let first = counts.iter().position(|&c| c > 0);
    let last = counts.iter().rposition(|&c| c > 0);
    out.push('[');
    if let (Some(first), Some(last)) = (first, last) {
        for i in first..=last {
            if i > first {
                out.push(',');
            }
            out.push_str(&format!("[{},{},{}]", edges[i], edges[i + 1], counts[i]));
        }
    }
    out.push(']');
}

/// The bus counters by name, for the stats JSON and `/metrics`.
pub(crate) fn bus_fields(b: &crate::BusCounters) -> [(&'static str, u64); 12] {
    [
        ("publisher", u64::from(b.publisher)),
        ("connected", u64::from(b.connected)),
        ("published", b.published),
        ("dropped", b.dropped),
        ("publish_errors", b.publish_errors),
        ("requests", b.requests),
        ("received", b.received),
        ("malformed", b.malformed),
        ("gaps", b.gaps),
        ("resyncs", b.resyncs),
        ("slow_consumers", b.slow_consumers),
        ("disconnects", b.disconnects),
    ]
}

fn push_field(out: &mut String, name: &str, value: u64) {
    if !out.ends_with('{') {
        out.push(',');
    }
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
    out.push_str(&value.to_string());
}

impl Hub {
    /// Gives the hub the server's shared counters, for the fan-out histogram in the stats.
    pub(crate) fn with_shared(mut self, shared: std::sync::Arc<crate::Shared>) -> Hub {
        self.shared = Some(shared);
        self
    }

    /// The result of `public/ticktrade_get_stats` asked by `caller` (see the module doc).
    pub(crate) fn stats_result(&self, caller: ClientId) -> String {
        let mut out = String::with_capacity(4096);
        out.push('{');
        push_field(&mut out, "client", caller);
        out.push_str(",\"clients\":[");
        let mut ids: Vec<ClientId> = self.clients.keys().copied().filter(|id| *id != caller).collect();
        ids.sort_unstable();
        if self.clients.contains_key(&caller) {
            ids.insert(0, caller);
        }
        for (n, id) in ids.iter().take(MAX_CLIENT_ROWS).enumerate() {
            let Some(c) = self.clients.get(id) else { continue };
            let d = c.out.delays(&c.delays);
            if n > 0 {
                out.push(',');
            }
            out.push('{');
            push_field(&mut out, "id", *id);
            push_field(&mut out, "subscriptions", c.subs.len() as u64);
            push_field(&mut out, "queued", c.out.queued() as u64);
            push_field(&mut out, "messages", c.counters.messages);
            push_field(&mut out, "bytes", c.counters.bytes);
            push_field(&mut out, "drops", c.counters.drops);
            push_field(&mut out, "conflations", c.counters.conflations);
            push_field(&mut out, "resyncs", c.counters.resyncs);
            push_field(&mut out, "delay_count", d.count);
            push_field(&mut out, "delay_p50_ns", d.p50_ns);
            push_field(&mut out, "delay_p99_ns", d.p99_ns);
            push_field(&mut out, "delay_p999_ns", d.p999_ns);
            push_field(&mut out, "delay_max_ns", d.max_ns);
            out.push('}');
        }
        out.push(']');
        push_field(&mut out, "clients_total", self.clients.len() as u64);
        let t = &self.totals;
        out.push_str(",\"totals\":{");
        push_field(&mut out, "messages", t.messages);
        push_field(&mut out, "bytes", t.bytes);
        push_field(&mut out, "drops", t.drops);
        push_field(&mut out, "conflations", t.conflations);
        push_field(&mut out, "disconnects", t.disconnects);
        push_field(&mut out, "resyncs", t.resyncs);
        push_field(&mut out, "upstream_frames", t.upstream_frames);
        push_field(&mut out, "upstream_channels", self.upstream.len() as u64);
        out.push('}');
        if let Some(b) = self.shared.as_ref().and_then(|s| s.bus.as_ref()).map(|b| b.counters()) {
            out.push_str(",\"bus\":{");
            for (name, value) in bus_fields(&b) {
                push_field(&mut out, name, value);
            }
            out.push('}');
        }
        out.push_str(",\"fanout\":{");
        let guard = self.shared.as_ref().and_then(|s| s.fanout_ns.lock().ok());
        match guard.as_ref().and_then(|g| g.as_ref()) {
            Some(h) if !h.is_empty() => {
                push_field(&mut out, "count", h.len());
                for (name, q) in [("p50_ns", 0.5), ("p90_ns", 0.9), ("p99_ns", 0.99), ("p999_ns", 0.999)] {
                    push_field(&mut out, name, h.value_at_quantile(q));
                }
                push_field(&mut out, "max_ns", h.max());
                out.push_str(",\"buckets\":");
                buckets_json(h, &mut out);
            }
            _ => out.push_str("\"count\":0,\"buckets\":[]"),
        }
        out.push_str("}}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_are_increasing_five_per_decade() {
        let edges = bucket_edges();
        assert_eq!(edges.first(), Some(&100));
        assert_eq!(edges.last(), Some(&100_000_000_000));
        assert!(edges.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(edges.iter().filter(|e| e.to_string().starts_with("100")).count(), 10);
    }

    #[test]
    fn buckets_hold_every_recorded_delay_once() {
        let mut h = crate::metrics::new_histogram().unwrap();
        for (ns, n) in [(1_000u64, 3u64), (1_700, 2), (20_000, 5), (9_000_000, 1)] {
            h.record_n(ns, n).unwrap();
        }
        let mut text = String::new();
        buckets_json(&h, &mut text);
        let buckets: Vec<(u64, u64, u64)> = serde_json::from_str(&text).unwrap();
        assert_eq!(buckets.iter().map(|b| b.2).sum::<u64>(), 11, "{text}");
        assert_eq!(buckets.first().map(|b| (b.0, b.2)), Some((1_000, 3)), "{text}");
        assert_eq!(buckets.last().map(|b| (b.0, b.1, b.2)), Some((6_310_000, 10_000_000, 1)), "{text}");
        let at = |ns: u64| buckets.iter().find(|b| b.0 <= ns && ns < b.1).map(|b| b.2);
        assert_eq!(at(1_700), Some(2));
        assert_eq!(at(20_000), Some(5));
        assert_eq!(at(100_000), Some(0), "empty buckets inside the range are kept");
        let mut empty = String::new();
        buckets_json(&crate::metrics::new_histogram().unwrap(), &mut empty);
        assert_eq!(empty, "[]");
    }
}
