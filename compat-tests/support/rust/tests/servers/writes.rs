//! Writes and reads: what `ReturnValues` returns, which parameters a request may carry, reads
//! right after a write, concurrent conditional writes.

use aws_sdk_dynamodb::types::ReturnValue;
use ddblock_test_support::{laravel_item, n, on_servers, s, Item, Server};

use super::{failure, key_item, refused, Probe};

/// `ReturnValues: UPDATED_NEW` / `UPDATED_OLD` on a SET that leaves a value as it was: moto
/// leaves the unchanged attribute out (here: no attributes at all), dynalite and DynamoDB Local
/// return it. A changed value comes back everywhere.
async fn updated_new_of_an_unchanged_value(server: Server) {
    let p = Probe::new(server).await;
    p.put(laravel_item("u", n(5), 9_999_999_999)).await.unwrap();
    let update = |expression: &'static str, amount: i64, rv: ReturnValue| {
        p.update_request("u")
            .update_expression(expression)
            .expression_attribute_names("#v", "value")
            .expression_attribute_values(":a", n(amount))
            .return_values(rv)
            .send()
    };
    let value_of = |out: Option<Item>| out.and_then(|a| a.get("value").cloned());
    for rv in [ReturnValue::UpdatedNew, ReturnValue::UpdatedOld] {
        let out = update("SET #v = #v + :a", 0, rv.clone()).await.unwrap();
        let attributes = out.attributes.clone();
        if server == Server::Moto {
            assert!(
                attributes.unwrap_or_default().is_empty(),
                "{server}: {rv:?}: {out:?}"
            );
        } else {
            assert_eq!(value_of(attributes), Some(n(5)), "{server}: {rv:?}");
        }
    }
    let out = update("SET #v = #v + :a", 2, ReturnValue::UpdatedNew)
        .await
        .unwrap();
    assert_eq!(value_of(out.attributes), Some(n(7)), "{server}: changed");
}

/// Which `ReturnValues` a PutItem and a DeleteItem accept: PutItem `ALL_NEW` is refused
/// everywhere (dynalite in its own words); DeleteItem `UPDATED_NEW` is accepted by dynalite only.
async fn return_values_a_write_accepts(server: Server) {
    let p = Probe::new(server).await;
    let put = p
        .put_request(key_item("r"))
        .return_values(ReturnValue::AllNew);
    let delete = p.delete_request("r").return_values(ReturnValue::UpdatedNew);
    let (put, delete) = (put.send().await, delete.send().await);
    let (put, delete) = (put.map_err(failure), delete.map_err(failure));
    let invalid = "Return values set to invalid value";
    if server == Server::Dynalite {
        refused(
            server,
            "PutItem ALL_NEW",
            put,
            "ReturnValues can only be ALL_OLD or NONE",
        );
        assert!(delete.is_ok(), "{server}: {delete:?}");
    } else {
        refused(server, "PutItem ALL_NEW", put, invalid);
        refused(server, "DeleteItem UPDATED_NEW", delete, invalid);
    }
}

/// Expression parameters no expression uses: an unused name is refused everywhere (moto's message
/// with a prefix), an unused value is refused by dynalite and DynamoDB Local but accepted by moto.
async fn unused_expression_names_and_values(server: Server) {
    let p = Probe::new(server).await;
    let put = || p.add_request(key_item("x"));
    let name = put()
        .expression_attribute_names("#u", "unused")
        .send()
        .await;
    let value = put()
        .expression_attribute_values(":u", s("unused"))
        .send()
        .await;
    let (name, value) = (name.map_err(failure), value.map_err(failure));
    let names = "Value provided in ExpressionAttributeNames unused in expressions: keys: {#u}";
    if server == Server::Moto {
        refused(
            server,
            "unused name",
            name,
            &format!("1 validation error detected: {names}"),
        );
        assert!(value.is_ok(), "{server}: {value:?}");
    } else {
        refused(server, "unused name", name, names);
        let values =
            "Value provided in ExpressionAttributeValues unused in expressions: keys: {:u}";
        refused(server, "unused value", value, values);
    }
}

/// A GetItem without ConsistentRead right after a write sees that write, on every local server
/// (DynamoDB may answer from a replica that has not seen it yet).
async fn an_eventually_consistent_read_after_a_write(server: Server) {
    let p = Probe::new(server).await;
    for i in 0..30 {
        p.put(laravel_item("e", n(i), 1)).await.unwrap();
        let out = p.get_request("e").send().await.unwrap();
        assert_eq!(out.item.unwrap()["value"], n(i), "{server}: read {i}");
    }
}

/// 16 conditional PutItems (`attribute_not_exists`) on one key at once: exactly one succeeds,
/// every time, on every server (moto through moto_server_atomic.py).
async fn concurrent_conditional_puts_admit_one(server: Server) {
    let p = Probe::new(server).await;
    for round in 0..10 {
        let key = format!("c{round}");
        let attempts = (0..16).map(|i| p.add_request(laravel_item(&key, n(i), 1)).send());
        let results = futures_join_all(attempts).await;
        let won = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "{server}: round {round}: {won} writers won");
    }
}

/// Runs futures at once on the runtime (no futures crate in this crate's dependencies).
async fn futures_join_all<F, T>(futures: impl Iterator<Item = F>) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("a task"));
    }
    out
}

on_servers!(
    updated_new_of_an_unchanged_value,
    return_values_a_write_accepts,
    unused_expression_names_and_values,
    an_eventually_consistent_read_after_a_write,
    concurrent_conditional_puts_admit_one,
);
