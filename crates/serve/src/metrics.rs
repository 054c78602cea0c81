//! Counters and the fan-out delay histogram in Prometheus' text format (`GET /metrics`).
//!
//! Owns: the metric names and the text rendering.
//! Must not: read a clock or do I/O (the front end passes the figures in).

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use crate::hub::Totals;

/// A histogram of fan-out delays in nanoseconds (upstream frame received → downstream
/// frame written), 1 ns to 60 s at 3 significant figures.
pub(crate) fn new_histogram() -> Option<Histogram<u64>> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).ok()
}

/// Renders totals, per-client counters and the fan-out delay quantiles.
pub fn render(totals: &Totals, fanout_ns: &Histogram<u64>) -> String {
    let mut out = String::with_capacity(2048);
    let counters = [
        ("messages", "Frames queued to clients.", totals.messages),
        ("bytes", "Bytes queued to clients.", totals.bytes),
        ("drops", "Frames not queued because a client's queue was full.", totals.drops),
        ("conflations", "Times a slow client's books were conflated.", totals.conflations),
        ("disconnects", "Slow clients disconnected.", totals.disconnects),
        ("resyncs", "Upstream book resyncs sent on to clients as diffs.", totals.resyncs),
        ("upstream_frames", "Frames received from upstream.", totals.upstream_frames),
    ];
    for (name, help, value) in counters {
        let _ = writeln!(out, "# HELP ticktrade_serve_{name}_total {help}");
        let _ = writeln!(out, "# TYPE ticktrade_serve_{name}_total counter");
        let _ = writeln!(out, "ticktrade_serve_{name}_total {value}");
    }
    let _ = writeln!(out, "# HELP ticktrade_serve_clients Connected clients.");
    let _ = writeln!(out, "# TYPE ticktrade_serve_clients gauge");
    let _ = writeln!(out, "ticktrade_serve_clients {}", totals.clients.len());
    let mut ids: Vec<&u64> = totals.clients.keys().collect();
    ids.sort();
    for (name, pick) in [
        ("messages", (|c| c.messages) as fn(&crate::hub::ClientCounters) -> u64),
        ("bytes", |c| c.bytes),
        ("drops", |c| c.drops),
        ("conflations", |c| c.conflations),
        ("resyncs", |c| c.resyncs),
    ] {
        let _ = writeln!(out, "# TYPE ticktrade_serve_client_{name}_total counter");
        for id in &ids {
            let _ =
                writeln!(out, "ticktrade_serve_client_{name}_total{{client=\"{id}\"}} {}", pick(&totals.clients[*id]));
        }
    }
    let _ = writeln!(
        out,
        "# HELP ticktrade_serve_client_fanout_delay_seconds Per client: upstream frame received to frame written."
    );
    let _ = writeln!(out, "# TYPE ticktrade_serve_client_fanout_delay_seconds summary");
    for id in &ids {
        let d = totals.clients[*id].fanout;
        for (q, ns) in [("0.5", d.p50_ns), ("0.99", d.p99_ns), ("0.999", d.p999_ns)] {
            let _ = writeln!(
                out,
                "ticktrade_serve_client_fanout_delay_seconds{{client=\"{id}\",quantile=\"{q}\"}} {:.9}",
                ns as f64 / 1e9
            );
        }
        let _ = writeln!(out, "ticktrade_serve_client_fanout_delay_seconds_count{{client=\"{id}\"}} {}", d.count);
    }
    let _ = writeln!(
        out,
        "# HELP ticktrade_serve_fanout_delay_seconds Upstream frame received to downstream frame written."
    );
    let _ = writeln!(out, "# TYPE ticktrade_serve_fanout_delay_seconds summary");
    for q in [0.5, 0.9, 0.99, 0.999] {
        let secs = fanout_ns.value_at_quantile(q) as f64 / 1e9;
        let _ = writeln!(out, "ticktrade_serve_fanout_delay_seconds{{quantile=\"{q}\"}} {secs:.9}");
    }
    let _ = writeln!(out, "ticktrade_serve_fanout_delay_seconds_count {}", fanout_ns.len());
    if let Some(bus) = &totals.bus {
        render_bus(&mut out, bus);
    }
    out
}

/// The NATS bus: whether it is connected now (0 while it is gone), and its counters.
fn render_bus(out: &mut String, bus: &crate::BusCounters) {
    for (name, value) in crate::web::bus_fields(bus) {
        if matches!(name, "publisher" | "connected") {
            let _ = writeln!(out, "# TYPE ticktrade_serve_bus_{name} gauge");
            let _ = writeln!(out, "ticktrade_serve_bus_{name} {value}");
        } else {
            let _ = writeln!(out, "# TYPE ticktrade_serve_bus_{name}_total counter");
            let _ = writeln!(out, "ticktrade_serve_bus_{name}_total {value}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::ClientCounters;

    #[test]
    fn renders_counters_clients_and_quantiles() {
        let mut totals = Totals { messages: 7, resyncs: 2, ..Totals::default() };
        totals.clients.insert(
            3,
            ClientCounters {
                messages: 5,
                bytes: 100,
                drops: 1,
                conflations: 1,
                resyncs: 4,
                fanout: crate::DelaySummary {
                    count: 9,
                    p50_ns: 40_000,
                    p99_ns: 90_000,
                    p999_ns: 95_000,
                    max_ns: 99_000,
                },
            },
        );
        let mut h = new_histogram().unwrap();
        for ns in [1_000, 2_000, 3_000, 1_000_000] {
            h.record(ns).unwrap();
        }
        let text = render(&totals, &h);
        assert!(text.contains("ticktrade_serve_messages_total 7\n"), "{text}");
        assert!(text.contains("ticktrade_serve_resyncs_total 2\n"));
        assert!(text.contains("ticktrade_serve_clients 1\n"));
        assert!(text.contains("ticktrade_serve_client_bytes_total{client=\"3\"} 100\n"));
        assert!(text.contains("ticktrade_serve_client_resyncs_total{client=\"3\"} 4\n"), "{text}");
        assert!(text.contains("ticktrade_serve_fanout_delay_seconds_count 4\n"));
        assert!(
            text.contains("ticktrade_serve_client_fanout_delay_seconds{client=\"3\",quantile=\"0.99\"} 0.000090000\n")
        );
        assert!(text.contains("ticktrade_serve_client_fanout_delay_seconds_count{client=\"3\"} 9\n"));
        assert!(text.contains("ticktrade_serve_fanout_delay_seconds{quantile=\"0.5\"} 0.000002"), "{text}");
    }
}
