//! The table format: exactly what Laravel's `DynamoDbStore` and `DynamoDbLock` write and read.
//! Key layouts ([`layout`]), the PHP value codec ([`codec`]), and what an item means ([`item`]):
//! expiry, owners, Laravel's ttl rules; plus the items of the once-only guard ([`once`]) and of
//! compare-and-set ([`versioned`]), Laravel items with attributes Laravel ignores. Pure data and
//! rules, no requests and no SDK types; the DynamoDB request layer (`crate::dynamo`) converts
//! between these and attribute values.

pub mod codec;
pub mod input;
pub mod item;
pub mod layout;
pub mod once;
pub mod versioned;
