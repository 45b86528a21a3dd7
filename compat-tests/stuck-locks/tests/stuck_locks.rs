//! The bug, reproduced and fixed: under stale eventually consistent reads Laravel's release leaves
//! locks stuck; ddblock's, and Laravel's with the ddblock driver installed, leave none, never let two
//! holders in, and send one DeleteItem per release.

use ddblock_stuck_locks::{
    render, run_ddblock, run_laravel, run_laravel_driver, run_mixed, start_proxy, Options,
    SideReport,
};
use ddblock_test_support::{on_servers, Server};

async fn laravel_release_sticks_ddblock_release_does_not(server: Server) {
    let all_old = server.returns_all_old();
    let opts = Options {
        upstream: server.endpoint(),
        workers: 3,
        cycles: 30,
        ..Options::default()
    };
    let proxy = start_proxy(&opts).await.unwrap();
    let laravel = run_laravel(&opts, &proxy).await.unwrap();
    let driver = run_laravel_driver(&opts, &proxy).await.unwrap();
    let ddblock = run_ddblock(&opts, &proxy).await.unwrap();
    // All three on one table at once (a migration): they exclude each other, and the releases of
    // ddblock and of the driver still never stick.
    let mixed = run_mixed(&opts, &proxy).await.unwrap();
    proxy.shutdown().await;
    let sides = [
        mixed.laravel.clone(),
        mixed.driver.clone(),
        mixed.ddblock.clone(),
    ];
    println!("{}", render(&sides, &opts));
    assert_eq!(
        mixed.overlaps, 0,
        "two holders at once across Laravel, the driver and ddblock"
    );
    assert_eq!(sides.iter().map(|s| s.errors).sum::<usize>(), 0);
    assert_eq!(mixed.driver.stuck, 0, "{:?}", mixed.driver);
    assert_eq!(mixed.ddblock.stuck, 0, "{:?}", mixed.ddblock);
    assert!(sides.iter().map(|s| s.acquired).sum::<usize>() > 0);
    println!(
        "{}",
        render(&[laravel.clone(), driver.clone(), ddblock.clone()], &opts)
    );

    assert_eq!(laravel.errors, 0, "{laravel:?}");
    assert_eq!(driver.errors, 0, "{driver:?}");
    assert_eq!(ddblock.errors, 0, "{ddblock:?}");
    assert!(laravel.acquired > 0 && driver.acquired > 0 && ddblock.acquired > 0);
    // Laravel: its eventually consistent GetItem misses the owner it just wrote, so it skips the delete.
    assert!(
        laravel.stale_reads > 0,
        "the proxy served stale reads: {laravel:?}"
    );
    assert!(
        laravel.stuck > 0,
        "Laravel's release path leaves stuck locks under stale reads: {laravel:?}"
    );
    // ddblock, and Laravel with the driver: the same release path, the same figures.
    one_conditional_delete(&ddblock, all_old);
    one_conditional_delete(&driver, all_old);
}

/// Every release of a held lock deletes it, with exactly one request, never a read before it.
fn one_conditional_delete(side: &SideReport, all_old: bool) {
    assert_eq!(side.stuck, 0, "{side:?}");
    assert_eq!(side.released, side.acquired, "{side:?}");
    assert_eq!(side.overlaps, 0, "two holders at once: {side:?}");
    assert_eq!(
        side.requests.get("DeleteItem").copied().unwrap_or(0),
        side.acquired as u64,
        "{side:?}"
    );
    // One conditional write (UpdateItem) per attempt. moto and DynamoDB Local return the holder
    // with the failed write (ALL_OLD); dynalite does not, so there a failed write costs one consistent GetItem
    // and, if the lock was freed meanwhile, one more write.
    let puts = ["PutItem", "UpdateItem"]
        .iter()
        .map(|op| side.requests.get(*op).copied().unwrap_or(0))
        .sum::<u64>();
    let gets = side.requests.get("GetItem").copied().unwrap_or(0);
    if all_old {
        assert_eq!(puts, side.cycles as u64, "{side:?}");
        assert_eq!(gets, 0, "{side:?}");
    } else {
        assert!(
            puts >= side.cycles as u64 && puts <= (side.cycles as u64) + gets,
            "{side:?}"
        );
    }
    assert_eq!(
        side.stale_reads, 0,
        "the lock path makes no eventually consistent read: {side:?}"
    );
}

on_servers!(laravel_release_sticks_ddblock_release_does_not);
