//! Child processes of the test tools: waiting for one to end (its stderr in the error when it
//! failed), and the JSON line it answered with.

use std::process::Output;

use serde_json::Value;
use tokio::process::Child;

/// Waits for `child` (`command` names it in the error) to end; its output, or an error with its
/// stderr when it did not exit 0.
pub async fn output(child: Child, command: &str, what: &str) -> Result<Output, String> {
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what}: {command} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out)
}

/// The last line of `text` that parses as a JSON object.
pub fn last_json(text: &str, what: &str) -> Result<Value, String> {
    text.lines()
        .rev()
        .find_map(|l| {
            serde_json::from_str::<Value>(l.trim())
                .ok()
                .filter(Value::is_object)
        })
        .ok_or_else(|| format!("{what}: no JSON line in its output: {text}"))
}
