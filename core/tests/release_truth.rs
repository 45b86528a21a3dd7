//! What a release says happened (issue 36), through the fault proxy in front of moto and
//! dynalite: a lock that vanished under its holder (its release's FIRST send found it gone or
//! another owner's) is a lost lease, never swallowed; a resend that finds it gone after a lost
//! answer is a release, in both release modes; a release whose answers were all lost is settled
//! by one consistent read. docs/semantics.md, "Releasing".

mod common;

use std::time::Duration;

use common::{on_servers, FaultyTable, Server};
use ddblock::{Error, ErrorKind, ReleaseMode, ReleaseOutcome, Store, StoreConfigBuilder};
use ddblock_fault_proxy::{FaultConfig, DROPPED, DROPPED_REQUEST, FORWARDED_OK};

/// A config through the proxy: the SDK's 3 attempts, short attempt timeouts.
fn config(f: &FaultyTable) -> StoreConfigBuilder {
    f.through()
        .max_attempts(3)
        .attempt_timeout(Duration::from_millis(400))
}

fn store(f: &FaultyTable, mode: ReleaseMode) -> Store {
    Store::new(config(f).release_mode(mode).build().unwrap())
}

/// A store of the same table, straight to the server (another process, to the proxy).
fn direct(f: &FaultyTable) -> Store {
    Store::new(f.direct().build().unwrap())
}

/// The next requests of `op` get `faults`, in order.
fn scripted(op: &str, faults: &[&str]) -> FaultConfig {
    let faults = faults.iter().map(|f| (*f).to_owned()).collect();
    FaultConfig {
        sequence: [(op.to_owned(), faults)].into(),
        ..FaultConfig::default()
    }
}

/// The request a release sends in `mode`.
fn release_op(mode: ReleaseMode) -> &'static str {
    match mode {
        ReleaseMode::Delete => "DeleteItem",
        ReleaseMode::KeepFence => "UpdateItem",
    }
}

const MODES: [ReleaseMode; 2] = [ReleaseMode::Delete, ReleaseMode::KeepFence];

/// A foreign writer removes the lock item while the body runs (the heartbeat's next refresh is
/// far off): the body's end is a lost lease, with the work's value kept. Before issue 36 the
/// release found the lock gone, took it for a resend after a lost answer, and `with_lock`
/// succeeded.
async fn an_item_removed_under_a_running_body_is_a_lost_lease(server: Server) {
    let f = FaultyTable::new(server).await;
    for mode in MODES {
        let store = store(&f, mode);
        let direct = direct(&f);
        let err = store
            .lock("removed", 30)
            .unwrap()
            .with_lock(Duration::from_secs(5), |_lease| async move {
                let foreign = direct.lock("removed", 30).unwrap();
                assert!(foreign.force_release().await.unwrap(), "the item was there");
                "the work's value"
            })
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::LeaseLost, "{mode:?}: {err}");
        assert!(
            err.error
                .to_string()
                .contains("first send found the lock gone within our lease"),
            "{mode:?}: {err}"
        );
        assert_eq!(err.value, Some("the work's value"));
    }
}

/// A plain `release()` of a held lock whose item was taken over by another owner meanwhile:
/// `LeaseLost`, naming the holder; the other owner's lock stays. A handle that holds no lease
/// (released already, or restored) still gets the outcome.
async fn a_release_finding_another_owner_is_a_lost_lease(server: Server) {
    let f = FaultyTable::new(server).await;
    for mode in MODES {
        let name = format!("taken-{mode:?}");
        let store = store(&f, mode);
        let ours = store.lock(&name, 30).unwrap();
        assert!(ours.acquire().await.unwrap().is_acquired());
        let direct = direct(&f);
        direct
            .lock(&name, 30)
            .unwrap()
            .force_release()
            .await
            .unwrap();
        let theirs = direct.lock(&name, 30).unwrap();
        assert!(theirs.acquire().await.unwrap().is_acquired());
        let err = ours.release().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::LeaseLost, "{mode:?}: {err}");
        assert!(err.to_string().contains("held by"), "{mode:?}: {err}");
        assert!(theirs.is_owned().await.unwrap(), "{mode:?}: theirs stays");
        // This handle holds no lease any more: the outcome, as for any handle.
        assert!(matches!(
            ours.release().await.unwrap(),
            ReleaseOutcome::HeldByOther(_)
        ));
        let restored = store.restore_lock(&name, ours.owner()).unwrap();
        assert!(matches!(
            restored.release().await.unwrap(),
            ReleaseOutcome::HeldByOther(_)
        ));
    }
}

/// The release's first send lands and its answer is lost; the SDK's resend finds the lock
/// released: a release (no lost lease), with the same answer in both release modes.
async fn a_release_whose_first_answer_is_lost_is_still_a_release(server: Server) {
    let f = FaultyTable::new(server).await;
    for mode in MODES {
        let name = format!("lost-answer-{mode:?}");
        let store = store(&f, mode);
        let lock = store.lock(&name, 30).unwrap();
        assert!(lock.acquire().await.unwrap().is_acquired());
        f.proxy.set_faults(scripted(release_op(mode), &["drop"]));
        assert_eq!(
            lock.release().await.unwrap(),
            ReleaseOutcome::NotHeld,
            "{mode:?}"
        );
        assert_eq!(f.proxy.stats().count(release_op(mode), DROPPED), 1);
        assert!(!lock.is_locked().await.unwrap(), "{mode:?}: released");
        // The same at a body's end: Ok.
        f.proxy.set_faults(FaultConfig::default());
        let held = store.lock(&name, 30).unwrap().enter(Duration::ZERO).await;
        let held = held.unwrap();
        f.proxy.set_faults(scripted(release_op(mode), &["drop"]));
        held.finish().await.unwrap();
        f.proxy.set_faults(FaultConfig::default());
    }
}

/// Every send of the release reaches the server and every answer is lost: one consistent read
/// settles it. The first send released the lock, so the read finds it not ours: released.
async fn a_release_whose_answers_were_all_lost_is_settled_by_a_read(server: Server) {
    let f = FaultyTable::new(server).await;
    for mode in MODES {
        let name = format!("all-lost-{mode:?}");
        let store = store(&f, mode);
        let lock = store.lock(&name, 30).unwrap();
        assert!(lock.acquire().await.unwrap().is_acquired());
        f.proxy.set_faults(FaultConfig {
            drop_response_rate: 1.0,
            drop_ops: vec![release_op(mode).to_owned()],
            ..FaultConfig::default()
        });
        let out = lock.release().await;
        let stats = f.proxy.stats();
        f.proxy.set_faults(FaultConfig::default());
        assert_eq!(out.unwrap(), ReleaseOutcome::Released, "{mode:?}");
        assert_eq!(
            stats.count(release_op(mode), DROPPED),
            3,
            "{mode:?}: 3 sends"
        );
        assert_eq!(
            stats.count("GetItem", FORWARDED_OK),
            1,
            "{mode:?}: one read"
        );
        assert!(!lock.is_locked().await.unwrap(), "{mode:?}");
    }
}

/// Every send of the release is lost before the server (nothing lands): the read finds the lock
/// still ours, and the error says the release failed and the lock frees itself at its expiry.
async fn a_release_that_never_landed_says_the_lock_stays_until_its_expiry(server: Server) {
    let f = FaultyTable::new(server).await;
    for mode in MODES {
        let name = format!("never-landed-{mode:?}");
        let store = store(&f, mode);
        let lock = store.lock(&name, 30).unwrap();
        assert!(lock.acquire().await.unwrap().is_acquired());
        f.proxy.set_faults(FaultConfig {
            drop_request_rate: 1.0,
            drop_request_ops: vec![release_op(mode).to_owned()],
            ..FaultConfig::default()
        });
        let err = lock.release().await.unwrap_err();
        let stats = f.proxy.stats();
        f.proxy.set_faults(FaultConfig::default());
        assert_eq!(stats.count(release_op(mode), DROPPED_REQUEST), 3);
        assert_eq!(
            stats.count("GetItem", FORWARDED_OK),
            1,
            "{mode:?}: one read"
        );
        assert!(
            matches!(err, Error::Transport { sent: true, .. }),
            "{mode:?}: {err:?}"
        );
        let text = err.to_string();
        assert!(text.contains("still ours"), "{mode:?}: {text}");
        assert!(
            text.contains("frees itself at its expiry"),
            "{mode:?}: {text}"
        );
        assert!(!text.contains("could not reach"), "{mode:?}: {text}");
        assert!(lock.is_owned().await.unwrap(), "{mode:?}: still held");
    }
}

on_servers!(
    an_item_removed_under_a_running_body_is_a_lost_lease,
    a_release_finding_another_owner_is_a_lost_lease,
    a_release_whose_first_answer_is_lost_is_still_a_release,
    a_release_whose_answers_were_all_lost_is_settled_by_a_read,
    a_release_that_never_landed_says_the_lock_stays_until_its_expiry,
);
