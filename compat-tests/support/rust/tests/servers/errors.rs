//! Error codes and messages, and the HTTP `Date` header every answer carries (ddblock reads it to
//! measure this host's clock against the server's: core/src/dynamo/date.rs).

use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use aws_sdk_dynamodb::config::interceptors::BeforeDeserializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::primitives::{DateTime, DateTimeFormat};
use ddblock_test_support::{laravel_item, on_servers, s, Server};

use super::{failure, key_item, Probe};

/// A failed condition is HTTP 400 `ConditionalCheckFailedException`, "The conditional request
/// failed", on every server (DynamoDB's documented text).
async fn a_failed_condition_is_the_same_everywhere(server: Server) {
    let p = Probe::new(server).await;
    p.put(laravel_item("a", s("v"), 1)).await.unwrap();
    let f = p
        .add_request(laravel_item("a", s("w"), 1))
        .send()
        .await
        .map_err(failure)
        .unwrap_err();
    assert_eq!(f.status, Some(400), "{server}");
    f.is(
        server,
        "PutItem",
        "ConditionalCheckFailedException",
        "The conditional request failed",
    );
}

/// A missing table: `ResourceNotFoundException` on item and table requests everywhere, in each
/// server's words; moto's DescribeTimeToLive answers another code, `ResourceNotFound`.
async fn a_missing_table(server: Server) {
    let p = Probe::new(server).await.on_table("no_such_table");
    let get = p
        .get_request("a")
        .send()
        .await
        .map_err(failure)
        .unwrap_err();
    let put = p.put(key_item("a")).await.unwrap_err();
    let (c, missing) = (&p.client, &p.table);
    let describe = c.describe_table().table_name(missing).send().await;
    let describe = describe.map_err(failure).unwrap_err();
    let ttl = c.describe_time_to_live().table_name(missing).send().await;
    let ttl = ttl.map_err(failure).unwrap_err();
    let code = "ResourceNotFoundException";
    let by_name = "Requested resource not found: Table: no_such_table not found";
    match server {
        Server::Moto => {
            get.is(server, "GetItem", code, "Requested resource not found");
            put.is(server, "PutItem", code, "Requested resource not found");
            describe.is(server, "DescribeTable", code, by_name);
            ttl.is(
                server,
                "DescribeTimeToLive",
                "ResourceNotFound",
                "Table not found",
            );
        }
        Server::Dynalite => {
            get.is(server, "GetItem", code, "Requested resource not found");
            put.is(server, "PutItem", code, "Requested resource not found");
            describe.is(server, "DescribeTable", code, by_name);
            ttl.is(server, "DescribeTimeToLive", code, by_name);
        }
        Server::DdbLocal => {
            let m = "Cannot do operations on a non-existent table";
            for (what, f) in [
                ("GetItem", get),
                ("PutItem", put),
                ("DescribeTable", describe),
            ] {
                f.is(server, what, code, m);
            }
            ttl.is(server, "DescribeTimeToLive", code, m);
        }
    }
}

/// What the `Date` header of the last answer said.
#[derive(Debug, Clone, Default)]
struct DateSeen(Arc<Mutex<Option<String>>>);

impl Intercept for DateSeen {
    fn name(&self) -> &'static str {
        "date-seen"
    }

    fn read_after_transmit(
        &self,
        ctx: &BeforeDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let date = ctx.response().headers().get("date").map(str::to_owned);
        *self.0.lock().unwrap() = date;
        Ok(())
    }
}

fn now() -> f64 {
    UNIX_EPOCH.elapsed().expect("after 1970").as_secs_f64()
}

/// Every answer, success or error, carries an RFC 9110 `Date` within the second of the request
/// (the servers share this host's clock), at any point of the second.
async fn every_answer_has_an_accurate_date(server: Server) {
    let p = Probe::new(server).await;
    let missing = p.on_table("no_such_table");
    for i in 0..6 {
        for error in [false, true] {
            let seen = DateSeen::default();
            let to = if error { &missing } else { &p };
            let t0 = now();
            let res = to
                .get_request("a")
                .customize()
                .interceptor(seen.clone())
                .send()
                .await;
            let t1 = now();
            assert_eq!(res.is_err(), error, "{server}");
            let header = seen.0.lock().unwrap().clone();
            let header = header.unwrap_or_else(|| panic!("{server}: no Date header"));
            let date = DateTime::from_str(&header, DateTimeFormat::HttpDate)
                .unwrap_or_else(|e| panic!("{server}: Date {header:?}: {e}"));
            let d = date.secs() as f64;
            assert!(
                t0.floor() <= d && d <= t1.floor(),
                "{server}: Date {header} outside the request's {t0:.3}..{t1:.3}"
            );
        }
        tokio::time::sleep(Duration::from_millis(170 * (i + 1))).await;
    }
}

on_servers!(
    a_failed_condition_is_the_same_everywhere,
    a_missing_table,
    every_answer_has_an_accurate_date,
);
