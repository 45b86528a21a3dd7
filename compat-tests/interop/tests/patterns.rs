//! The once-only guard and compare-and-set beside Laravel 8.83's real `DynamoDbStore`
//! (compat-tests/laravel/harness.php) on one table: Laravel reads the items, Laravel's own way to
//! claim (`Cache::add`) and ddblock's exclude each other, and a Laravel `put` or `increment`
//! between a versioned read and write makes the write fail instead of overwriting it.
//! Tests: `<server>::<layout>::<scenario>`, each with its own table and harness.

use ddblock::{CasOutcome, ClaimOutcome, OnceState, PhpValue};
use ddblock_compat::{interop_tests, Interop};

fn int(i: i64) -> PhpValue {
    PhpValue::Int(i)
}

async fn laravel_reads_and_counts_once_items(t: &Interop) {
    let once = t.store.once("evt", 30).unwrap();
    let claim = match once.claim().await.unwrap() {
        ClaimOutcome::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        t.php.get("evt").await,
        int(1),
        "Cache::get reads the counter"
    );
    assert!(
        !t.php.add("evt", &int(1), 30).await,
        "Cache::add cannot claim it"
    );
    assert_eq!(
        t.php.increment("evt", 1).await,
        Some(2),
        "Cache::increment counts as a caller"
    );
    let later = t.store.once("evt", 30).unwrap().claim().await.unwrap();
    assert_eq!(later.skipped().unwrap().claims, Some(3));
    assert_eq!(later.skipped().unwrap().state, OnceState::InProgress);
    claim.done().await.unwrap();
    assert_eq!(t.php.get("evt").await, int(3));
    assert_eq!(once.status().await.unwrap().state, OnceState::Done);
}

async fn a_laravel_add_claim_keeps_ddblock_out(t: &Interop) {
    // The PHP way to claim: Cache::add($event, 1, $ttl) is true for exactly one caller.
    assert!(t.php.add("evt", &int(1), 30).await);
    let st = t.store.once("evt", 30).unwrap().claim().await.unwrap();
    let st = st.skipped().expect("Laravel's claim holds");
    assert_eq!((st.state, st.claims), (OnceState::InProgress, Some(1)));
    assert_eq!(t.php.get("evt").await, int(1), "nothing written");
    assert!(t.php.forget("evt").await);
    assert!(t
        .store
        .once("evt", 30)
        .unwrap()
        .claim()
        .await
        .unwrap()
        .is_claimed());
}

async fn a_laravel_put_between_read_and_write_fails_the_write(t: &Interop) {
    let v = t
        .store
        .put_if_version("cfg", &PhpValue::from("ddblock"), 60, 0)
        .await
        .unwrap()
        .version()
        .unwrap();
    assert_eq!(t.php.get("cfg").await, PhpValue::from("ddblock"));
    let read = t.store.get_versioned("cfg").await.unwrap();
    assert!(t.php.put("cfg", &PhpValue::from("laravel"), 60).await);
    assert_eq!(
        t.store
            .put_if_version("cfg", &PhpValue::from("lost"), 60, v)
            .await
            .unwrap(),
        CasOutcome::Conflict
    );
    assert_eq!(
        t.store
            .put_if_unchanged("cfg", &read, &PhpValue::from("lost"), 60)
            .await
            .unwrap(),
        CasOutcome::Conflict
    );
    assert_eq!(
        t.php.get("cfg").await,
        PhpValue::from("laravel"),
        "not overwritten"
    );
    // Read again: Laravel's value, version 0; the write lands on it and Laravel reads it.
    let again = t.store.get_versioned("cfg").await.unwrap();
    assert_eq!(
        (again.value.clone(), again.version),
        (Some(PhpValue::from("laravel")), 0)
    );
    let out = t
        .store
        .put_if_unchanged("cfg", &again, &PhpValue::from("ddblock 2"), 60)
        .await
        .unwrap();
    assert!(matches!(out, CasOutcome::Written { .. }));
    assert_eq!(t.php.get("cfg").await, PhpValue::from("ddblock 2"));
}

async fn a_laravel_increment_fails_an_unchanged_write(t: &Interop) {
    t.store
        .put_if_version("n", &int(5), 60, 0)
        .await
        .unwrap()
        .version()
        .unwrap();
    let read = t.store.get_versioned("n").await.unwrap();
    assert_eq!(t.php.increment("n", 1).await, Some(6));
    assert_eq!(
        t.store
            .put_if_unchanged("n", &read, &int(50), 60)
            .await
            .unwrap(),
        CasOutcome::Conflict,
        "the value changed under the same version"
    );
    let up = t
        .store
        .update("n", 60, |v| match v {
            Some(PhpValue::Int(i)) => int(i + 1),
            other => panic!("{other:?}"),
        })
        .await
        .unwrap();
    assert_eq!(up.value, Some(int(7)));
    assert_eq!(t.php.get("n").await, int(7));
}

interop_tests! {
    laravel8: Laravel8 "app_" [
        laravel_reads_and_counts_once_items,
        a_laravel_add_claim_keeps_ddblock_out,
        a_laravel_put_between_read_and_write_fails_the_write,
        a_laravel_increment_fails_an_unchanged_write,
    ],
    laravel12: Laravel12 "app_" [
        laravel_reads_and_counts_once_items,
        a_laravel_add_claim_keeps_ddblock_out,
        a_laravel_put_between_read_and_write_fails_the_write,
        a_laravel_increment_fails_an_unchanged_write,
    ],
}
