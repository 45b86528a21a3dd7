//! The tokio runtime napi-rs runs the binding's futures on: `DDBLOCK_WORKER_THREADS` workers, else
//! Node's default in the core's settings table (1; the table says why). JavaScript runs on its
//! own thread: a call wakes the worker once and the worker wakes JavaScript once, while the
//! request, its connection task and the I/O driver stay on the worker. More workers help one
//! process that keeps many calls in flight on many cores.

use ddblock::config::{worker_threads, Front};
use napi::bindgen_prelude::create_custom_tokio_runtime;

// Runs when the module is loaded, before napi-rs builds its runtime on the first call.
#[napi_derive::module_init]
fn init() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads(Front::Node, |k| std::env::var(k).ok()))
        .enable_all()
        .build();
    // Without it, napi-rs builds its default runtime.
    if let Ok(runtime) = runtime {
        create_custom_tokio_runtime(runtime);
    }
}
