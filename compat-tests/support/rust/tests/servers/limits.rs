//! Size and count limits: the 400 KB item, the 2048-byte partition key (bytes or UTF-16 units),
//! batch sizes, scan segments.

use std::collections::{HashMap, HashSet};

use aws_sdk_dynamodb::types::{KeysAndAttributes, PutRequest, WriteRequest};
use ddblock_test_support::{on_servers, s, Item, Server};

use super::{failure, key_item, refused, Probe};

/// An item of exactly `bytes` bytes as DynamoDB counts them (UTF-8 lengths of the attribute
/// names and values): `key` = "big", `value` = ASCII filler.
fn item_of(bytes: usize) -> Item {
    let filler = bytes - "key".len() - "big".len() - "value".len();
    Item::from([
        ("key".to_owned(), s("big")),
        ("value".to_owned(), s(&"x".repeat(filler))),
    ])
}

/// 400 KB is 409,600 bytes: dynalite and DynamoDB Local store an item of exactly that and refuse
/// one byte more; moto refuses both (its own limit is lower: `> 405000` by its count,
/// moto/dynamodb/models/dynamo_type.py), and stores 400,000. One message everywhere.
async fn the_item_size_limit(server: Server) {
    let p = Probe::new(server).await;
    let message = "Item size has exceeded the maximum allowed size";
    p.put(item_of(400_000)).await.unwrap();
    let exact = p.put(item_of(409_600)).await;
    if server == Server::Moto {
        refused(server, "409,600 bytes", exact, message);
    } else {
        exact.unwrap_or_else(|f| panic!("{server}: 409,600 bytes: {f:?}"));
    }
    refused(
        server,
        "409,601 bytes",
        p.put(item_of(409_601)).await,
        message,
    );
}

/// The partition key's 2048 bytes: moto and DynamoDB Local count UTF-8 bytes; dynalite counts
/// UTF-16 code units, so it stores multibyte keys of up to 2048 characters. Messages differ.
async fn the_partition_key_limit(server: Server) {
    let p = Probe::new(server).await;
    let message = match server {
        Server::DdbLocal => "Hash primary key values must be under 2048 bytes, and range primary key values must be under 1024 bytes",
        Server::Moto | Server::Dynalite => "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes",
    };
    for fits in ["k".repeat(2048), "😀".repeat(512), "é".repeat(1024)] {
        p.put(key_item(&fits))
            .await
            .unwrap_or_else(|f| panic!("{server}: {f:?}"));
    }
    refused(
        server,
        "2049 ASCII bytes",
        p.put(key_item(&"k".repeat(2049))).await,
        message,
    );
    // 2049 UTF-8 bytes in 683 UTF-16 units, and 2052 bytes in 1026 units.
    for multibyte in ["€".repeat(683), "😀".repeat(513)] {
        let res = p.put(key_item(&multibyte)).await;
        if server == Server::Dynalite {
            res.unwrap_or_else(|f| panic!("{server}: {f:?}"));
        } else {
            refused(server, &format!("{} bytes", multibyte.len()), res, message);
        }
    }
}

/// A GetItem of a 2049-byte key: refused by dynalite and DynamoDB Local, answered (no item) by
/// moto, which checks the key length on writes only.
async fn a_read_of_a_too_long_key(server: Server) {
    let p = Probe::new(server).await;
    let res = p.get(&"k".repeat(2049)).await;
    match server {
        Server::Moto => assert_eq!(res, Ok(None), "{server}"),
        Server::Dynalite => refused(server, "GetItem", res, "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes"),
        Server::DdbLocal => refused(server, "GetItem", res, "Hash primary key values must be under 2048 bytes, and range primary key values must be under 1024 bytes"),
    }
}

fn puts(keys: impl Iterator<Item = String>) -> Vec<WriteRequest> {
    keys.map(|k| {
        let put = PutRequest::builder().item("key", s(&k)).build().unwrap();
        WriteRequest::builder().put_request(put).build()
    })
    .collect()
}

/// BatchWriteItem: 25 requests everywhere; 26 and an empty request refused by dynalite and
/// DynamoDB Local, accepted by moto; duplicate keys refused everywhere.
async fn batch_write_limits(server: Server) {
    let p = Probe::new(server).await;
    let send = |requests: Vec<WriteRequest>| {
        let items = if requests.is_empty() {
            HashMap::new() // `"RequestItems": {}`
        } else {
            HashMap::from([(p.table.clone(), requests)])
        };
        p.client
            .batch_write_item()
            .set_request_items(Some(items))
            .send()
    };
    send(puts((0..25).map(|i| format!("b{i}")))).await.unwrap();
    let over = send(puts((0..26).map(|i| format!("c{i}"))))
        .await
        .map_err(failure);
    let empty = send(Vec::new()).await.map_err(failure);
    match server {
        Server::Moto => {
            assert!(
                over.is_ok() && empty.is_ok(),
                "{server}: {over:?} {empty:?}"
            );
        }
        Server::Dynalite => {
            let f = over.unwrap_err();
            let m = f.message.clone().unwrap_or_default();
            assert!(
                m.contains("Member must have length less than or equal to 25"),
                "{server}: {f:?}"
            );
            let m = "1 validation error detected: Value '{}' at 'requestItems' failed to satisfy constraint: Member must have length greater than or equal to 1";
            refused(server, "empty", empty, m);
        }
        Server::DdbLocal => {
            refused(
                server,
                "26",
                over,
                "Too many items requested for the BatchWriteItem call",
            );
            refused(
                server,
                "empty",
                empty,
                "BatchWriteItem cannot have a null or no requests set",
            );
        }
    }
    let twice = send(puts(["d".to_owned(), "d".to_owned()].into_iter())).await;
    refused(
        server,
        "duplicates",
        twice.map_err(failure),
        "Provided list of item keys contains duplicates",
    );
}

/// BatchGetItem: 100 keys everywhere, 101 refused everywhere (in each server's words),
/// duplicate keys refused everywhere.
async fn batch_get_limits(server: Server) {
    let p = Probe::new(server).await;
    let send = |keys: Vec<String>| {
        let mut k = KeysAndAttributes::builder().consistent_read(true);
        for key in keys {
            k = k.keys(key_item(&key));
        }
        p.client
            .batch_get_item()
            .request_items(&p.table, k.build().unwrap())
            .send()
    };
    send((0..100).map(|i| format!("g{i}")).collect())
        .await
        .unwrap();
    let over = send((0..101).map(|i| format!("g{i}")).collect())
        .await
        .map_err(failure);
    let f = over.unwrap_err();
    let m = f.message.clone().unwrap_or_default();
    let said = match server {
        Server::DdbLocal => m == "Too many items requested for the BatchGetItem call",
        Server::Moto | Server::Dynalite => {
            m.contains("Member must have length less than or equal to 100")
        }
    };
    assert!(said, "{server}: 101 keys: {f:?}");
    let twice = send(vec!["g".into(), "g".into()]).await.map_err(failure);
    refused(
        server,
        "duplicates",
        twice,
        "Provided list of item keys contains duplicates",
    );
}

/// Parallel scans: 7 segments split 30 items without overlap on every server, DynamoDB Local
/// 3.3.0 included; TotalSegments 1,000,001 is refused only by DynamoDB Local; a segment number
/// not below TotalSegments is refused everywhere (three messages).
async fn scan_segments(server: Server) {
    let p = Probe::new(server).await;
    for i in 0..30 {
        p.put(key_item(&format!("s{i}"))).await.unwrap();
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for segment in 0..7 {
        let out = p
            .client
            .scan()
            .table_name(&p.table)
            .segment(segment)
            .total_segments(7)
            .consistent_read(true)
            .send()
            .await
            .unwrap();
        for item in out.items() {
            total += 1;
            seen.insert(item["key"].as_s().unwrap().clone());
        }
    }
    assert_eq!(
        (total, seen.len()),
        (30, 30),
        "{server}: each item in one segment"
    );
    let scan = |segment: i32, total: i32| {
        p.client
            .scan()
            .table_name(&p.table)
            .segment(segment)
            .total_segments(total)
            .send()
    };
    scan(0, 1_000_000).await.unwrap();
    let over = scan(0, 1_000_001).await.map_err(failure);
    if server == Server::DdbLocal {
        let m = "1 validation error detected: Value '1000001' at 'totalSegments' failed to satisfy constraint: Member must have value less than or equal to 1000000";
        refused(server, "TotalSegments 1000001", over, m);
    } else {
        assert!(over.is_ok(), "{server}: {over:?}");
    }
    let m = match server {
        Server::Moto => "The Segment parameter is zero-based and must be less than parameter TotalSegments",
        Server::Dynalite => "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: 4 is not less than TotalSegments: 4",
        Server::DdbLocal => "1 validation error detected: Value '4' at 'segment' failed to satisfy constraint: Member must have value less than or equal to 3",
    };
    refused(
        server,
        "Segment 4 of 4",
        scan(4, 4).await.map_err(failure),
        m,
    );
}

on_servers!(
    the_item_size_limit,
    the_partition_key_limit,
    a_read_of_a_too_long_key,
    batch_write_limits,
    batch_get_limits,
    scan_segments,
);
