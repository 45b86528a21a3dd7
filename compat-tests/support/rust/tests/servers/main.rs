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

    /// A PutItem of `item`, unconditional.
    pub async fn put(&self, item: Item) -> Result<(), Failure> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map(|_| ())
            .map_err(failure)
    }

    /// A consistent GetItem of `key`.
    pub async fn get(&self, key: &str) -> Result<Option<Item>, Failure> {
        self.client
            .get_item()
            .table_name(&self.table)
            .key("key", s(key))
            .consistent_read(true)
            .send()
            .await
            .map(|o| o.item)
            .map_err(failure)
    }

    /// Writes `{key, v: N text}` and reads back the stored number text.
    pub async fn number(&self, key: &str, text: &str) -> Result<String, Failure> {
        let item = Item::from([
            ("key".to_owned(), s(key)),
            ("v".to_owned(), AttributeValue::N(text.to_owned())),
        ]);
        self.put(item).await?;
        let stored = self.get(key).await?.expect("the item just written");
        Ok(stored["v"].as_n().expect("an N").clone())
    }
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
