//! The guarded resource every worker writes while it holds a lock, in every language the same
//! request: one UpdateItem on the item `res_<lock name>` that records the writer and its fencing
//! token, accepted only if no higher token was accepted before. The stock Laravel control group
//! has no token and writes unconditionally.

/// The resource item's table key for a lock name.
pub fn resource_key(name: &str) -> String {
    format!("res_{name}")
}

/// The guarded write's update expression.
pub const UPDATE: &str =
    "SET #fence = :fence, #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one";
/// The guarded write's condition: no higher token accepted before.
pub const CONDITION: &str = "attribute_not_exists(#fence) OR #fence <= :fence";
/// The control group's write (no token).
pub const CONTROL_UPDATE: &str =
    "SET #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one";
