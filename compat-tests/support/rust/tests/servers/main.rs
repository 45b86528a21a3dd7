//! What each local server does where DynamoDB-compatible servers differ, probed through the real
//! SDK over HTTP: the rows of the "Servers" table in docs/compatibility.md. Every test asserts,
//! server by server, what that server answers (moto 5.2.5 through `moto_server_atomic.py`,
//! dynalite 4.0.0, DynamoDB Local 3.3.0), so a new server version that changes a row fails here
//! first, and the support crate's properties (`returns_all_old`, `normalises_numbers`,
//! `has_ttl_api`) are checked against what the servers really do.
//!
//! `cargo test -p ddblock-test-support --test servers` (servers running, env sourced).

mod conditions;
mod errors;
mod limits;
mod numbers;
mod ttl;
mod writes;

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::delete_item::builders::DeleteItemFluentBuilder;
use aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder;
use aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use ddblock_test_support::{new_table, s, sdk, Item, Server};

/// A fresh table on one server (Laravel's schema: an `S` hash key named `key`) and a client that
/// sends each request once, so every answer is the server's first.
pub struct Probe {
    pub server: Server,
    pub client: Client,
    pub table: String,
}

impl Probe {
    pub async fn new(server: Server) -> Probe {
        let conf = sdk::client_config(&server.endpoint()).retry_config(RetryConfig::disabled());
        let client = Client::from_conf(conf.build());
        let table = new_table(&client, "key").await;
        Probe {
            server,
            client,
            table,
        }
    }

    /// A PutItem of `item` on the table, for the caller to add to and send.
    pub fn put_request(&self, item: Item) -> PutItemFluentBuilder {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
    }

    /// A PutItem of `item`, unconditional.
    pub async fn put(&self, item: Item) -> Result<(), Failure> {
        self.put_request(item)
            .send()
            .await
            .map(|_| ())
            .map_err(failure)
    }

    /// A PutItem of `item` conditioned on no item having its key (`attribute_not_exists(#k)`).
    pub fn add_request(&self, item: Item) -> PutItemFluentBuilder {
        self.put_request(item)
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", "key")
    }

    /// A GetItem of `key` (eventually consistent unless the caller asks).
    pub fn get_request(&self, key: &str) -> GetItemFluentBuilder {
        self.client
            .get_item()
            .table_name(&self.table)
            .key("key", s(key))
    }

    /// A consistent GetItem of `key`.
    pub async fn get(&self, key: &str) -> Result<Option<Item>, Failure> {
        self.get_request(key)
            .consistent_read(true)
            .send()
            .await
            .map(|o| o.item)
            .map_err(failure)
    }

    /// An UpdateItem of `key`.
    pub fn update_request(&self, key: &str) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("key", s(key))
    }

    /// The same server and client on another table (one that does not exist, say).
    pub fn on_table(&self, table: &str) -> Probe {
        Probe {
            server: self.server,
            client: self.client.clone(),
            table: table.to_owned(),
        }
    }

    /// A DeleteItem of `key`.
    pub fn delete_request(&self, key: &str) -> DeleteItemFluentBuilder {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("key", s(key))
    }

    /// Writes `{key, v: N text}` and reads back the stored number text.
    pub async fn number(&self, key: &str, text: &str) -> Result<String, Failure> {
        let mut item = key_item(key);
        item.insert("v".to_owned(), AttributeValue::N(text.to_owned()));
        self.put(item).await?;
        let stored = self.get(key).await?.expect("the item just written");
        Ok(stored["v"].as_n().expect("an N").clone())
    }
}

/// An item of its key alone.
pub fn key_item(key: &str) -> Item {
    Item::from([("key".to_owned(), s(key))])
}

/// What a refused request answered: HTTP status, error code (`__type`) and message.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub status: Option<u16>,
    pub code: Option<String>,
    pub message: Option<String>,
}

impl Failure {
    /// Asserts the code and message, naming the server and the request on failure.
    pub fn is(&self, server: Server, what: &str, code: &str, message: &str) {
        assert_eq!(
            (self.code.as_deref(), self.message.as_deref()),
            (Some(code), Some(message)),
            "{server}: {what}: {self:?}"
        );
    }
}

/// The status, code and message of an SDK failure.
pub fn failure<E: ProvideErrorMetadata + std::fmt::Debug>(e: SdkError<E, HttpResponse>) -> Failure {
    let status = e.raw_response().map(|r| r.status().as_u16());
    match &e {
        SdkError::ServiceError(se) => Failure {
            status,
            code: se.err().code().map(str::to_owned),
            message: se.err().message().map(str::to_owned),
        },
        _ => Failure {
            status,
            code: None,
            message: Some(format!("{:?}", e)),
        },
    }
}

/// A ValidationException with `message`: shorthand for the many refusals below.
pub fn refused(
    server: Server,
    what: &str,
    res: Result<impl std::fmt::Debug, Failure>,
    message: &str,
) {
    match res {
        Err(f) => f.is(server, what, "ValidationException", message),
        Ok(v) => panic!("{server}: {what}: accepted ({v:?}), expected a ValidationException"),
    }
}
