//! The real clock, in the whole seconds PHP's `time()` and Laravel's expiries use.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ddblock::Clock;

/// The current Unix time in whole seconds (what PHP's `time()` and ddblock's `SystemClock` say).
pub fn now() -> i64 {
    ddblock::SystemClock.now()
}

/// Sleeps until the Unix time is past `ts` (`now() > ts`), plus 20 ms of margin.
pub async fn sleep_until_after(ts: i64) {
    let target_ms = (ts + 1) as u128 * 1000 + 20;
    loop {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock before 1970")
            .as_millis();
        if now_ms >= target_ms {
            return;
        }
        tokio::time::sleep(Duration::from_millis((target_ms - now_ms) as u64)).await;
    }
}
