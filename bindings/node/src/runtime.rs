//! The tokio runtime napi-rs runs the binding's futures on: one worker thread unless
//! `DDBLOCK_WORKER_THREADS` says otherwise (the variable the Python binding reads too).
//!
//! JavaScript runs on its own thread, so one worker makes two threads: a call wakes the worker
//! once and the worker wakes JavaScript once, while the request, its connection task and the
//! I/O driver stay on the worker. napi-rs's default, a worker per core, has idle workers woken to
//! look for work at every step of a request, which costs CPU without speeding up a call (on two
//! cores, a fifth more CPU per lock cycle, and no more cycles per second at 1 to 256 concurrent
//! locks). More workers help one process that keeps many calls in flight on many cores.

use napi::bindgen_prelude::create_custom_tokio_runtime;

/// The worker count: `DDBLOCK_WORKER_THREADS` when it is a positive number, else 1.
fn worker_threads() -> usize {
    std::env::var("DDBLOCK_WORKER_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1)
}

// Runs when the module is loaded, before napi-rs builds its runtime on the first call.
#[napi_derive::module_init]
fn init() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads())
        .enable_all()
        .build();
    // Without it, napi-rs builds its default runtime.
    if let Ok(runtime) = runtime {
        create_custom_tokio_runtime(runtime);
    }
}
