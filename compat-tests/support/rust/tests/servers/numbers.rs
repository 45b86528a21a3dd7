//! Numbers (`N`): precision, the text stored (normalised or kept), magnitude, malformed text,
//! arithmetic.

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use ddblock_test_support::{n, on_servers, s, Server};

use super::{failure, refused, Failure, Probe};

/// An UpdateItem of `key` with `expression` and `:v` bound to `v` (`SET v = :v`: how ddblock's
/// acquire, refresh and compare-and-set write a number).
async fn update_v(
    p: &Probe,
    key: &str,
    expression: &str,
    v: AttributeValue,
) -> Result<(), Failure> {
    let update = p.update_request(key).update_expression(expression);
    let sent = update.expression_attribute_values(":v", v).send().await;
    sent.map(|_| ()).map_err(failure)
}

/// 38 significant digits are stored on every server; 39 are refused by dynalite and DynamoDB
/// Local (each with its own message) and stored as written by moto. Trailing zeros of an integer
/// are not significant.
async fn numbers_of_38_and_39_digits(server: Server) {
    let p = Probe::new(server).await;
    let ones38 = "1".repeat(38);
    let zeros = format!("{}000", "12345678901234567890123456789012345678");
    let fraction = format!("0.{ones38}");
    for ok in [ones38.as_str(), zeros.as_str(), fraction.as_str()] {
        assert_eq!(
            p.number("ok", ok).await.as_deref(),
            Ok(ok),
            "{server}: {ok}"
        );
    }
    for digits39 in [
        "1".repeat(39),
        format!("0.{}", "1".repeat(39)),
        format!("{ones38}.9"),
    ] {
        let res = p.number("n39", &digits39).await;
        match server {
            Server::Moto => assert_eq!(res.as_deref(), Ok(digits39.as_str()), "{server}"),
            Server::Dynalite => refused(
                server,
                &digits39,
                res,
                "Attempting to store more than 38 significant digits in a Number",
            ),
            Server::DdbLocal => refused(
                server,
                &digits39,
                res,
                "DynamoDB only supports precision up to 38 digits",
            ),
        }
    }
}

/// Leading and trailing zeros, exponents and `-0` written by a PutItem: dynalite and DynamoDB
/// Local store the normalised number, moto the text as written.
async fn number_text_is_normalised_or_kept(server: Server) {
    let p = Probe::new(server).await;
    for (written, normalised) in NUMBER_TEXTS {
        let stored = p.number("n", written).await.unwrap();
        let want = if server.normalises_numbers() {
            normalised
        } else {
            written
        };
        assert_eq!(stored, want, "{server}: {written}");
    }
    assert_eq!(
        server.normalises_numbers(),
        server != Server::Moto,
        "{server}: the support crate's property"
    );
}

/// Number texts and their normalised forms.
const NUMBER_TEXTS: [(&str, &str); 10] = [
    ("007", "7"),
    ("1.500", "1.5"),
    ("1.0E+25", "10000000000000000000000000"),
    ("1e2", "100"),
    ("100.0e-2", "1"),
    ("5.", "5"),
    (".5", "0.5"),
    ("-0", "0"),
    ("-0.0", "0"),
    ("0.0", "0"),
];

/// The same texts written by BatchWriteItem and by UpdateItem (`SET v = :v`, what ddblock's
/// acquire, refresh and compare-and-set send): dynalite normalises all three; DynamoDB Local
/// normalises a BatchWriteItem but stores an UpdateItem's text as written, as moto does for all.
async fn number_text_by_write_request(server: Server) {
    let p = Probe::new(server).await;
    for (written, normalised) in NUMBER_TEXTS {
        let put = PutRequest::builder()
            .item("key", s("batch"))
            .item("v", n(written))
            .build()
            .unwrap();
        p.client
            .batch_write_item()
            .request_items(
                &p.table,
                vec![WriteRequest::builder().put_request(put).build()],
            )
            .send()
            .await
            .unwrap();
        update_v(&p, "update", "SET v = :v", n(written))
            .await
            .unwrap();
        let batch = p.get("batch").await.unwrap().unwrap()["v"].clone();
        let update = p.get("update").await.unwrap().unwrap()["v"].clone();
        let (want_batch, want_update) = match server {
            Server::Moto => (written, written),
            Server::Dynalite => (normalised, normalised),
            Server::DdbLocal => (normalised, written),
        };
        assert_eq!(
            (batch, update),
            (n(want_batch), n(want_update)),
            "{server}: {written}"
        );
    }
}

/// The magnitude limits: up to 9.99…E+125 and down to 1E-130 everywhere; 1E+126 overflows on
/// dynalite and DynamoDB Local but moto stores it; 1E-131 underflows everywhere.
async fn number_magnitude_limits(server: Server) {
    let p = Probe::new(server).await;
    let max = format!("9.{}E+125", "9".repeat(37));
    for ok in [max.as_str(), "1E125", "1E-130", "-1E-130"] {
        let stored = p.number("ok", ok).await.unwrap();
        if server != Server::Moto {
            assert!(
                !stored.contains('E'),
                "{server}: {ok} stored as plain digits: {stored}"
            );
        }
    }
    let overflow = p.number("big", "1E126").await;
    if server == Server::Moto {
        assert_eq!(overflow.as_deref(), Ok("1E126"), "{server}");
    } else {
        let message = "Number overflow. Attempting to store a number with magnitude larger than supported range";
        refused(server, "1E126", overflow, message);
    }
    let message = "Number underflow. Attempting to store a number with magnitude smaller than supported range";
    refused(server, "1E-131", p.number("tiny", "1E-131").await, message);
}

/// `+5` is stored as written by moto, refused by dynalite, normalised to `5` by DynamoDB Local;
/// `1_000` is stored by moto only; whitespace, hex, `Infinity` and `NaN` are refused everywhere,
/// in each server's words.
async fn a_plus_sign_and_malformed_numbers(server: Server) {
    let p = Probe::new(server).await;
    let plus = p.number("plus", "+5").await;
    match server {
        Server::Moto => assert_eq!(plus.as_deref(), Ok("+5"), "{server}"),
        Server::Dynalite => refused(
            server,
            "+5",
            plus,
            "The parameter cannot be converted to a numeric value: +5",
        ),
        Server::DdbLocal => assert_eq!(plus.as_deref(), Ok("5"), "{server}"),
    }
    // Python's Decimal syntax: moto stores `1_000` as written; the others refuse it.
    let underscore = p.number("u", "1_000").await;
    if server == Server::Moto {
        assert_eq!(underscore.as_deref(), Ok("1_000"), "{server}");
    } else {
        let m = match server {
            Server::DdbLocal => "A value provided cannot be converted into a number",
            _ => "The parameter cannot be converted to a numeric value: 1_000",
        };
        refused(server, "1_000", underscore, m);
    }
    for bad in [" 5", "5 ", "0x10", "Infinity", "NaN"] {
        let message = match server {
            Server::DdbLocal => "A value provided cannot be converted into a number".to_owned(),
            Server::Moto | Server::Dynalite => {
                format!("The parameter cannot be converted to a numeric value: {bad}")
            }
        };
        refused(server, bad, p.number("bad", bad).await, &message);
    }
}

/// Numbers in an UpdateItem's expression values: moto stores any text as an `N` (`NaN`, ` 5`,
/// `0x10`, 39 digits, 1E126); dynalite and DynamoDB Local refuse what a PutItem would refuse,
/// as "ExpressionAttributeValues contains invalid value: {why} for key :v".
async fn malformed_numbers_in_an_update(server: Server) {
    let p = Probe::new(server).await;
    let digits39 = "1".repeat(39);
    for bad in ["NaN", " 5", "0x10", "1E126", digits39.as_str()] {
        let res = update_v(&p, "u", "SET v = :v", n(bad)).await;
        if server == Server::Moto {
            assert!(res.is_ok(), "{server}: {bad}: {res:?}");
            assert_eq!(p.get("u").await.unwrap().unwrap()["v"], n(bad), "{server}");
            continue;
        }
        let why = match (server, bad) {
            (_, "1E126") => "Number overflow. Attempting to store a number with magnitude larger than supported range",
            (Server::Dynalite, b) if b.len() == 39 => "Attempting to store more than 38 significant digits in a Number",
            (Server::DdbLocal, b) if b.len() == 39 => "DynamoDB only supports precision up to 38 digits",
            (Server::Dynalite, _) => &format!("The parameter cannot be converted to a numeric value: {bad}"),
            _ => "A value provided cannot be converted into a number",
        };
        let message = format!("ExpressionAttributeValues contains invalid value: {why} for key :v");
        refused(server, bad, res, &message);
    }
}

/// Arithmetic in an update expression (`SET v = v + :v`, ddblock's increment) is exact to 38
/// digits and beyond i64 everywhere, but only dynalite normalises the result: moto and DynamoDB
/// Local keep the scale of the decimals (`1.5 + 1.5` = `3.0`), and moto fails (HTTP 500) on a
/// stored number in exponent form.
async fn arithmetic_results(server: Server) {
    let p = Probe::new(server).await;
    let nines = "9".repeat(38);
    let ten_to_38 = format!("1{}", "0".repeat(38));
    let cases: [(&str, &str, [&str; 3]); 7] = [
        // start, amount, [moto, dynalite, DynamoDB Local]
        ("007", "1", ["8", "8", "8"]),
        ("1.5", "1.5", ["3.0", "3", "3.0"]),
        ("1.25", "-0.25", ["1.00", "1", "1.00"]),
        ("0.1", "0.2", ["0.3", "0.3", "0.3"]),
        ("9223372036854775807", "1", ["9223372036854775808"; 3]),
        (&nines, "1", [&ten_to_38, &ten_to_38, &ten_to_38]),
        ("1e2", "1", ["HTTP 500", "101", "101"]),
    ];
    let column = match server {
        Server::Moto => 0,
        Server::Dynalite => 1,
        Server::DdbLocal => 2,
    };
    for (start, add, results) in cases {
        p.number("sum", start).await.unwrap();
        let res = update_v(&p, "sum", "SET v = v + :v", n(add)).await;
        let got = match res {
            Ok(_) => p.get("sum").await.unwrap().unwrap()["v"]
                .as_n()
                .unwrap()
                .clone(),
            Err(f) => format!("HTTP {}", f.status.unwrap_or_default()),
        };
        assert_eq!(got, results[column], "{server}: {start} + {add}");
    }
}

on_servers!(
    numbers_of_38_and_39_digits,
    number_text_is_normalised_or_kept,
    number_text_by_write_request,
    number_magnitude_limits,
    a_plus_sign_and_malformed_numbers,
    malformed_numbers_in_an_update,
    arithmetic_results,
);
