//! What the host took from this machine during a benchmark: the `steal` time of `/proc/stat`,
//! the time this VM's vCPUs were ready to run while the hypervisor ran something else.
//!
//! Owns: reading and parsing the aggregate `cpu` line of `/proc/stat`, and the wording of the
//! steal over an interval.
//! Must not: attribute the steal to blocks or requests: the kernel counts it per CPU in
//! `USER_HZ` ticks (10 ms), so it says how much of a run the host took, not when.
//!
//! Why a benchmark reports it: on a shared VM, a vCPU the host takes away stalls whatever
//! thread ran on it (or, for `bench hl`'s two-thread blocks, leaves the block to one thread),
//! and none of it shows in the thread's own CPU time (`PARAVIRT_TIME_ACCOUNTING`). A run's tail
//! is read beside it.

/// `USER_HZ`: the unit of `/proc/stat` on every Linux architecture ticktrade builds for.
const USER_HZ: u64 = 100;

/// The aggregate CPU counters at one moment, in `USER_HZ` ticks summed over all CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CpuTicks {
    /// `steal`: ready to run, the hypervisor running something else.
    steal: u64,
    /// user + nice + system + idle + iowait + irq + softirq + steal: all of the CPUs' time.
    total: u64,
}

impl CpuTicks {
    /// The counters now; `None` where `/proc/stat` cannot be read or has no steal column
    /// (not Linux, or a kernel before 2.6.11).
    fn now() -> Option<CpuTicks> {
        parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }
}

/// The steal during each part of a benchmark (`bench hl`: its 1-thread, 2-thread, baseline and
/// e2e runs), read around the part by [`during`](Self::during); shown as `"part X, part Y"`.
#[derive(Debug, Default)]
pub(crate) struct StealByPart(Vec<String>);

impl StealByPart {
    /// Runs `part` and records the host's steal while it ran under `name`.
    pub(crate) fn during<T>(&mut self, name: &str, part: impl FnOnce() -> T) -> T {
        let before = CpuTicks::now();
        let out = part();
        self.0.push(format!("{name} {}", steal_between(before, CpuTicks::now())));
        out
    }
}

impl std::fmt::Display for StealByPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join(", "))
    }
}

thread_local! {
    /// The counters when this thread started the benchmark it runs ([`mark_run_start`]).
    static RUN_START: std::cell::Cell<Option<CpuTicks>> = const { std::cell::Cell::new(None) };
}

/// Marks the start of a benchmark on this thread (`bench::run`, for each benchmark `bench all`
/// runs too): [`run_note`] reports the steal since.
pub(crate) fn mark_run_start() {
    RUN_START.set(CpuTicks::now());
}

/// The line every benchmark's notes end with: the host's steal since [`mark_run_start`] on this
/// thread; `None` without a mark, or where `/proc/stat` cannot be read.
pub(crate) fn run_note() -> Option<String> {
    let start = RUN_START.get()?;
    Some(format!(
        "host steal during this benchmark (/proc/stat: this VM's vCPUs ready to run while the hypervisor ran something else; not in any thread's CPU time): {}",
        steal_between(Some(start), CpuTicks::now())
    ))
}

/// The aggregate `cpu` line of a `/proc/stat` text.
fn parse(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.split_whitespace().next() == Some("cpu"))?;
    let fields: Vec<u64> = line.split_whitespace().skip(1).take(8).map(str::parse).collect::<Result<_, _>>().ok()?;
    (fields.len() == 8).then(|| CpuTicks { steal: fields[7], total: fields.iter().sum() })
}

/// The steal between two readings, as a note reads it: `"420 ms (3.1% of the vCPUs' time)"`,
/// or `"not available"` when either reading is missing.
fn steal_between(before: Option<CpuTicks>, after: Option<CpuTicks>) -> String {
    match (before, after) {
        (Some(a), Some(b)) if b.total > a.total => {
            let steal = b.steal.saturating_sub(a.steal);
            let share = steal as f64 * 100.0 / (b.total - a.total) as f64;
            format!("{} ms ({share:.1}% of the vCPUs' time)", steal * 1000 / USER_HZ)
        }
        (Some(_), Some(_)) => "0 ms (no time counted)".to_owned(),
        _ => "not available".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  2448087 297 190719 1895873 13215 0 3112 29067 0 0\n\
                        cpu0 1078489 181 86030 1107018 2583 0 839 14584 0 0\n\
                        intr 1 2 3\n";

    #[test]
    fn reads_the_aggregate_line_not_a_cpu_of_its_own() {
        let t = parse(STAT).unwrap();
        assert_eq!(t.steal, 29067);
        assert_eq!(t.total, 2448087 + 297 + 190719 + 1895873 + 13215 + 3112 + 29067);
    }

    #[test]
    fn a_line_without_the_steal_column_or_with_junk_is_not_read() {
        assert_eq!(parse("cpu  1 2 3 4 5 6 7\n"), None);
        assert_eq!(parse("cpu  1 2 x 4 5 6 7 8\n"), None);
        assert_eq!(parse("cpu0 1 2 3 4 5 6 7 8\n"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn the_run_note_needs_a_mark_on_this_thread() {
        assert_eq!(std::thread::spawn(run_note).join().unwrap(), None);
        let note = std::thread::spawn(|| {
            mark_run_start();
            run_note()
        });
        let note = note.join().unwrap();
        // Where /proc/stat is readable (Linux) the mark holds and the note says the steal.
        assert_eq!(note.is_some(), CpuTicks::now().is_some());
        assert!(note.is_none_or(|n| n.starts_with("host steal during this benchmark") && n.contains(" ms (")));
    }

    #[test]
    fn each_part_is_said_by_name_in_order_and_keeps_its_result() {
        let mut steal = StealByPart::default();
        assert_eq!(steal.during("one", || 1), 1);
        assert_eq!(steal.during("two", || "x"), "x");
        let text = steal.to_string();
        let (one, two) = text.split_once(", two ").unwrap();
        assert!(one.starts_with("one ") && !two.is_empty(), "{text}");
    }

    #[test]
    fn steal_is_said_in_milliseconds_and_as_a_share_of_all_the_cpus_time() {
        let a = CpuTicks { steal: 100, total: 10_000 };
        let b = CpuTicks { steal: 142, total: 13_400 };
        assert_eq!(steal_between(Some(a), Some(b)), "420 ms (1.2% of the vCPUs' time)");
        assert_eq!(steal_between(Some(a), None), "not available");
        assert_eq!(steal_between(Some(a), Some(a)), "0 ms (no time counted)");
    }
}
