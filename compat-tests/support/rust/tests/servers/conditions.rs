//! Condition expressions: what a failed condition returns (`ReturnValuesOnConditionCheckFailure
//! = ALL_OLD`), a number compared with a string, a missing attribute, the expiry boundary.

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure as OnFailure};
use ddblock_test_support::{laravel_item, n, on_servers, s, Item, Server};

use super::{failure, Failure, Probe};

/// The lock item the failed writes below meet.
fn stored() -> Item {
    laravel_item("a", s("owner"), 100)
}

/// The item a write returned when it failed its condition (`None`: no item), given the request
/// (`$sent`, a future) and its operation's error type; any other outcome fails the test.
macro_rules! old_item {
    ($server:expr, $sent:expr, $error:ident) => {
        match $sent.await.map_err(|e| e.into_service_error()) {
            Err($error::ConditionalCheckFailedException(e)) => e.item,
            other => panic!("{}: {other:?}", $server),
        }
    };
}

/// A failed conditional PutItem asked for ALL_OLD returns the stored item where the server
/// honours the parameter (moto, DynamoDB Local), nothing on dynalite; never unless asked.
async fn all_old_on_a_failed_put(server: Server) {
    let p = Probe::new(server).await;
    p.put(stored()).await.unwrap();
    for ask in [Some(OnFailure::AllOld), None] {
        let put = p
            .add_request(laravel_item("a", s("other"), 200))
            .set_return_values_on_condition_check_failure(ask.clone());
        let old = old_item!(server, put.send(), PutItemError);
        let want = (ask.is_some() && server.returns_all_old()).then(stored);
        let asked = ask.is_some();
        assert_eq!(old, want, "{server}: PutItem, ALL_OLD asked: {asked}");
    }
}

/// The same for DeleteItem (ddblock's release) and UpdateItem (ddblock's acquire), each meeting
/// the stored item (the failed delete leaves it as it was).
async fn all_old_on_a_failed_delete_and_update(server: Server) {
    let p = Probe::new(server).await;
    p.put(stored()).await.unwrap();
    let want = server.returns_all_old().then(stored);
    let delete = p
        .delete_request("a")
        .condition_expression("#v = :owner")
        .expression_attribute_names("#v", "value")
        .expression_attribute_values(":owner", s("someone else"))
        .return_values_on_condition_check_failure(OnFailure::AllOld);
    let old = old_item!(server, delete.send(), DeleteItemError);
    assert_eq!(old, want, "{server}: DeleteItem");
    let update = p
        .update_request("a")
        .update_expression("SET #v = :owner")
        .condition_expression("attribute_not_exists(#k) OR #e < :now")
        .expression_attribute_names("#k", "key")
        .expression_attribute_names("#v", "value")
        .expression_attribute_names("#e", "expires_at")
        .expression_attribute_values(":owner", s("other"))
        .expression_attribute_values(":now", n(50))
        .return_values_on_condition_check_failure(OnFailure::AllOld);
    let old = old_item!(server, update.send(), UpdateItemError);
    assert_eq!(old, want, "{server}: UpdateItem");
}

/// A condition that fails because there is no item returns no item, ALL_OLD or not, on every
/// server: where ALL_OLD is honoured, "nothing came back" means "no item".
async fn all_old_of_a_missing_item_is_nothing(server: Server) {
    let p = Probe::new(server).await;
    let delete = p
        .delete_request("missing")
        .condition_expression("attribute_exists(#k)")
        .expression_attribute_names("#k", "key")
        .return_values_on_condition_check_failure(OnFailure::AllOld);
    let old = old_item!(server, delete.send(), DeleteItemError);
    assert_eq!(old, None, "{server}");
}

/// A PutItem of the stored item under `condition`, with one name (`#…`) and one value (`:…`).
async fn put_if(
    p: &Probe,
    condition: &str,
    (placeholder, name): (&str, &str),
    (key, value): (&str, AttributeValue),
) -> Result<(), Failure> {
    let put = p
        .put_request(stored())
        .condition_expression(condition)
        .expression_attribute_names(placeholder, name)
        .expression_attribute_values(key, value);
    put.send().await.map(|_| ()).map_err(failure)
}

/// `#expires_at < :now` on an item whose `expires_at` is an `S`: false (the condition fails) on
/// dynalite and DynamoDB Local; moto answers HTTP 500 with an HTML page, no DynamoDB error.
async fn comparing_a_number_with_a_string(server: Server) {
    let p = Probe::new(server).await;
    let mut odd = laravel_item("odd", s("owner"), 0);
    odd.insert("expires_at".into(), s("tomorrow"));
    p.put(odd.clone()).await.unwrap();
    let f = p
        .put_request(laravel_item("odd", s("taker"), 5))
        .condition_expression("attribute_not_exists(#k) OR #e < :now")
        .expression_attribute_names("#k", "key")
        .expression_attribute_names("#e", "expires_at")
        .expression_attribute_values(":now", n(1_000))
        .send()
        .await
        .map_err(failure)
        .unwrap_err();
    match server {
        Server::Moto => {
            assert_eq!(
                (f.status, f.code.as_deref()),
                (Some(500), None),
                "{server}: {f:?}"
            );
        }
        Server::Dynalite | Server::DdbLocal => {
            f.is(
                server,
                "N < S",
                "ConditionalCheckFailedException",
                "The conditional request failed",
            );
        }
    }
    assert_eq!(
        p.get("odd").await.unwrap(),
        Some(odd),
        "{server}: unchanged"
    );
}

/// A comparison with a missing attribute is false (`<`) and `<>` is true, on every server.
async fn a_missing_attribute_in_a_comparison(server: Server) {
    let p = Probe::new(server).await;
    p.put(stored()).await.unwrap();
    for (condition, holds) in [
        ("#m < :x", false),
        ("#m <> :x", true),
        ("NOT (#m = :x)", true),
    ] {
        let res = put_if(&p, condition, ("#m", "not_there"), (":x", n(5))).await;
        assert_eq!(res.is_ok(), holds, "{server}: {condition}: {res:?}");
    }
}

/// `expires_at` equal to `now`: `<` is false, `<=` true, and `=` compares numbers, not their text
/// (`100` equals `1.00E2`, on moto too, which stores the text as written).
async fn an_expiry_equal_to_now(server: Server) {
    let p = Probe::new(server).await;
    p.put(stored()).await.unwrap();
    for (condition, now, holds) in [
        ("#e < :now", "100", false),
        ("#e <= :now", "100", true),
        ("#e = :now", "1.00E2", true),
        ("#e > :now", "99.999", true),
    ] {
        let res = put_if(&p, condition, ("#e", "expires_at"), (":now", n(now))).await;
        let what = format!("{condition} with {now}");
        assert_eq!(res.is_ok(), holds, "{server}: {what}: {res:?}");
    }
}

on_servers!(
    all_old_on_a_failed_put,
    all_old_on_a_failed_delete_and_update,
    all_old_of_a_missing_item_is_nothing,
    comparing_a_number_with_a_string,
    a_missing_attribute_in_a_comparison,
    an_expiry_equal_to_now,
);
