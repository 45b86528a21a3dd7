//! Ambiguous writes: the proxy forwards a request and drops its response, the SDK retries, and the
//! lock still ends up in the right state with the right answer; throttling surfaces as a typed error.

use ddblock::{AcquireOutcome, ReleaseOutcome, Store, StoreConfig};
use ddblock_fault_proxy::{FaultConfig, DROPPED, FORWARDED_ERROR_PREFIX};
use ddblock_test_support::faulty::faulty;
use ddblock_test_support::{on_servers, Server};

/// Drops half of `op`'s responses; with [`SEED`] the first is dropped and the retry answered.
fn drop_once(op: &str, seed: u64) -> FaultConfig {
    FaultConfig {
        seed,
        drop_response_rate: 0.5,
        drop_ops: vec![op.into()],
        ..FaultConfig::default()
    }
}

async fn lost_answers_are_recovered(server: Server) {
    let up = server.endpoint();
    let table = format!("lost_{}", ddblock::lock::random_owner().to_lowercase());
    let direct = Store::connect(
        StoreConfig::builder()
            .table(&table)
            .endpoint(&up)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    ddblock_admin::Admin::new(&direct)
        .create_table(&ddblock_admin::CreateTableOptions::new().ttl(false))
        .await
        .unwrap();
    let proxy = faulty(&up, FaultConfig::default()).await.proxy;
    let cfg = StoreConfig::builder()
        .table(&table)
        .endpoint(proxy.url())
        .max_attempts(3)
        .build()
        .unwrap();
    let store = Store::connect(cfg).await.unwrap();
    let lock = store.lock("orders", 30).unwrap();

    // Acquire: the first UpdateItem lands but its answer is lost; the retry's condition fails on our
    // own item, which the lock recognises (moto and DynamoDB Local return it with the failure; on
    // dynalite one consistent read finds it).
    proxy.set_config(drop_once("UpdateItem", SEED)).unwrap();
    proxy.reset();
    let outcome = lock.acquire().await.unwrap();
    let stats = proxy.stats();
    assert_eq!(stats.count("UpdateItem", DROPPED), 1, "{stats:?}");
    assert_eq!(
        stats.count(
            "UpdateItem",
            &format!("{FORWARDED_ERROR_PREFIX}ConditionalCheckFailedException")
        ),
        1,
        "{stats:?}"
    );
    assert!(
        matches!(
            outcome,
            AcquireOutcome::Acquired {
                recovered: true,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(direct
        .lock_with_owner("orders", 30, lock.owner())
        .unwrap()
        .is_owned()
        .await
        .unwrap());

    // Release: the first DeleteItem lands but its answer is lost; the retry finds no item.
    proxy.set_config(drop_once("DeleteItem", SEED)).unwrap();
    proxy.reset();
    assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::NotHeld);
    let stats = proxy.stats();
    assert_eq!(stats.count("DeleteItem", DROPPED), 1, "{stats:?}");
    assert!(
        !direct
            .lock("orders", 30)
            .unwrap()
            .is_locked()
            .await
            .unwrap(),
        "the lock is free"
    );

    // Throttling that outlasts the SDK's retries is Error::Throttled, and nothing was written.
    proxy
        .set_config(FaultConfig {
            throttle_rate: 1.0,
            ..FaultConfig::default()
        })
        .unwrap();
    proxy.reset();
    let err = lock.acquire().await.unwrap_err();
    assert_eq!(err.kind(), ddblock::ErrorKind::Throttled, "{err}");
    assert_eq!(
        proxy
            .stats()
            .count("UpdateItem", ddblock_fault_proxy::THROTTLED),
        3
    );
    assert!(!direct
        .lock("orders", 30)
        .unwrap()
        .is_locked()
        .await
        .unwrap());
    proxy.shutdown().await;
}

/// A seed whose first drop decision drops and second forwards (the fault plan is deterministic).
const SEED: u64 = 6;

on_servers!(lost_answers_are_recovered);
