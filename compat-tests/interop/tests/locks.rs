//! Locks across languages: Laravel 8.83's real `DynamoDbLock` (compat-tests/laravel/harness.php)
//! and ddblock on one table, for every key layout on moto and dynalite. Each side sees, releases,
//! waits for, refreshes and takes over the other's locks; ttl 0 and numeric owners read alike.
//! Tests: `<server>::<layout>::<scenario>`, each with its own table and harness.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue as Av;
use ddblock::{AcquireOutcome, PhpValue, ReleaseOutcome, StoredValue};
use ddblock_compat::{
    expires_at, in_range, interop_tests, laravel_item, laravel_lock_key, laravel_view, now,
    php_str, serialized_owner, sleep_until_after, value_attr, Interop,
};

// ---- 1-4: locks across languages ---------------------------------------------------------------

/// 1. A lock held by PHP is seen held by Rust with PHP's owner and expiry; Rust cannot take it.
async fn php_lock_seen_by_rust(t: &Interop) {
    let t0 = now();
    let php = t.php.acquire("orders", 30, None).await;
    let t1 = now();
    assert!(php.acquired, "PHP could not take a free lock");
    assert_eq!(php.owner.len(), 16, "Laravel's Str::random() owner");

    // Same key on both sides: exactly one item, where Laravel's layout puts it.
    let key = t.lock_key("orders");
    assert_eq!(key, laravel_lock_key(t, "orders"), "ddblock's lock key");
    assert_eq!(t.keys().await, vec![key.clone()], "PHP wrote elsewhere");

    let lock = t.store.lock("orders", 30).unwrap();
    let holder = lock
        .current_holder()
        .await
        .unwrap()
        .expect("Rust sees PHP's lock as free");
    assert_eq!(holder.owner.as_deref(), Some(php.owner.as_str()), "owner");
    assert_eq!(
        holder.value,
        Some(StoredValue::String(serialized_owner(&php.owner)))
    );
    let exp = holder.expires_at.expect("PHP's lock has an expiry");
    in_range("expires_at", exp, t0 + 30, t1 + 30);
    assert!(lock.is_locked().await.unwrap());
    assert!(lock.is_owned_by(&php.owner).await.unwrap());
    assert!(!lock.is_owned().await.unwrap(), "Rust's fresh owner");

    match lock.acquire().await.unwrap() {
        AcquireOutcome::Held(h) => {
            assert_eq!(h.owner.as_deref(), Some(php.owner.as_str()), "holder");
            assert_eq!(h.expires_at, Some(exp), "holder's expiry");
        }
        other => panic!("Rust took a lock PHP holds: {other:?}"),
    }
    assert_eq!(t.php.lock_get("orders").await, php_str(&php.owner));

    // Acquiring again with the holder's own owner: Laravel says false (its add() fails), and so
    // does ddblock: only an attempt's own write is recovered, never another handle's.
    assert!(!t.php.acquire("orders", 30, Some(&php.owner)).await.acquired);
    let same = t.store.lock_with_owner("orders", 30, &php.owner).unwrap();
    assert!(
        matches!(same.acquire().await.unwrap(), AcquireOutcome::Held(h) if h.owner.as_deref() == Some(php.owner.as_str()))
    );
    assert_eq!(
        expires_at(&t.raw_some(&key).await),
        exp,
        "expiry was changed"
    );
}

/// 2. Rust `restore_lock(name, php_owner).release()` frees PHP's lock; PHP can take it again.
async fn rust_releases_php_lock(t: &Interop) {
    let php = t.php.acquire("orders", 30, None).await;
    assert!(php.acquired);
    let key = t.lock_key("orders");

    // The wrong owner deletes nothing and is told who holds the lock.
    match t
        .store
        .restore_lock("orders", "not-the-owner")
        .unwrap()
        .release()
        .await
        .unwrap()
    {
        ReleaseOutcome::HeldByOther(h) => assert_eq!(h.owner.as_deref(), Some(&*php.owner)),
        other => panic!("release by a wrong owner: {other:?}"),
    }
    assert!(
        t.raw(&key).await.is_some(),
        "a wrong owner deleted the lock"
    );

    let restored = t.store.restore_lock("orders", &php.owner).unwrap();
    assert_eq!(restored.release().await.unwrap(), ReleaseOutcome::Released);
    assert!(
        t.raw(&key).await.is_none(),
        "item still there after Released"
    );
    assert_eq!(restored.release().await.unwrap(), ReleaseOutcome::NotHeld);
    assert_eq!(t.php.lock_get("orders").await, PhpValue::Null);

    let again = t.php.acquire("orders", 30, None).await;
    assert!(again.acquired, "PHP cannot take the lock Rust released");
    assert_ne!(again.owner, php.owner);
}

/// 3. PHP `restoreLock(name, rust_owner)->release()` frees a lock Rust took.
async fn php_releases_rust_lock(t: &Interop) {
    let lock = t.store.lock("orders", 30).unwrap();
    assert!(matches!(
        lock.acquire().await.unwrap(),
        AcquireOutcome::Acquired {
            recovered: false,
            ..
        }
    ));
    let key = t.lock_key("orders");
    assert_eq!(t.keys().await, vec![laravel_lock_key(t, "orders")]);
    assert_eq!(t.php.lock_get("orders").await, php_str(lock.owner()));

    assert!(
        !t.php.release("orders", "someone-else").await,
        "PHP released with a wrong owner"
    );
    assert!(t.raw(&key).await.is_some());

    assert!(
        t.php.release("orders", lock.owner()).await,
        "Laravel's release of Rust's lock with Rust's owner returned false"
    );
    assert!(t.raw(&key).await.is_none(), "item still there");
    assert_eq!(lock.current_holder().await.unwrap(), None);
    // Rust's handle still holds its lease: its release's first send finds the lock gone, which it
    // cannot tell from a force-release under it, so it reports the lease lost (semantics.md,
    // "Releasing"); a handle that hands its owner over should not release it again.
    let lost = lock.release().await.unwrap_err();
    assert_eq!(lost.kind(), ddblock::ErrorKind::LeaseLost, "{lost}");
    assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::NotHeld);
    assert!(lock.acquire().await.unwrap().is_acquired());
}

/// 4. Rust `block()` on a PHP-held lock gets it right after PHP releases (~200 ms later).
async fn rust_block_waits_for_php_release(t: &Interop) {
    let php = t.php.acquire("orders", 30, None).await;
    assert!(php.acquired);
    let lock = t.store.lock("orders", 30).unwrap();
    assert!(!lock.acquire().await.unwrap().is_acquired());

    let harness = t.php.clone();
    let owner = php.owner.clone();
    let start = Instant::now();
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let released = harness.release("orders", &owner).await;
        (released, start.elapsed())
    });
    let t0 = now();
    let exp = lock
        .block(Duration::from_secs(10))
        .await
        .expect("Rust's block() gave up although PHP released");
    let waited = start.elapsed();
    let t1 = now();
    let (released, released_after) = releaser.await.unwrap();
    assert!(released, "PHP's release of its own lock returned false");
    assert!(
        waited >= Duration::from_millis(200),
        "Rust acquired after {waited:?}, before PHP released"
    );
    assert!(
        waited < released_after + Duration::from_millis(1500),
        "Rust acquired {waited:?} after start, PHP released by {released_after:?}: too slow"
    );
    in_range("expires_at", exp, t0 + 30, t1 + 30);
    assert!(lock.is_owned().await.unwrap());
    assert_eq!(t.php.lock_get("orders").await, php_str(lock.owner()));
}

/// 4b. PHP `block()` waiting on a Rust-held lock gets it once Rust releases (~200 ms later).
async fn php_block_waits_for_rust_release(t: &Interop) {
    let lock = t.store.lock("orders", 30).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    let releaser = {
        let lock = lock.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            lock.release().await
        })
    };
    let start = Instant::now();
    let php = t.php.block("orders", 30, 5, None, Some(50)).await;
    let waited = start.elapsed();
    assert_eq!(
        releaser.await.unwrap().unwrap(),
        ReleaseOutcome::Released,
        "Rust's release of its own lock"
    );
    assert!(
        php.acquired,
        "Laravel's block() timed out although Rust released"
    );
    assert!(
        waited >= Duration::from_millis(200),
        "PHP acquired after {waited:?}, before Rust released"
    );
    assert!(
        lock.is_owned_by(&php.owner).await.unwrap(),
        "the lock is not PHP's after its block()"
    );
}

// ---- 5-7 --------------------------------------------------------------------------------------

/// 5. ttl 0 means a day, both ways.
async fn ttl_zero_is_one_day_both_ways(t: &Interop) {
    let t0 = now();
    let php = t.php.acquire("php-zero", 0, None).await;
    let t1 = now();
    assert!(php.acquired);
    let holder = t
        .store
        .lock("php-zero", 0)
        .unwrap()
        .current_holder()
        .await
        .unwrap()
        .expect("PHP's ttl-0 lock is free for Rust");
    assert_eq!(holder.owner.as_deref(), Some(&*php.owner));
    in_range(
        "PHP's expires_at",
        holder.expires_at.unwrap(),
        t0 + 86_400,
        t1 + 86_400,
    );

    let lock = t.store.lock("rust-zero", 0).unwrap();
    assert_eq!(lock.ttl_secs(), 86_400);
    let t0 = now();
    let out = lock.acquire().await.unwrap();
    let t1 = now();
    let AcquireOutcome::Acquired {
        expires_at: exp, ..
    } = out
    else {
        panic!("Rust could not take a free lock: {out:?}")
    };
    in_range("Rust's expires_at", exp, t0 + 86_400, t1 + 86_400);
    let key = laravel_lock_key(t, "rust-zero");
    let seen_by_php = t
        .php
        .get_item(&key)
        .await
        .expect("PHP's GetItem finds no Rust lock");
    assert_eq!(
        laravel_view(seen_by_php),
        laravel_item(&key, Av::S(serialized_owner(lock.owner())), exp)
    );
}

/// 6. Numeric owners both ways: `N` items, Laravel cannot release them, ddblock can.
async fn numeric_owners_both_ways(t: &Interop) {
    let php = t.php.acquire("num", 30, Some("12345")).await;
    assert!(php.acquired && php.owner == "12345", "{php:?}");
    let key = t.lock_key("num");
    assert_eq!(value_attr(&t.raw_some(&key).await), &Av::N("12345".into()));

    let lock = t.store.restore_lock("num", "12345").unwrap();
    let holder = lock.current_holder().await.unwrap().expect("held");
    assert_eq!(holder.owner.as_deref(), Some("12345"));
    assert_eq!(holder.value, Some(StoredValue::Number("12345".into())));
    assert!(lock.is_owned().await.unwrap());

    // Laravel's bug: get() reads int 12345, compares === with '12345', skips the delete.
    assert!(
        !t.php.release("num", "12345").await,
        "Laravel 8.83 released a numeric-owner lock (expected its === bug)"
    );
    assert!(t.raw(&key).await.is_some(), "Laravel deleted the lock");
    assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
    assert!(t.raw(&key).await.is_none());

    // Rust-taken numeric owner: N 12345, PHP reads int 12345.
    let lock = t.store.lock_with_owner("num2", 30, "12345").unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    let key2 = laravel_lock_key(t, "num2");
    assert_eq!(value_attr(&t.raw_some(&key2).await), &Av::N("12345".into()));
    assert_eq!(t.php.lock_get("num2").await, PhpValue::Int(12345));
    assert!(!t.php.acquire("num2", 30, Some("54321")).await.acquired);
    assert!(
        !t.php.release("num2", "12345").await,
        "Laravel released a numeric-owner lock"
    );
    assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);

    // Leading zeros: real DynamoDB and dynalite store N 7 for owner '007'; the condition is
    // numeric, so ddblock still releases it.
    assert!(t.php.acquire("zeros", 30, Some("007")).await.acquired);
    let stored = value_attr(&t.raw_some(&t.lock_key("zeros")).await).clone();
    let expected = if t.server.normalises_numbers() {
        "7"
    } else {
        "007"
    };
    assert_eq!(stored, Av::N(expected.into()));
    let lock = t.store.restore_lock("zeros", "007").unwrap();
    assert!(
        lock.is_owned().await.unwrap(),
        "owner '007' vs N {stored:?}"
    );
    assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
}

/// 7. A ttl-1 lock taken by one side is taken over by the other once it expired (real time).
async fn expired_lock_taken_over_both_ways(t: &Interop) {
    let php = t.php.acquire("from-php", 1, None).await;
    assert!(php.acquired);
    let php_exp = expires_at(&t.raw_some(&t.lock_key("from-php")).await);
    let rust = t.store.lock("from-rust", 1).unwrap();
    let AcquireOutcome::Acquired {
        expires_at: rust_exp,
        ..
    } = rust.acquire().await.unwrap()
    else {
        panic!("Rust could not take a free lock")
    };

    // Before expiry (when the call surely ran before it), neither side can take the other's.
    let taker = t.store.lock("from-php", 10).unwrap();
    let early = taker.acquire().await.unwrap();
    if now() <= php_exp {
        assert!(!early.is_acquired(), "Rust took PHP's live lock");
    }
    let early = t.php.acquire("from-rust", 10, None).await;
    if now() <= rust_exp {
        assert!(!early.acquired, "PHP took Rust's live lock");
    }

    // PHP takes over at `expires_at < now`; ddblock waits out its clock-skew margin too (0 by
    // default: the same rule).
    let margin = ddblock::config::DEFAULT_CLOCK_SKEW_MARGIN.as_secs() as i64;
    sleep_until_after(php_exp.max(rust_exp) + margin).await;

    let t0 = now();
    let out = taker.acquire().await.unwrap();
    let t1 = now();
    match out {
        AcquireOutcome::Acquired {
            expires_at,
            recovered: false,
            ..
        } => in_range("takeover expires_at", expires_at, t0 + 10, t1 + 10),
        other => panic!("Rust could not take over PHP's expired lock: {other:?}"),
    }
    let php_taker = t.php.acquire("from-rust", 10, None).await;
    assert!(
        php_taker.acquired,
        "PHP could not take over Rust's expired lock"
    );

    // The former holders' releases leave the new holders alone.
    assert!(!t.php.release("from-php", &php.owner).await);
    assert!(
        taker.is_owned().await.unwrap(),
        "PHP's stale release removed Rust's lock"
    );
    match rust.release().await.unwrap() {
        ReleaseOutcome::HeldByOther(h) => {
            assert_eq!(h.owner.as_deref(), Some(&*php_taker.owner))
        }
        other => panic!("Rust's stale release: {other:?}"),
    }
    assert_eq!(t.php.lock_get("from-rust").await, php_str(&php_taker.owner));
}

/// 8. Stock Laravel reads a lock released with the keep-fence release as free, and takes it.
///
/// The item stays, expired, with its fence and no owner: `getCurrentOwner()` reads nothing, and
/// Laravel's `lock()->get()` (`add()`) takes it, dropping the fence; its release deletes it.
async fn keep_fence_release_is_free_to_laravel(t: &Interop) {
    let cfg = ddblock::StoreConfig::builder()
        .table(&t.table)
        .prefix(&t.prefix)
        .layout(t.layout)
        .release_mode(ddblock::ReleaseMode::KeepFence)
        .build()
        .unwrap();
    let store = ddblock::Store::with_client(t.client.clone(), cfg);
    let lock = store.lock("kept", 30).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    let fence = lock.fence().expect("a fence");
    assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
    let key = t.lock_key("kept");
    let item = t.raw_some(&key).await;
    assert_eq!(item.get("ddblock_fence"), Some(&Av::N(fence.to_string())));
    assert!(expires_at(&item) < now(), "expired");
    assert_eq!(
        t.php.lock_get("kept").await,
        PhpValue::Null,
        "Laravel reads it free"
    );
    let php = t.php.acquire("kept", 30, None).await;
    assert!(php.acquired, "Laravel's add() takes the released lock");
    let item = t.raw_some(&key).await;
    assert!(
        !item.contains_key("ddblock_fence"),
        "Laravel's PutItem drops the fence"
    );
    assert_eq!(t.php.lock_get("kept").await, php_str(&php.owner));
    assert!(t.php.release("kept", &php.owner).await);
    assert!(t.raw(&key).await.is_none());
}

// ---- 12: refresh (Laravel 12) --------------------------------------------------------------------

/// Rust's `restore_lock(name, owner).refresh(Some(secs))`.
async fn rust_refresh(t: &Interop, name: &str, owner: &str, secs: i64) -> bool {
    let lock = t.store.restore_lock(name, owner).unwrap();
    lock.refresh(Some(secs)).await.unwrap()
}

/// 12. PHP refreshes Rust's lock with Rust's owner, and Rust refreshes PHP's with PHP's owner.
async fn refresh_across_languages(t: &Interop) {
    let lock = t.store.lock("rust-held", 5).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    assert!(!t.php.refresh("rust-held", "someone-else", 60).await);
    let t0 = now();
    assert!(
        t.php.refresh("rust-held", lock.owner(), 60).await,
        "PHP could not refresh Rust's lock with Rust's owner"
    );
    let t1 = now();
    let h = lock.current_holder().await.unwrap().expect("held");
    in_range("refreshed by PHP", h.expires_at.unwrap(), t0 + 60, t1 + 60);
    assert!(lock.is_owned().await.unwrap());

    let php = t.php.acquire("php-held", 5, None).await;
    assert!(php.acquired);
    assert!(!rust_refresh(t, "php-held", "someone-else", 60).await);
    let t0 = now();
    assert!(
        rust_refresh(t, "php-held", &php.owner, 60).await,
        "Rust could not refresh PHP's lock with PHP's owner"
    );
    let t1 = now();
    let key = laravel_lock_key(t, "php-held");
    let item = t.php.get_item(&key).await.expect("PHP's lock is gone");
    in_range("refreshed by Rust", expires_at(&item), t0 + 60, t1 + 60);
    assert_eq!(value_attr(&item), &Av::S(serialized_owner(&php.owner)));

    // Numeric owners (N) both ways.
    assert!(t.php.acquire("php-num", 5, Some("777")).await.acquired);
    assert!(rust_refresh(t, "php-num", "777", 30).await);
    let num = t.store.lock_with_owner("rust-num", 5, "888").unwrap();
    assert!(num.acquire().await.unwrap().is_acquired());
    assert!(t.php.refresh("rust-num", "888", 30).await);
    let exp = expires_at(&t.raw_some(&t.lock_key("rust-num")).await);
    assert!(
        exp >= now() + 25,
        "PHP's refresh of N owner 888 did not extend it"
    );
}

interop_tests!(
    every_layout [
        php_lock_seen_by_rust,
        rust_releases_php_lock,
        php_releases_rust_lock,
        rust_block_waits_for_php_release,
        php_block_waits_for_rust_release,
        ttl_zero_is_one_day_both_ways,
        numeric_owners_both_ways,
        expired_lock_taken_over_both_ways,
        keep_fence_release_is_free_to_laravel,
    ] + laravel12 [refresh_across_languages]
);
