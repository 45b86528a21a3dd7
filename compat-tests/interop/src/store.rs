//! ddblock's side of a test: stores on a table, and a lock item as Laravel sees it.

use aws_sdk_dynamodb::Client;
use ddblock::{KeyLayout, Store, StoreConfig, StoreConfigBuilder};

use crate::{Item, Server};

/// A lock item ddblock wrote, as Laravel sees it: ddblock's own attributes (the fencing token
/// and the attempt id, which Laravel never reads) checked present and removed.
pub fn laravel_view(mut item: Item) -> Item {
    for attr in [
        ddblock::format::item::FENCE_ATTRIBUTE,
        ddblock::format::item::ATTEMPT_ATTRIBUTE,
    ] {
        assert!(
            item.remove(attr).is_some(),
            "ddblock's lock item carries `{attr}`: {item:?}"
        );
    }
    item
}

/// A config builder for `table` on `server` with a layout and prefix (real clock).
pub fn store_config(
    server: Server,
    table: &str,
    layout: KeyLayout,
    prefix: &str,
) -> StoreConfigBuilder {
    StoreConfig::builder()
        .table(table)
        .endpoint(server.endpoint())
        .prefix(prefix)
        .layout(layout)
}

/// A ddblock store on `client` for `table` with a layout and prefix.
pub fn store(
    server: Server,
    client: &Client,
    table: &str,
    layout: KeyLayout,
    prefix: &str,
) -> Store {
    let cfg = store_config(server, table, layout, prefix)
        .build()
        .expect("store config");
    Store::with_client(client.clone(), cfg)
}
