//! The once-only guard against real local servers: one winner, Laravel's item, done, give back,
//! expiry and takeover, claims Laravel made, the run helper, and bad input.

mod common;

use std::sync::Arc;

use common::{n, on_servers, s, Env, Server};
use ddblock::{ClaimOutcome, ErrorKind, KeyLayout, OnceRun, OnceState, PhpValue};

fn claimed(o: ClaimOutcome) -> ddblock::Claim {
    match o {
        ClaimOutcome::Claimed(c) => c,
        ClaimOutcome::Skipped(s) => panic!("expected a claim, got skipped: {s:?}"),
    }
}

fn skipped(o: ClaimOutcome) -> ddblock::OnceStatus {
    match o {
        ClaimOutcome::Skipped(s) => s,
        ClaimOutcome::Claimed(c) => panic!("expected skipped, got a claim: {c:?}"),
    }
}

async fn first_claim_wins_in_laravels_item(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    let once = store.once("evt-1", 30).unwrap();
    assert_eq!(once.key(), "app_evt-1", "a cache key");
    let claim = claimed(once.claim().await.unwrap());
    assert!(!claim.recovered());
    assert_eq!(claim.expires_at(), t + 30);
    let item = env.raw("app_evt-1").await.unwrap();
    assert_eq!(item["value"], n(1), "the counter the winner saw");
    assert_eq!(item["expires_at"], n(t + 30));
    let token = item["ddblock_claim"].as_s().unwrap();
    assert_eq!(token.len(), 16);
    assert_eq!(
        item.len(),
        4,
        "key, value, expires_at, ddblock_claim: {item:?}"
    );

    // Every later caller sees 2, 3, ... and someone else's token, and writes nothing else.
    for seen in 2..=3 {
        let st = skipped(store.once("evt-1", 30).unwrap().claim().await.unwrap());
        assert_eq!(st.state, OnceState::InProgress);
        assert_eq!(st.claims, Some(seen));
        assert_eq!(
            st.expires_at,
            Some(t + 30),
            "a loser never extends the claim"
        );
    }
    assert_eq!(
        env.raw("app_evt-1").await.unwrap()["ddblock_claim"]
            .as_s()
            .unwrap(),
        token
    );
    // Laravel reads the counter as an int, and its increment counts as one more caller.
    assert_eq!(store.get("evt-1").await.unwrap(), Some(PhpValue::Int(3)));
    assert_eq!(store.increment("evt-1", 1).await.unwrap(), Some(4));
    let st = once.status().await.unwrap();
    assert_eq!((st.state, st.claims), (OnceState::InProgress, Some(4)));
}

async fn done_skips_redeliveries_until_it_expires(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel8);
    let t = env.now();
    let once = store.once("evt", 30).unwrap().with_done_ttl(600).unwrap();
    let claim = claimed(once.claim().await.unwrap());
    env.clock.advance(5);
    claim.done().await.unwrap();
    claim.done().await.unwrap(); // again (a retry after a lost answer): still ours
    let item = env.raw("app_:evt").await.unwrap();
    assert_eq!(item["ddblock_done"], n(t + 5));
    assert_eq!(
        item["expires_at"],
        n(t + 5 + 600),
        "remembered for the done ttl"
    );
    let st = skipped(store.once("evt", 30).unwrap().claim().await.unwrap());
    assert_eq!(st.state, OnceState::Done);
    assert_eq!(st.done_at, Some(t + 5));
    assert!(
        !claim.give_back().await.unwrap(),
        "a done claim is not given back"
    );

    env.clock.advance(601);
    assert_eq!(once.status().await.unwrap().state, OnceState::Expired);
    let again = claimed(once.claim().await.unwrap());
    assert!(!again.recovered());
    let item = env.raw("app_:evt").await.unwrap();
    assert_eq!(
        item["value"],
        n(1),
        "a fresh claim after the done record expired"
    );
    assert!(!item.contains_key("ddblock_done"));
}

async fn give_back_lets_exactly_the_next_delivery_in(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    let a = claimed(store.once("evt", 30).unwrap().claim().await.unwrap());
    assert!(a.give_back().await.unwrap());
    assert!(
        a.give_back().await.unwrap(),
        "a retried give-back recognises itself"
    );
    let item = env.raw("app_evt").await.unwrap();
    assert_eq!(item["value"], n(0));
    assert!(!item.contains_key("ddblock_claim"));
    assert_eq!(item["expires_at"], n(t + 30), "the expiry stays");
    let once = store.once("evt", 30).unwrap();
    assert_eq!(once.status().await.unwrap().state, OnceState::GivenBack);
    assert_eq!(store.get("evt").await.unwrap(), Some(PhpValue::Int(0)));

    // Many deliveries at once after the give-back: exactly one gets in.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let o = once.clone();
        tasks.push(tokio::spawn(async move { o.claim().await.unwrap() }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        if let ClaimOutcome::Claimed(c) = t.await.unwrap() {
            winners.push(c);
        }
    }
    assert_eq!(winners.len(), 1, "one winner after a give-back");
    let b = winners.pop().unwrap();
    // The old claim cannot undo or finish the new one.
    assert!(!a.give_back().await.unwrap());
    assert_eq!(a.done().await.unwrap_err().kind(), ErrorKind::Conflict);
    assert_eq!(once.status().await.unwrap().state, OnceState::InProgress);
    b.done().await.unwrap();
    assert_eq!(once.status().await.unwrap().state, OnceState::Done);
}

async fn an_expired_claim_is_taken_over_and_the_late_winner_told(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let once = store.once("evt", 10).unwrap();
    let a = claimed(once.claim().await.unwrap());
    env.clock.advance(10);
    let st = skipped(once.claim().await.unwrap());
    assert_eq!(
        st.state,
        OnceState::InProgress,
        "at its expiry second it still holds"
    );
    env.clock.advance(1);
    assert_eq!(once.status().await.unwrap().state, OnceState::Expired);
    let b = claimed(once.claim().await.unwrap());
    let err = a.done().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(err.to_string().contains("claim ttl 10 s"), "{err}");
    assert!(
        !a.give_back().await.unwrap(),
        "a lapsed claim cannot give back the new one"
    );
    b.done().await.unwrap();
}

async fn a_claim_laravel_made_keeps_ddblock_out(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    // What Laravel's `Cache::add('evt', 1, 30)` writes: the PHP way to claim.
    let mut item = common::laravel_item("app_evt", n(1), t + 30);
    env.put_raw(item.clone()).await;
    let st = skipped(store.once("evt", 30).unwrap().claim().await.unwrap());
    assert_eq!((st.state, st.claims), (OnceState::InProgress, Some(1)));
    assert_eq!(env.raw("app_evt").await.unwrap(), item, "nothing written");
    // Once Laravel's claim expired, ddblock takes over.
    item.insert("expires_at".into(), n(t - 1));
    env.put_raw(item).await;
    claimed(store.once("evt", 30).unwrap().claim().await.unwrap());
    // A non-numeric cache entry under the key counts as claimed by someone else, untouched.
    env.put_raw(common::laravel_item("app_s", s("s:1:\"x\";"), t + 30))
        .await;
    let st = skipped(store.once("s", 30).unwrap().claim().await.unwrap());
    assert_eq!((st.state, st.claims), (OnceState::InProgress, None));
}

async fn concurrent_deliveries_have_one_winner_per_event(server: Server) {
    let env = Env::new(server).await;
    let store = Arc::new(env.store(KeyLayout::Laravel12));
    let events = 5;
    let mut tasks = Vec::new();
    for caller in 0..12 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut won = Vec::new();
            for e in 0..events {
                let once = store.once(&format!("evt-{e}"), 30).unwrap();
                if once.claim().await.unwrap().is_claimed() {
                    won.push(e);
                }
            }
            (caller, won)
        }));
    }
    let mut winners = vec![0; events];
    for t in tasks {
        for e in t.await.unwrap().1 {
            winners[e] += 1;
        }
    }
    assert_eq!(winners, vec![1; events]);
    for e in 0..events {
        assert_eq!(
            env.raw(&format!("app_evt-{e}")).await.unwrap()["value"],
            n(12),
            "every caller counted once"
        );
    }
}

async fn run_marks_done_or_gives_back(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let once = store.once("evt", 30).unwrap();
    let failed: Result<OnceRun<()>, ddblock::Error> = once
        .run(|| async { Err(ddblock::Error::Config("handler failed".into())) })
        .await;
    assert_eq!(
        failed.unwrap_err().to_string(),
        "configuration error: handler failed"
    );
    assert_eq!(once.status().await.unwrap().state, OnceState::GivenBack);
    let ran = once
        .run(|| async { Ok::<_, ddblock::Error>(42) })
        .await
        .unwrap();
    assert_eq!(ran, OnceRun::Ran(42));
    let again = once
        .run(|| async { Ok::<_, ddblock::Error>(43) })
        .await
        .unwrap();
    match again {
        OnceRun::Skipped(st) => assert_eq!(st.state, OnceState::Done),
        other => panic!("{other:?}"),
    }
}

async fn bad_input_is_refused_before_any_request(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    assert_eq!(
        store.once("", 30).unwrap_err().kind(),
        ErrorKind::InvalidKey
    );
    assert_eq!(
        store.once("e", 0).unwrap_err().kind(),
        ErrorKind::InvalidTtl
    );
    assert_eq!(
        store.once("e", -1).unwrap_err().kind(),
        ErrorKind::InvalidTtl
    );
    let once = store.once("e", 30).unwrap();
    assert_eq!(
        once.with_done_ttl(0).unwrap_err().kind(),
        ErrorKind::InvalidTtl
    );
    assert!(env.raw("app_e").await.is_none());
}

on_servers!(
    first_claim_wins_in_laravels_item,
    done_skips_redeliveries_until_it_expires,
    give_back_lets_exactly_the_next_delivery_in,
    an_expired_claim_is_taken_over_and_the_late_winner_told,
    a_claim_laravel_made_keeps_ddblock_out,
    concurrent_deliveries_have_one_winner_per_event,
    run_marks_done_or_gives_back,
    bad_input_is_refused_before_any_request,
);
