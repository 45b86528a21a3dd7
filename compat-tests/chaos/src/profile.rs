//! Run profiles: what one chaos run does (each worker's part goes to its peer as one `chaos`
//! request, compat-tests/support/peers/PROTOCOL.md).

use std::time::Duration;

/// The broken releases `--inject` makes the first Rust worker send, each of which trace
/// validation must reject.
pub const INJECTIONS: [&str; 2] = ["unconditional-release", "laravel-stale-release"];

/// What one run does.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Profile name (`short`, `long`).
    pub name: &'static str,
    /// Workers per language among Rust, Python, Node and PHP (the driver).
    pub workers_per_lang: usize,
    /// Stock Laravel workers (the control group, on their own keys).
    pub control_workers: usize,
    /// Acquisitions each ddblock worker aims for.
    pub acquisitions: usize,
    /// Acquisitions each control (stock Laravel) worker aims for: fewer in the long profile,
    /// because every lock Laravel leaves stuck blocks its key until the ttl and its workers
    /// would outlast the time limit.
    pub control_acquisitions: usize,
    /// Lock names shared by ddblock's workers.
    pub keys: usize,
    /// Lock names of the control group.
    pub control_keys: usize,
    /// Lock ttl in seconds.
    pub ttl_secs: u64,
    /// Time held per acquisition, between the two guarded writes.
    pub work: Duration,
    /// How long a worker waits for a lock per cycle.
    pub wait: Duration,
    /// The clock-skew margin every ddblock worker uses (at least the largest disagreement
    /// between two workers' clocks: +2 s and -2 s disagree by 4 s).
    pub margin_secs: u64,
    /// How every ddblock worker releases (`DDBLOCK_RELEASE_MODE`: `delete` or `keep-fence`).
    pub release_mode: &'static str,
    /// Clock offsets given to some workers with `faketime`: (language, offset), one worker
    /// each. Not Python: under libfaketime CPython's `time.sleep` fails with EINVAL.
    pub skews: Vec<(&'static str, &'static str)>,
    /// Restart the server this long after the start (dynalite keeps its data on disk).
    pub restart_after: Option<Duration>,
    /// How long the server stays down.
    pub restart_downtime: Duration,
    /// Upper bound of the whole run; workers stop by then.
    pub max_duration: Duration,
    /// Fault rates.
    pub lost_responses: f64,
    /// Requests dropped before they reach the server.
    pub dropped_requests: f64,
    /// Throttled requests.
    pub throttling: f64,
    /// 500s.
    pub errors_500: f64,
    /// Connections reset after the write landed.
    pub resets: f64,
    /// Latency spikes: up to this much extra, on every request.
    pub latency_jitter_ms: u64,
    /// Eventually consistent reads up to this stale.
    pub stale_ms: u64,
    /// Seed of the proxy's fault choices and the workers' key choices.
    pub seed: u64,
    /// A broken release the first Rust worker makes on purpose (`--inject`), which the trace
    /// validation must reject: `unconditional-release` or `laravel-stale-release`.
    pub inject: Option<&'static str>,
}

impl Profile {
    /// A few minutes at most: CI's profile.
    pub fn short() -> Profile {
        Profile {
            name: "short",
            workers_per_lang: 2,
            control_workers: 2,
            acquisitions: 25,
            control_acquisitions: 25,
            keys: 3,
            control_keys: 2,
            ttl_secs: 6,
            work: Duration::from_millis(30),
            wait: Duration::from_secs(20),
            margin_secs: 4,
            release_mode: "delete",
            skews: vec![("rust", "+2s"), ("node", "-2s"), ("php", "+2s")],
            restart_after: Some(Duration::from_secs(8)),
            restart_downtime: Duration::from_millis(1500),
            max_duration: Duration::from_secs(240),
            lost_responses: 0.1,
            dropped_requests: 0.03,
            throttling: 0.1,
            errors_500: 0.03,
            resets: 0.02,
            latency_jitter_ms: 150,
            stale_ms: 1000,
            seed: 1,
            inject: None,
        }
    }

    /// The documented run: 16 workers (4 per language) × 1,000 acquisitions.
    pub fn long() -> Profile {
        Profile {
            name: "long",
            workers_per_lang: 4,
            control_workers: 4,
            acquisitions: 1000,
            control_acquisitions: 200,
            // Enough keys that 16 workers contend without queueing for an hour.
            keys: 16,
            control_keys: 4,
            max_duration: Duration::from_secs(3600),
            restart_after: Some(Duration::from_secs(120)),
            ..Profile::short()
        }
    }

    /// The named profile.
    pub fn by_name(name: &str) -> Option<Profile> {
        match name {
            "short" => Some(Profile::short()),
            "long" => Some(Profile::long()),
            _ => None,
        }
    }
}
