//! Time to Live: the API (UpdateTimeToLive, DescribeTimeToLive) and whether expired items are
//! really deleted.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{TimeToLiveSpecification, TimeToLiveStatus};
use ddblock::Clock as _;
use ddblock_test_support::{laravel_item, on_servers, s, Server};

use super::{failure, refused, Failure, Probe};

/// How long a test waits to see an expired item deleted (DynamoDB Local: usually a few seconds).
const SWEEP_WAIT: Duration = Duration::from_secs(25);
/// How long a server that does not delete expired items is watched.
const NOT_OBSERVED_WAIT: Duration = Duration::from_secs(12);

/// An UpdateTimeToLive that enables TTL on `expires_at`.
async fn enable_ttl(p: &Probe) -> Result<(), Failure> {
    let spec = TimeToLiveSpecification::builder()
        .enabled(true)
        .attribute_name("expires_at")
        .build()
        .unwrap();
    let update = p.client.update_time_to_live().table_name(&p.table);
    let sent = update.time_to_live_specification(spec).send().await;
    sent.map(|_| ()).map_err(failure)
}

/// UpdateTimeToLive works on moto and DynamoDB Local, is an unknown operation on dynalite;
/// DescribeTimeToLive answers everywhere (dynalite: always DISABLED). Enabling it a second time is
/// refused by DynamoDB Local (as DynamoDB documents), accepted by moto.
async fn the_ttl_api(server: Server) {
    let p = Probe::new(server).await;
    let first = enable_ttl(&p).await;
    if server == Server::Dynalite {
        let f = first.unwrap_err();
        assert_eq!(
            f.code.as_deref(),
            Some("UnknownOperationException"),
            "{server}: {f:?}"
        );
    } else {
        first.unwrap_or_else(|f| panic!("{server}: {f:?}"));
    }
    assert_eq!(
        server.has_ttl_api(),
        server != Server::Dynalite,
        "the support crate's property"
    );
    let described = p
        .client
        .describe_time_to_live()
        .table_name(&p.table)
        .send()
        .await;
    let d = described.unwrap().time_to_live_description.unwrap();
    let want = if server.has_ttl_api() {
        (Some(TimeToLiveStatus::Enabled), Some("expires_at"))
    } else {
        (Some(TimeToLiveStatus::Disabled), None)
    };
    assert_eq!(
        (d.time_to_live_status.clone(), d.attribute_name.as_deref()),
        want,
        "{server}"
    );
    let again = enable_ttl(&p).await;
    match server {
        Server::Moto => assert!(again.is_ok(), "{server}: {again:?}"),
        Server::Dynalite => assert!(again.is_err(), "{server}"),
        Server::DdbLocal => refused(
            server,
            "second UpdateTimeToLive",
            again,
            "TimeToLive is already enabled",
        ),
    }
}

/// Items on a table with TTL on `expires_at`: one expired an hour ago, one six years ago, one
/// live. moto keeps them all (not deleted within 12 s); dynalite has no TTL to enable and keeps
/// them too. DynamoDB Local deletes the hour-old one within seconds, and never the one expired
/// more than five years ago (as DynamoDB documents). But its deletion job can stop for good in a
/// long-lived server (seen in 2 of about 10 server lifetimes, cause not found): a DynamoDB Local
/// that deletes nothing within 25 s is reported, not failed, since another suite may have stopped
/// it.
async fn expired_items_deleted_by_ttl(server: Server) {
    let p = Probe::new(server).await;
    let _ = enable_ttl(&p).await;
    let now = ddblock::SystemClock.now();
    const SIX_YEARS: i64 = 6 * 366 * 86_400;
    p.put(laravel_item("expired", s("v"), now - 3_600))
        .await
        .unwrap();
    p.put(laravel_item("ancient", s("v"), now - SIX_YEARS))
        .await
        .unwrap();
    p.put(laravel_item("live", s("v"), now + 3_600))
        .await
        .unwrap();
    let start = Instant::now();
    let wait = if server == Server::DdbLocal {
        SWEEP_WAIT
    } else {
        NOT_OBSERVED_WAIT
    };
    let mut gone = None;
    while start.elapsed() < wait {
        if p.get("expired").await.unwrap().is_none() {
            gone = Some(start.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    match (server, gone) {
        (Server::Moto | Server::Dynalite, None) | (Server::DdbLocal, Some(_)) => {}
        (Server::Moto | Server::Dynalite, Some(after)) => {
            panic!("{server}: an expired item deleted after {after:?}")
        }
        (Server::DdbLocal, None) => eprintln!(
            "{server}: no expired item deleted within {wait:?}: this DynamoDB Local's TTL \
             deletion has stopped (docs/compatibility.md, \"Servers\")"
        ),
    }
    for stays in ["ancient", "live"] {
        let item = p.get(stays).await.unwrap();
        assert!(item.is_some(), "{server}: `{stays}` was deleted");
    }
}

on_servers!(the_ttl_api, expired_items_deleted_by_ttl);
