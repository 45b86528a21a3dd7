//! The lock commands: `acquire`, `release`, `refresh`, `force-release` and `status` (`run` is
//! run.rs's): call the core, print the outcome, pick the exit status.

use clap::Args;
use ddblock::format::input::ttl_from_str;
use ddblock::{AcquireOutcome, LockBackendKind, ReleaseOutcome, Store};
use serde_json::{json, Value};

use crate::global::WaitArg;
use crate::out::{
    self, acquire_json, held_message, holder_json, owner_json, print_json, shell, shell_quoted,
    EXIT_FAILURE, EXIT_HELD, EXIT_OK,
};

/// `acquire`.
#[derive(Debug, Args)]
pub struct AcquireArgs {
    /// Lock name
    pub name: String,
    /// Lock ttl in whole seconds (0 means Laravel's default of 86400)
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub ttl: String,
    /// Owner token (default: 16 random characters, as Laravel)
    #[arg(long, value_name = "OWNER")]
    pub owner: Option<String>,
    #[command(flatten)]
    pub wait: WaitArg,
}

/// `release`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// Lock name
    pub name: String,
    /// The owner that holds the lock (printed by acquire, shown by status)
    #[arg(long, value_name = "OWNER")]
    pub owner: String,
}

/// `refresh`.
#[derive(Debug, Args)]
pub struct RefreshArgs {
    /// Lock name
    pub name: String,
    /// The owner that holds the lock
    #[arg(long, value_name = "OWNER")]
    pub owner: String,
    /// New lease from now, in whole seconds (0 means Laravel's default of 86400)
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub ttl: String,
}

/// Commands taking only a lock name.
#[derive(Debug, Args)]
pub struct NameArgs {
    /// Lock name
    pub name: String,
}

/// `ddblock acquire NAME --ttl SECS [--owner OWNER] [--wait SECS]`: prints the owner.
pub async fn acquire(store: &Store, json: bool, a: &AcquireArgs) -> ddblock::Result<i32> {
    let lock = match &a.owner {
        Some(o) => store.lock_with_owner(&a.name, ttl_from_str(&a.ttl)?, o.clone())?,
        None => store.lock(&a.name, ttl_from_str(&a.ttl)?)?,
    };
    let outcome = lock.acquire_within(a.wait.parse()?).await?;
    if json {
        print_json(&acquire_json(&lock, &outcome));
    }
    Ok(match outcome {
        AcquireOutcome::Acquired { .. } => {
            if !json {
                println!("{}", lock.owner());
            }
            EXIT_OK
        }
        AcquireOutcome::Held(h) => {
            eprintln!("ddblock: {}", held_message(&a.name, &h));
            EXIT_HELD
        }
    })
}

/// `ddblock release NAME --owner OWNER`: one conditional delete.
pub async fn release(store: &Store, json: bool, a: &ReleaseArgs) -> ddblock::Result<i32> {
    let lock = store.restore_lock(&a.name, a.owner.clone())?;
    let outcome = lock.release().await?;
    let (name, holder) = match &outcome {
        ReleaseOutcome::Released => ("released", None),
        ReleaseOutcome::NotHeld => ("not_held", None),
        ReleaseOutcome::HeldByOther(h) => ("held_by_other", Some(h)),
    };
    if json {
        print_json(&json!({
            "released": outcome.is_released(),
            "outcome": name,
            "name": lock.name(),
            "key": lock.key(),
            "holder": holder.map(holder_json),
        }));
    }
    Ok(match &outcome {
        ReleaseOutcome::Released => {
            if !json {
                println!("released lock {}", shell(&a.name));
            }
            EXIT_OK
        }
        ReleaseOutcome::NotHeld => {
            eprintln!("ddblock: lock {} is not held (already released or expired and swept); nothing released", shell(&a.name));
            EXIT_FAILURE
        }
        ReleaseOutcome::HeldByOther(h) => {
            eprintln!(
                "ddblock: {}, not by the given owner; nothing released",
                held_message(&a.name, h)
            );
            EXIT_FAILURE
        }
    })
}

/// `ddblock refresh NAME --owner OWNER --ttl SECS`: a new lease from now, if still ours.
pub async fn refresh(store: &Store, json: bool, a: &RefreshArgs) -> ddblock::Result<i32> {
    let ttl = ttl_from_str(&a.ttl)?;
    let lock = store.restore_lock(&a.name, a.owner.clone())?;
    let refreshed = lock.refresh(Some(ttl)).await?;
    let holder = lock.current_holder().await?;
    if json {
        print_json(&json!({
            "refreshed": refreshed,
            "name": lock.name(),
            "key": lock.key(),
            "expires_at": holder.as_ref().filter(|_| refreshed).and_then(|h| h.expires_at),
            "holder": holder.as_ref().map(holder_json),
        }));
    }
    if refreshed {
        if !json {
            let until = holder.and_then(|h| h.expires_at);
            println!("refreshed lock {} {}", shell(&a.name), out::until(until));
        }
        Ok(EXIT_OK)
    } else {
        match holder {
            Some(h) => eprintln!(
                "ddblock: {}, not by the given owner; nothing refreshed",
                held_message(&a.name, &h)
            ),
            None => eprintln!(
                "ddblock: lock {} is not held (expired, released or never taken); nothing refreshed",
                shell(&a.name)
            ),
        }
        Ok(EXIT_FAILURE)
    }
}

/// `ddblock force-release NAME`: deletes the lock whoever holds it; exit 1 when there was none
/// (a name pasted without quotes loses its backslashes: say so rather than report a release).
pub async fn force_release(store: &Store, json: bool, a: &NameArgs) -> ddblock::Result<i32> {
    let lock = store.lock(&a.name, 0)?;
    let released = lock.force_release().await?;
    let (name, key) = (lock.name(), lock.key());
    let result =
        json!({"released": released, "force_released": released, "name": name, "key": key});
    if released {
        match json {
            true => print_json(&result),
            false => println!("force-released lock {} (key {})", shell(name), shell(key)),
        }
        return Ok(EXIT_OK);
    }
    let c = store.config();
    let (place, at) = match c
        .s3_bucket()
        .filter(|_| c.lock_backend() == LockBackendKind::S3)
    {
        Some(bucket) => ("bucket", bucket),
        None => ("table", c.table()),
    };
    eprintln!(
        "ddblock: no lock named {} in {place} `{at}` (key {}); names are exact: quote names that \
         hold backslashes",
        shell_quoted(name),
        shell(key)
    );
    if json {
        let mut result = result;
        result["reason"] = json!("not_found");
        result[place] = json!(at);
        print_json(&result);
    }
    Ok(EXIT_FAILURE)
}

/// `ddblock status NAME`: who holds the lock (consistent read).
pub async fn status(store: &Store, json: bool, a: &NameArgs) -> ddblock::Result<i32> {
    let lock = store.lock(&a.name, 0)?;
    let holder = lock.current_holder().await?;
    let now = out::now();
    if json {
        let (owner, expires_at) = match &holder {
            Some(h) => (
                owner_json(h.value.as_ref(), h.owner.as_deref()),
                h.expires_at,
            ),
            None => (Value::Null, None),
        };
        print_json(&json!({
            "name": lock.name(),
            "key": lock.key(),
            "held": holder.is_some(),
            "owner": owner,
            "expires_at": expires_at,
            "expires_in": expires_at.map(|e| e - now),
            "fence": holder.as_ref().and_then(|h| h.fence),
        }));
    } else {
        match &holder {
            Some(h) => println!(
                "lock {} (key {}) is held by owner {} {}",
                shell(&a.name),
                shell(lock.key()),
                h.owner.as_deref().unwrap_or("(not a string)"),
                out::until(h.expires_at)
            ),
            None => println!(
                "lock {} (key {}) is free",
                shell(&a.name),
                shell(lock.key())
            ),
        }
    }
    Ok(EXIT_OK)
}
