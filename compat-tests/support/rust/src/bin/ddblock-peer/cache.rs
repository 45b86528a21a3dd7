//! The cache ops, values PHP-serialized as they cross (`"v"` in, `"value"` out), answered as
//! Laravel's store answers them (`put` and `forget` true, `increment` false when missing).

use ddblock::{Amount, Store};
use serde_json::{json, Value};

use crate::request::{php_out, Failure, Req};
use crate::{fields, Fields};

/// `get`: the value, `null` when missing or expired.
pub async fn get(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let value = s.get(req.str("key")?).await?;
    Ok(fields(json!({ "value": php_out(value.as_ref()) })))
}

/// `put`: stores `v` for `ttl` seconds.
pub async fn put(s: &Store, req: &Req) -> Result<Fields, Failure> {
    s.put(req.str("key")?, &req.php("v")?, req.int("ttl")?)
        .await?;
    Ok(fields(json!({"result": true})))
}

/// `add`: stores `v` only when the key is missing or expired.
pub async fn add(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let added = s
        .add(req.str("key")?, &req.php("v")?, req.int("ttl")?)
        .await?;
    Ok(fields(json!({ "result": added })))
}

/// `forget`: deletes the key.
pub async fn forget(s: &Store, req: &Req) -> Result<Fields, Failure> {
    s.forget(req.str("key")?).await?;
    Ok(fields(json!({"result": true})))
}

/// `increment` / `decrement` by `by` (default 1, fractions allowed as in Laravel).
pub async fn increment(s: &Store, req: &Req, down: bool) -> Result<Fields, Failure> {
    let key = req.str("key")?;
    let by = match req.0.get("by") {
        None | Some(Value::Null) => Amount::Int(1),
        Some(v) => match v.as_i64() {
            Some(i) => Amount::Int(i),
            None => Amount::from_f64(req.num("by")?)?,
        },
    };
    let result = if down {
        s.decrement(key, by).await?
    } else {
        s.increment(key, by).await?
    };
    Ok(fields(
        json!({ "result": result.map_or(json!(false), |n| json!(n)) }),
    ))
}
