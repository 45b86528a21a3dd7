//! The binding's one tokio runtime per process, created lazily and replaced after `os.fork()`.
//!
//! A forked child inherits the parent's memory but none of its threads, so the parent's runtime
//! is dead there (its workers do not exist). Each runtime is tagged with the pid that built it;
//! a caller in another process finds the tag wrong and builds a fresh runtime. Only atomics are
//! involved, never a lock that a vanished thread could have held at the fork. The parent's
//! runtime is leaked in the child (dropping it would wait for threads that do not exist).
//!
//! Its worker threads: `DDBLOCK_WORKER_THREADS`, else Python's default in the core's settings table
//! (2, never more than the cores; the table says why).
//!
//! Blocking calls spawn their future on the runtime and sleep (GIL released) until the result is
//! sent back, so a request, its connection task and the I/O driver run on the same worker.
//! Async methods hand futures to pyo3-async-runtimes through [`DdblockRuntime`], a
//! `generic::Runtime` over the same runtime (the crate's own tokio runtime is a `OnceLock` that
//! cannot be replaced after a fork).

use std::cell::OnceCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use ddblock::config::{worker_threads, Front};
use futures_util::FutureExt;
use pyo3::exceptions::PyRuntimeError;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3_async_runtimes::generic::{self, ContextExt};
use pyo3_async_runtimes::TaskLocals;
use tokio::runtime::{Builder, Handle, Runtime};

/// How often a blocking wait (lock `block`) wakes to let Python handle signals (Ctrl-C).
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

struct Slot {
    pid: u32,
    handle: Handle,
    /// The runtime itself, taken out by [`shutdown`] at interpreter exit.
    runtime: Mutex<Option<Runtime>>,
}

/// The current process's runtime; a slot from another pid belongs to a parent before a fork.
static SLOT: AtomicPtr<Slot> = AtomicPtr::new(ptr::null_mut());

/// A handle on this process's runtime, built on first use (and again in a forked child).
pub fn get() -> Handle {
    let pid = std::process::id();
    loop {
        let current = SLOT.load(Ordering::Acquire);
        // SAFETY: a published slot is never freed (see below), so the pointer stays valid.
        if let Some(slot) = unsafe { current.as_ref() } {
            if slot.pid == pid {
                return slot.handle.clone();
            }
        }
        let runtime = Builder::new_multi_thread()
            .worker_threads(worker_threads(Front::Python, |k| std::env::var(k).ok()))
            .enable_all()
            .thread_name("ddblock-tokio")
            .build()
            .unwrap_or_else(|e| panic!("ddblock: cannot start a tokio runtime: {e}"));
        let fresh = Box::into_raw(Box::new(Slot {
            pid,
            handle: runtime.handle().clone(),
            runtime: Mutex::new(Some(runtime)),
        }));
        match SLOT.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire) {
            // The replaced slot (if any) is a parent's: leaked on purpose.
            // SAFETY: `fresh` is now published and never freed.
            Ok(_) => return unsafe { (*fresh).handle.clone() },
            Err(_) => {
                // Another thread published first; ours was never shared.
                // SAFETY: `fresh` came from Box::into_raw above and was not published.
                let ours = unsafe { Box::from_raw(fresh) };
                if let Some(rt) = ours.runtime.into_inner().ok().flatten() {
                    rt.shutdown_background();
                }
            }
        }
    }
}

/// Stops this process's runtime, waiting up to `timeout` for its tasks, with the GIL released.
///
/// Registered with `atexit` by the package: worker threads still finishing a task (dropping the
/// Python objects of an asyncio future, say) would otherwise take the GIL while the interpreter
/// finalizes, which crashes it ("PyGILState_Release ... finalizing", or a segfault). After this,
/// spawning on a stale handle cancels the task at once; a later call builds no new runtime.
pub fn shutdown(py: Python<'_>, timeout: Duration) {
    let current = SLOT.load(Ordering::Acquire);
    // SAFETY: as in `get`.
    let Some(slot) = (unsafe { current.as_ref() }) else {
        return;
    };
    if slot.pid != std::process::id() {
        return;
    }
    let runtime = slot.runtime.lock().ok().and_then(|mut r| r.take());
    if let Some(rt) = runtime {
        py.detach(|| rt.shutdown_timeout(timeout));
    }
}

/// Runs `fut` to completion on the runtime with the GIL released (other Python threads run).
///
/// The future runs as a task on a runtime worker, next to the connection tasks and the I/O
/// driver it talks to; the calling thread only sleeps until the result is sent back. (Driving the
/// future on the calling thread would cost a cross-thread wake-up at every step of a request.)
pub fn block_on<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    py.detach(|| {
        let (task, rx) = spawn(fut);
        let out = rx.recv();
        drop(task);
        finish(out.ok())
    })
}

/// [`block_on`] for waits of unbounded length: every 100 ms it takes the GIL for a moment to run
/// Python's signal handlers, so Ctrl-C interrupts it (the task is then cancelled).
pub fn block_on_interruptible<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: Send + 'static,
{
    py.detach(|| {
        let (task, rx) = spawn(fut);
        loop {
            match rx.recv_timeout(SIGNAL_CHECK) {
                Ok(out) => return finish(Some(out))?,
                Err(mpsc::RecvTimeoutError::Disconnected) => return finish(None)?,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        task.abort();
                        return Err(e);
                    }
                }
            }
        }
    })
}

type Outcome<T> = Result<T, Box<dyn std::any::Any + Send>>;

/// Spawns `fut` on the runtime; its outcome (or its panic) arrives on the channel.
fn spawn<F, T>(fut: F) -> (tokio::task::JoinHandle<()>, mpsc::Receiver<Outcome<T>>)
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    let task = get().spawn(async move {
        let out = AssertUnwindSafe(fut).catch_unwind().await;
        let _ = tx.send(out);
    });
    (task, rx)
}

/// The task's outcome as a Python result: a panic becomes pyo3's `PanicException`.
fn finish<T>(out: Option<Outcome<T>>) -> PyResult<T> {
    match out {
        Some(Ok(v)) => Ok(v),
        Some(Err(payload)) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "panic in ddblock".to_owned());
            Err(PanicException::new_err(message))
        }
        // Only if the runtime dropped the task without running it to the end.
        None => Err(PyRuntimeError::new_err(
            "ddblock: the runtime stopped before the operation finished",
        )),
    }
}

/// Turns a Rust future into a Python awaitable running on this process's runtime.
pub fn future_into_py<F, T>(py: Python<'_>, fut: F) -> PyResult<Bound<'_, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    generic::future_into_py::<DdblockRuntime, F, T>(py, fut)
}

/// [`get`] as a pyo3-async-runtimes runtime.
pub struct DdblockRuntime;

tokio::task_local! {
    static TASK_LOCALS: OnceCell<TaskLocals>;
}

impl generic::Runtime for DdblockRuntime {
    type JoinError = tokio::task::JoinError;
    type JoinHandle = tokio::task::JoinHandle<()>;

    fn spawn<F>(fut: F) -> Self::JoinHandle
    where
        F: Future<Output = ()> + Send + 'static,
    {
        get().spawn(fut)
    }

    fn spawn_blocking<F>(f: F) -> Self::JoinHandle
    where
        F: FnOnce() + Send + 'static,
    {
        get().spawn_blocking(f)
    }
}

impl ContextExt for DdblockRuntime {
    fn scope<F, R>(locals: TaskLocals, fut: F) -> Pin<Box<dyn Future<Output = R> + Send>>
    where
        F: Future<Output = R> + Send + 'static,
    {
        let cell = OnceCell::new();
        // A fresh cell: set cannot fail.
        let _ = cell.set(locals);
        Box::pin(TASK_LOCALS.scope(cell, fut))
    }

    fn get_task_locals() -> Option<TaskLocals> {
        TASK_LOCALS
            .try_with(|c| c.get().cloned())
            .unwrap_or_default()
    }
}
