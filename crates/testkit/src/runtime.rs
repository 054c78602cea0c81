//! A server a test can freeze: [`Freezable`] is a current-thread tokio runtime on a thread of
//! its own; what a test starts on it (an edge, with its tasks) stops entirely while the test
//! holds a [`Thaw`], because that thread is blocked. From outside it looks like a paused or
//! starved process: its sockets are not read, so what is sent to it backs up in the kernel and
//! then in the sender (a NATS server that cannot write declares it a slow consumer). A
//! connection made on another runtime and handed to it keeps being read meanwhile (so a
//! client library's own queues fill up instead).
//!
//! Owns: the runtime thread and the freeze protocol (freeze is acknowledged before
//! [`Freezable::freeze`] returns, so the test knows nothing of it runs from then on).
//! Must not: be used for anything but tests; dropping a `Freezable` leaves its thread to end
//! on its own (it ends once thawed and without commands; a test never waits on it).

use std::future::Future;
use std::pin::Pin;

use tokio::sync::{mpsc, oneshot};

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

enum Cmd {
    Run(Job),
    Freeze { frozen: oneshot::Sender<()>, thaw: std::sync::mpsc::Receiver<()> },
}

/// A runtime on its own thread that the test can freeze and thaw.
pub struct Freezable {
    commands: mpsc::UnboundedSender<Cmd>,
}

/// Holds a [`Freezable`] frozen; dropping it (or [`Thaw::thaw`]) lets it run again.
#[must_use = "the runtime thaws when this is dropped"]
pub struct Thaw {
    _release: std::sync::mpsc::Sender<()>,
}

impl Thaw {
    /// Lets the runtime run again.
    pub fn thaw(self) {}
}

impl Freezable {
    /// Starts the runtime's thread (named `name`).
    pub fn start(name: &str) -> Freezable {
        let (commands, mut rx) = mpsc::unbounded_channel::<Cmd>();
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let runtime =
                    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a test runtime");
                runtime.block_on(async move {
                    while let Some(cmd) = rx.recv().await {
                        match cmd {
                            Cmd::Run(job) => {
                                tokio::spawn(job);
                            }
                            Cmd::Freeze { frozen, thaw } => {
                                let _ = frozen.send(());
                                // Blocks the runtime's only thread: none of its tasks runs,
                                // no socket of it is read, no timer of it fires.
                                let _ = thaw.recv();
                            }
                        }
                    }
                });
            })
            .expect("spawning a test runtime thread");
        Freezable { commands }
    }

    /// Runs `make`'s future on the runtime and returns its output; the tasks it spawned stay
    /// on the runtime.
    pub async fn run<F, Fut, T>(&self, make: F) -> T
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::pin(async move {
            let _ = tx.send(make().await);
        });
        assert!(self.commands.send(Cmd::Run(job)).is_ok(), "the test runtime is gone");
        rx.await.expect("the job on the test runtime panicked")
    }

    /// Freezes the runtime; returns once it is frozen.
    pub async fn freeze(&self) -> Thaw {
        let (release, thaw) = std::sync::mpsc::channel();
        let (frozen, ack) = oneshot::channel();
        assert!(self.commands.send(Cmd::Freeze { frozen, thaw }).is_ok(), "the test runtime is gone");
        ack.await.expect("the test runtime stopped");
        Thaw { _release: release }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn nothing_runs_while_frozen_and_everything_resumes() {
        let rt = Freezable::start("freezable-test");
        let ticks = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&ticks);
        rt.run(move || async move {
            tokio::spawn(async move {
                loop {
                    counted.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            });
        })
        .await;
        let thaw = rt.freeze().await;
        let frozen_at = ticks.load(Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(ticks.load(Ordering::Relaxed), frozen_at, "a task ran while frozen");
        thaw.thaw();
        assert_eq!(rt.run(|| async { 7 }).await, 7);
        let resumed = async {
            while ticks.load(Ordering::Relaxed) == frozen_at {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), resumed).await.expect("the task never ran again");
    }
}
