//! The keep-fence release (`DDBLOCK_RELEASE_MODE=keep-fence`, docs/semantics.md "Release
//! modes"), against moto, dynalite and DynamoDB Local: one owner-conditioned UpdateItem that
//! expires the item and keeps `ddblock_fence`, so fences never go back across a release, even
//! for an acquirer whose clock is behind; the answers mirror the delete's; a lost answer is a
//! release (through the fault proxy); stock Laravel's `add()` takes a kept item. The requests
//! byte for byte: the conformance vectors (`release.json`, `force_release.json`).

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{laravel_item, on_servers, s, Env, FaultyTable, Server};
use ddblock::{AcquireOutcome, Lock, ReleaseMode, ReleaseOutcome, Store, StoreConfig};
use ddblock_fault_proxy::{FaultConfig, DROPPED};

fn fence_of(o: AcquireOutcome) -> u64 {
    match o {
        AcquireOutcome::Acquired { fence: Some(f), .. } => f,
        other => panic!("{other:?}"),
    }
}

fn keep_fence(env: &Env) -> Store {
    env.store_with(
        env.config()
            .prefix("app_")
            .release_mode(ReleaseMode::KeepFence),
    )
}

/// Takes lock `name` of `store` (ttl 30 s) and releases it: the handle and the fence it had.
async fn taken_and_released(store: &Store, name: &str) -> (Lock, u64) {
    let lock = store.lock(name, 30).unwrap();
    let fence = fence_of(lock.acquire().await.unwrap());
    assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
    (lock, fence)
}

/// The system clock in microseconds, `behind_secs` back: a fence base as a host whose clock is
/// that far behind would send it (the fence base is read from the system clock, so a test sets
/// it through the conformance seam).
fn base_behind(behind_secs: u64) -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    (now - Duration::from_secs(behind_secs)).as_micros() as u64
}

/// The released item: expired a day before the release, no owner, no attempt id, the fence
/// kept. Everyone reads it as free; a second release is `NotHeld`; the next acquisition
/// continues the fence.
async fn a_keep_fence_release_expires_the_item_and_keeps_the_fence(server: Server) {
    let env = Env::new(server).await;
    let store = keep_fence(&env);
    let t = env.now();
    let (a, f1) = taken_and_released(&store, "kf").await;
    let item = env.raw("app_kf").await.expect("the item stays");
    assert_eq!(item.get("expires_at"), Some(&common::n(t - 86_400)));
    assert_eq!(item.get("ddblock_fence"), Some(&common::n(f1)));
    assert!(
        !item.contains_key("value") && !item.contains_key("ddblock_attempt"),
        "{item:?}"
    );
    // Free for everyone; not ours any more.
    assert!(!a.is_locked().await.unwrap());
    assert_eq!(a.current_holder().await.unwrap(), None);
    assert!(!a.refresh(None).await.unwrap());
    // A second release (or a resend) does not report a release.
    assert_eq!(a.release().await.unwrap(), ReleaseOutcome::NotHeld);
    // The next acquisition, of any owner, continues the fence.
    let b = store.lock("kf", 30).unwrap();
    assert_eq!(fence_of(b.acquire().await.unwrap()), f1 + 1);
    // Held by another: the kept-fence release of a stale handle names the holder, changes nothing.
    assert!(matches!(
        a.release().await.unwrap(),
        ReleaseOutcome::HeldByOther(h) if h.fence == Some(f1 + 1)
    ));
    assert!(b.is_locked().await.unwrap());
}

/// Fences never go back across a keep-fence release, even when the next acquirer's clock is an
/// hour behind; with the delete release the same sequence goes back (the token restarts from
/// that clock).
async fn fences_grow_across_a_keep_fence_release_with_a_clock_behind(server: Server) {
    let env = Env::new(server).await;
    for mode in [ReleaseMode::KeepFence, ReleaseMode::Delete] {
        let store = env.store_with(env.config().prefix("app_").release_mode(mode));
        let name = format!("behind-{}", mode.as_str());
        let (_, f1) = taken_and_released(&store, &name).await;
        // B's fence base is an hour behind A's clock (its expiry clock is the manual one).
        let b = store
            .lock(&name, 30)
            .unwrap()
            .with_fixed_attempt("BehindBehind1234", base_behind(3600));
        let f2 = fence_of(b.acquire().await.unwrap());
        match mode {
            ReleaseMode::KeepFence => assert_eq!(f2, f1 + 1, "continued across the release"),
            ReleaseMode::Delete => assert!(f2 < f1, "the delete lost the fence: {f2} < {f1}"),
        }
        b.release().await.unwrap();
    }
}

/// A keep-fence item is free to stock Laravel: its `add()` (a PutItem conditioned on
/// `attribute_not_exists(#key) OR #expires_at < :now`) takes it, and drops the fence; the next
/// ddblock acquisition starts from its clock again. force_release keeps the fence too.
async fn laravel_takes_a_kept_item_and_force_release_keeps_the_fence(server: Server) {
    let env = Env::new(server).await;
    let store = keep_fence(&env);
    let t = env.now();
    let (a, f1) = taken_and_released(&store, "lv").await;
    // Laravel's add(), with its condition, at Laravel's now.
    let added = env
        .client
        .put_item()
        .table_name(&env.table)
        .set_item(Some(laravel_item("app_lv", s("s:3:\"php\";"), t + 30)))
        .condition_expression("attribute_not_exists(#key) OR #expires_at < :now")
        .expression_attribute_names("#key", "key")
        .expression_attribute_names("#expires_at", "expires_at")
        .expression_attribute_values(":now", common::n(t))
        .send()
        .await;
    assert!(
        added.is_ok(),
        "Laravel's add() takes the released lock: {added:?}"
    );
    assert!(!env
        .raw("app_lv")
        .await
        .unwrap()
        .contains_key("ddblock_fence"));
    // A force_release in keep-fence mode expires Laravel's lock (it has no fence to keep)...
    a.force_release().await.unwrap();
    assert!(!a.is_locked().await.unwrap());
    let b = store.lock("lv", 30).unwrap();
    let f2 = fence_of(b.acquire().await.unwrap());
    assert!(f2 > f1, "from the clock again: {f2} > {f1}");
    // ...and keeps ddblock's fence.
    b.force_release().await.unwrap();
    let item = env.raw("app_lv").await.unwrap();
    assert_eq!(item.get("ddblock_fence"), Some(&common::n(f2)));
    assert!(!item.contains_key("value"));
    // force_release of a missing lock creates nothing.
    store
        .lock("none", 30)
        .unwrap()
        .force_release()
        .await
        .unwrap();
    assert!(env.raw("app_none").await.is_none());
    assert_eq!(
        fence_of(store.lock("lv", 30).unwrap().acquire().await.unwrap()),
        f2 + 1
    );
}

/// The answer to the keep-fence release is lost (its UpdateItem landed): the SDK's resend finds
/// the lock released, and `with_lock` ends as a completed release; the item keeps the fence.
async fn a_lost_answer_to_a_keep_fence_release_is_a_release(server: Server) {
    let f = FaultyTable::new(server).await;
    let cfg = f
        .through()
        .max_attempts(2)
        .attempt_timeout(Duration::from_millis(400))
        .release_mode(ReleaseMode::KeepFence);
    let store = Store::new(cfg.build().unwrap());
    f.proxy.set_faults(FaultConfig {
        sequence: [("UpdateItem".to_owned(), vec!["drop".to_owned()])].into(),
        ..FaultConfig::default()
    });
    let lock = store.lock("kf-lost", 30).unwrap();
    let value = lock
        .with_lock(Duration::from_secs(5), |lease| async move { lease.fence() })
        .await
        .unwrap_or_else(|e| panic!("{}", e.error));
    assert_eq!(
        f.proxy.stats().count("UpdateItem", DROPPED),
        1,
        "the first answer was lost"
    );
    let item = f.raw("kf-lost").await.expect("kept");
    assert!(!item.contains_key("value"), "released: {item:?}");
    let fence: u64 = item["ddblock_fence"].as_n().unwrap().parse().unwrap();
    assert_eq!(Some(fence), value, "the fence is kept");
    let next = fence_of(store.lock("kf-lost", 30).unwrap().acquire().await.unwrap());
    assert_eq!(next, fence + 1);
}

on_servers!(
    a_keep_fence_release_expires_the_item_and_keeps_the_fence,
    fences_grow_across_a_keep_fence_release_with_a_clock_behind,
    laravel_takes_a_kept_item_and_force_release_keeps_the_fence,
    a_lost_answer_to_a_keep_fence_release_is_a_release,
);

/// The setting, by every front's name: the environment's `DDBLOCK_RELEASE_MODE` included.
#[test]
fn the_release_mode_is_a_setting() {
    let env = |v: &'static str| {
        StoreConfig::from_vars(move |k| (k == "DDBLOCK_RELEASE_MODE").then(|| v.to_owned()))
    };
    let mode = |v| env(v).unwrap().build().unwrap().release_mode();
    assert_eq!(mode("keep-fence"), ReleaseMode::KeepFence);
    assert_eq!(mode("delete"), ReleaseMode::Delete);
    assert_eq!(mode(""), ReleaseMode::Delete, "empty is unset: the default");
    let e = env("keep").unwrap_err().to_string();
    assert!(e.contains("delete") && e.contains("keep-fence"), "{e}");
    assert_eq!(
        StoreConfig::builder().build().unwrap().release_mode(),
        ReleaseMode::Delete
    );
}
