//! The S3 lock backend against moto's S3 server (moto 5.2.5: `If-None-Match: *` and `If-Match`
//! on PutObject and DeleteObject, 412 on a mismatch): the same lock API as on DynamoDB, the
//! object it writes, expiry and takeover, fencing, concurrent acquirers, a takeover race, the
//! overwrite release, and configuration errors. dynalite has no S3: these run on moto only.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ddblock::{
    AcquireOutcome, Backoff, Clock, ErrorKind, LockBackendKind, ReleaseOutcome, Store, StoreConfig,
};
use ddblock_test_support::{new_bucket, s3_client_for, ManualClock, Server};
use serde_json::Value;

struct S3Env {
    bucket: String,
    clock: Arc<ManualClock>,
}

impl S3Env {
    async fn new() -> S3Env {
        S3Env {
            bucket: new_bucket(&Server::Moto.endpoint()).await,
            clock: ManualClock::new(),
        }
    }

    fn config(&self) -> ddblock::StoreConfigBuilder {
        StoreConfig::builder()
            .endpoint(Server::Moto.endpoint())
            .region("us-east-1")
            .prefix("app_")
            .lock_backend(LockBackendKind::S3)
            .s3_bucket(&self.bucket)
            .clock(self.clock.clone())
            .backoff(Backoff {
                initial: Duration::from_millis(5),
                max: Duration::from_millis(40),
                multiplier: 2.0,
                jitter: 1.0,
            })
    }

    fn store(&self) -> Store {
        Store::new(self.config().build().unwrap())
    }

    /// The lock object's JSON, or None.
    async fn object(&self, key: &str) -> Option<Value> {
        match s3_client_for(&Server::Moto.endpoint())
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(o) => {
                Some(serde_json::from_slice(&o.body.collect().await.unwrap().into_bytes()).unwrap())
            }
            Err(_) => None,
        }
    }
}

fn fence(o: &AcquireOutcome) -> u64 {
    match o {
        AcquireOutcome::Acquired { fence, .. } => fence.expect("s3 locks have fencing tokens"),
        AcquireOutcome::Held(h) => panic!("held by {h}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_api_on_an_s3_bucket() {
    let env = S3Env::new().await;
    let store = env.store();
    let t = env.clock.now();
    let a = store.lock("orders", 30).unwrap();
    let b = store.lock("orders", 30).unwrap();
    let f1 = fence(&a.acquire().await.unwrap());
    // The object: the lock item's facts as JSON, the owner typed as Laravel stores it.
    let obj = env.object("app_orders").await.expect("the lock object");
    assert_eq!(obj["owner"]["S"], format!("s:16:\"{}\";", a.owner()));
    assert_eq!(obj["expires_at"], t + 30);
    assert_eq!(obj["fence"], f1);
    assert_eq!(obj["attempt"].as_str().unwrap().len(), 16);

    match b.acquire().await.unwrap() {
        AcquireOutcome::Held(h) => {
            assert_eq!(h.owner.as_deref(), Some(a.owner()));
            assert_eq!((h.expires_at, h.fence), (Some(t + 30), Some(f1)));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        b.release().await.unwrap(),
        ReleaseOutcome::HeldByOther(_)
    ));
    assert!(!b.refresh(Some(60)).await.unwrap(), "not b's");
    assert!(a.is_owned().await.unwrap() && b.is_locked().await.unwrap());
    assert!(a.refresh(Some(60)).await.unwrap());
    assert_eq!(
        env.object("app_orders").await.unwrap()["expires_at"],
        t + 60
    );
    // Another handle with the same owner is refused, but may release (restoreLock).
    let twin = store.restore_lock("orders", a.owner()).unwrap();
    assert!(!twin.acquire().await.unwrap().is_acquired());
    assert_eq!(twin.release().await.unwrap(), ReleaseOutcome::Released);
    assert!(
        env.object("app_orders").await.is_none(),
        "released: the object is deleted"
    );
    // `a` still holds its lease: the lock ended under it (issue 36); then, holding none, not held.
    assert_eq!(a.release().await.unwrap_err().kind(), ErrorKind::LeaseLost);
    assert_eq!(a.release().await.unwrap(), ReleaseOutcome::NotHeld);
    assert_eq!(b.current_holder().await.unwrap(), None);
    let f2 = fence(&b.acquire().await.unwrap());
    assert!(f2 > f1, "fencing tokens grow: {f2} after {f1}");

    // Numeric owners are typed N, as Laravel stores them, and released by restoring them.
    let n = store.lock_with_owner("num", 10, "12345").unwrap();
    assert!(n.acquire().await.unwrap().is_acquired());
    assert_eq!(env.object("app_num").await.unwrap()["owner"]["N"], "12345");
    let restored = store.restore_lock("num", "12345").unwrap();
    assert_eq!(restored.release().await.unwrap(), ReleaseOutcome::Released);
    b.force_release().await.unwrap();
    assert!(!b.is_locked().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lock_is_taken_over_not_left_forever() {
    let env = S3Env::new().await;
    // With the default margin (0, Laravel's rule): taken over once `expires_at < now`.
    let first = env.store().lock("first", 10).unwrap();
    assert!(first.acquire().await.unwrap().is_acquired());
    env.clock.advance(10);
    let twin = env.store().lock("first", 10).unwrap();
    assert!(
        !twin.acquire().await.unwrap().is_acquired(),
        "expires_at == now: held"
    );
    env.clock.advance(1);
    assert!(
        twin.acquire().await.unwrap().is_acquired(),
        "expires_at < now: taken over"
    );
    // With a margin set (2 s): past its expiry but within the margin, still held.
    let store = Store::new(
        env.config()
            .clock_skew_margin(Duration::from_secs(2))
            .build()
            .unwrap(),
    );
    let a = store.lock("job", 10).unwrap();
    let fa = fence(&a.acquire().await.unwrap());
    env.clock.advance(11);
    assert!(!store
        .lock("job", 10)
        .unwrap()
        .acquire()
        .await
        .unwrap()
        .is_acquired());
    env.clock.advance(2);
    let b = store.lock("job", 10).unwrap();
    let fb = fence(&b.acquire().await.unwrap());
    assert_eq!(
        fb,
        fa + 1,
        "a takeover replaces the object: the token goes up by one"
    );
    // The late holder can neither refresh nor release the new holder's lock.
    // Its lease, by its own clock, is not over: a lost lease (issue 36), then the outcome.
    assert!(!a.refresh(None).await.unwrap());
    assert_eq!(a.release().await.unwrap_err().kind(), ErrorKind::LeaseLost);
    assert!(matches!(
        a.release().await.unwrap(),
        ReleaseOutcome::HeldByOther(_)
    ));
    assert!(b.is_owned().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_and_with_lock() {
    let env = S3Env::new().await;
    let store = env.store();
    let holder = store.lock("w", 30).unwrap();
    assert!(holder.acquire().await.unwrap().is_acquired());
    let waiter = store.lock("w", 30).unwrap();
    let err = waiter.block(Duration::from_millis(100)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockTimeout);
    let release = {
        let h = holder.clone();
        tokio::spawn(async move { h.release().await.unwrap() })
    };
    waiter.block(Duration::from_secs(10)).await.unwrap();
    assert_eq!(release.await.unwrap(), ReleaseOutcome::Released);
    waiter.release().await.unwrap();
    let v = store
        .lock("w", 30)
        .unwrap()
        .with_lock(Duration::from_secs(5), |l| async move {
            assert!(l.lock().is_owned().await.unwrap());
            assert!(l.fence().is_some());
            7
        })
        .await
        .unwrap();
    assert_eq!(v, 7);
    assert!(!store.lock("w", 30).unwrap().is_locked().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_acquirers_never_overlap() {
    let env = Arc::new(S3Env::new().await);
    let (tasks_n, cycles) = (10, 12);
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..tasks_n {
        let (env, inside, overlaps, done) =
            (env.clone(), inside.clone(), overlaps.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let store = env.store();
            for _ in 0..cycles {
                let lock = store.lock("shared", 30).unwrap();
                lock.block(Duration::from_secs(60)).await.unwrap();
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                done.fetch_add(1, Ordering::SeqCst);
                assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    assert_eq!(done.load(Ordering::SeqCst), tasks_n * cycles);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_race_has_one_winner() {
    let env = Arc::new(S3Env::new().await);
    let store = env.store();
    for round in 0..5 {
        let name = format!("race{round}");
        let old = store.lock(&name, 10).unwrap();
        let f0 = fence(&old.acquire().await.unwrap());
        env.clock.advance(13); // expired, past the margin
        let mut tasks = Vec::new();
        for _ in 0..10 {
            let (store, name) = (store.clone(), name.clone());
            tasks.push(tokio::spawn(async move {
                store.lock(&name, 10).unwrap().acquire().await.unwrap()
            }));
        }
        let mut winners = Vec::new();
        for t in tasks {
            if let o @ AcquireOutcome::Acquired { .. } = t.await.unwrap() {
                winners.push(fence(&o));
            }
        }
        assert_eq!(
            winners,
            vec![f0 + 1],
            "round {round}: exactly one takes the expired lock over"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_by_overwrite_keeps_the_fence_going() {
    let env = S3Env::new().await;
    let store = Store::new(env.config().s3_release_by_overwrite(true).build().unwrap());
    let a = store.lock("o", 30).unwrap();
    let f = fence(&a.acquire().await.unwrap());
    assert_eq!(a.release().await.unwrap(), ReleaseOutcome::Released);
    let obj = env.object("app_o").await.expect("a released object stays");
    assert_eq!(
        (obj["expires_at"].as_i64(), obj["fence"].as_u64()),
        (Some(0), Some(f))
    );
    assert_eq!(a.current_holder().await.unwrap(), None, "free");
    assert_eq!(a.release().await.unwrap(), ReleaseOutcome::NotHeld);
    let b = store.lock("o", 30).unwrap();
    assert_eq!(fence(&b.acquire().await.unwrap()), f + 1);
    // The variable selects it too.
    let vars = StoreConfig::from_vars(|k| match k {
        "DDBLOCK_BACKEND" => Some("s3".into()),
        "DDBLOCK_S3_BUCKET" => Some(env.bucket.clone()),
        "DDBLOCK_S3_RELEASE" => Some("overwrite".into()),
        _ => None,
    })
    .unwrap()
    .build()
    .unwrap();
    assert_eq!(vars.lock_backend(), LockBackendKind::S3);
    assert!(vars.s3_release_by_overwrite());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration_and_bad_input() {
    let env = S3Env::new().await;
    let no_bucket = StoreConfig::builder()
        .lock_backend(LockBackendKind::S3)
        .build()
        .unwrap_err();
    assert_eq!(no_bucket.kind(), ErrorKind::Config);
    assert!(
        no_bucket.to_string().contains("DDBLOCK_S3_BUCKET"),
        "{no_bucket}"
    );
    for bad in ["Upper", "ab", "-dash", "under_score"] {
        let e = env.config().s3_bucket(bad).build().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config, "{bad}");
    }
    assert_eq!(
        StoreConfig::from_vars(|k| (k == "DDBLOCK_BACKEND").then(|| "redis".into()))
            .unwrap_err()
            .kind(),
        ErrorKind::Config
    );
    let missing = Store::new(
        env.config()
            .s3_bucket("no-such-bucket-here")
            .build()
            .unwrap(),
    );
    let e = missing.lock("x", 10).unwrap().acquire().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert!(e.to_string().contains("no-such-bucket-here"), "{e}");
    let long = "é".repeat(600); // 1200 bytes: under DynamoDB's 2048, over S3's 1024
    let e = env
        .store()
        .lock(&long, 10)
        .unwrap()
        .acquire()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidKey, "{e}");
}
