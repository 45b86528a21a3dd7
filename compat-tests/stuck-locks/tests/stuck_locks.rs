//! The bug, reproduced and fixed: under stale eventually consistent reads Laravel's release leaves
//! locks stuck; ddblock's leaves none, never lets two holders in, and sends one DeleteItem per release.

use ddblock_stuck_locks::{render, run_ddblock, run_laravel, run_mixed, start_proxy, Options};

fn upstream(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run ./compat-tests/run-tests.sh, which starts the local servers")
    })
}

async fn compare(var: &str, all_old: bool) {
    let opts = Options {
        upstream: upstream(var),
        workers: 3,
        cycles: 30,
        ..Options::default()
    };
    let proxy = start_proxy(&opts).await.unwrap();
    let laravel = run_laravel(&opts, &proxy).await.unwrap();
    let ddblock = run_ddblock(&opts, &proxy).await.unwrap();
    // Both on one table at once (a migration): they exclude each other, and ddblock's releases
    // still never stick.
    let (php_side, rust_side, overlaps) = run_mixed(&opts, &proxy).await.unwrap();
    proxy.shutdown().await;
    println!("{}", render(&[php_side.clone(), rust_side.clone()], &opts));
    assert_eq!(overlaps, 0, "a PHP and a Rust holder at once");
    assert_eq!(php_side.errors + rust_side.errors, 0);
    assert_eq!(rust_side.stuck, 0, "{rust_side:?}");
    assert!(php_side.acquired + rust_side.acquired > 0);
    println!("{}", render(&[laravel.clone(), ddblock.clone()], &opts));

    assert_eq!(laravel.errors, 0, "{laravel:?}");
    assert_eq!(ddblock.errors, 0, "{ddblock:?}");
    assert!(laravel.acquired > 0 && ddblock.acquired > 0);
    // Laravel: its eventually consistent GetItem misses the owner it just wrote, so it skips the delete.
    assert!(
        laravel.stale_reads > 0,
        "the proxy served stale reads: {laravel:?}"
    );
    assert!(
        laravel.stuck > 0,
        "Laravel's release path leaves stuck locks under stale reads: {laravel:?}"
    );
    // ddblock: every release of a held lock deletes it, with exactly one request, and never a read.
    assert_eq!(ddblock.stuck, 0, "{ddblock:?}");
    assert_eq!(ddblock.released, ddblock.acquired);
    assert_eq!(ddblock.overlaps, 0, "two holders at once: {ddblock:?}");
    assert_eq!(
        ddblock.requests.get("DeleteItem").copied().unwrap_or(0),
        ddblock.acquired as u64
    );
    // One PutItem per attempt. moto returns the holder with the failed put (ALL_OLD); dynalite does
    // not, so there a failed put costs one consistent GetItem and, if the lock was freed meanwhile,
    // one more put.
    let puts = ddblock.requests.get("PutItem").copied().unwrap_or(0);
    let gets = ddblock.requests.get("GetItem").copied().unwrap_or(0);
    if all_old {
        assert_eq!(puts, ddblock.cycles as u64);
        assert_eq!(gets, 0);
    } else {
        assert!(
            puts >= ddblock.cycles as u64 && puts <= (ddblock.cycles as u64) + gets,
            "{ddblock:?}"
        );
    }
    assert_eq!(
        ddblock.stale_reads, 0,
        "ddblock's lock path makes no eventually consistent read"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moto_laravel_release_sticks_ddblock_release_does_not() {
    compare("DDBLOCK_TEST_MOTO", true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynalite_laravel_release_sticks_ddblock_release_does_not() {
    compare("DDBLOCK_TEST_DYNALITE", false).await
}
