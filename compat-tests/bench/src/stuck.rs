//! The stuck-lock comparison of `compat-tests/demo.sh` at several stalenesses: stock Laravel's
//! release (read, then delete), the PHP driver and ddblock (one conditional delete), on moto.

use ddblock_stuck_locks::{run_ddblock, run_laravel, run_laravel_driver, start_proxy, Options};
use serde::Serialize;

use crate::util::Ctx;

/// One side at one staleness.
#[derive(Debug, Clone, Serialize)]
pub struct StuckRow {
    pub stale_ms: u64,
    pub side: String,
    pub cycles: usize,
    pub acquired: usize,
    pub stuck: usize,
    pub overlaps: usize,
    pub errors: usize,
    pub requests_per_cycle: f64,
}

/// Figure 5.
pub async fn stuck(ctx: &Ctx) -> Result<Vec<StuckRow>, String> {
    let mut rows = Vec::new();
    for &stale_ms in &ctx.profile.stale_ms {
        let opts = Options {
            upstream: ctx.moto.clone(),
            workers: ctx.profile.stuck_workers,
            cycles: ctx.profile.stuck_cycles,
            stale_ms,
            // No staleness at 0 ms; otherwise every eventually consistent read (the worst case).
            stale_probability: if stale_ms == 0 { 0.0 } else { 1.0 },
            ..Options::default()
        };
        let proxy = start_proxy(&opts).await?;
        let reports = [
            run_laravel(&opts, &proxy).await?,
            run_laravel_driver(&opts, &proxy).await?,
            run_ddblock(&opts, &proxy).await?,
        ];
        proxy.shutdown().await;
        for (side, r) in [
            "stock Laravel 8.83",
            "Laravel + ddblock driver",
            "ddblock (Rust)",
        ]
        .iter()
        .zip(&reports)
        {
            rows.push(StuckRow {
                stale_ms,
                side: (*side).into(),
                cycles: r.cycles,
                acquired: r.acquired,
                stuck: r.stuck,
                overlaps: r.overlaps,
                errors: r.errors,
                requests_per_cycle: r.requests.values().sum::<u64>() as f64
                    / r.cycles.max(1) as f64,
            });
        }
    }
    Ok(rows)
}
