//! A Rust process sharing locks and cache entries with Python, for tests/test_interop.py.
//!
//! Configured like Laravel (and `ddblock.Store.from_env()`): `DYNAMODB_ENDPOINT`,
//! `DYNAMODB_CACHE_TABLE`, `AWS_DEFAULT_REGION`, `CACHE_PREFIX`, `DDBLOCK_LAYOUT`.
//!
//! ```text
//! rust_peer acquire NAME TTL [OWNER]  -> "acquired OWNER" | "held OWNER"
//! rust_peer release NAME OWNER        -> "released" | "not-held" | "held-by-other OWNER"
//! rust_peer holder NAME               -> "free" | "OWNER EXPIRES_AT"
//! rust_peer get KEY                   -> PHP serialize() of the value on stdout, exit 3 when missing
//! rust_peer put KEY TTL               <- PHP serialize() of the value on stdin
//! ```

use std::io::{Read, Write};
use std::process::ExitCode;

use ddblock::{codec, AcquireOutcome, ReleaseOutcome, Store, StoreConfig};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rust_peer: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Vec<String>) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let store = Store::connect(StoreConfig::from_env()?.build()?).await?;
    let arg = |i: usize| -> Result<&str, String> {
        args.get(i)
            .map(String::as_str)
            .ok_or_else(|| format!("missing argument {i}; see the usage in examples/rust_peer.rs"))
    };
    let mut out = std::io::stdout();
    match arg(0)? {
        "acquire" => {
            let ttl: i64 = arg(2)?.parse()?;
            let lock = match args.get(3) {
                Some(owner) => store.lock_with_owner(arg(1)?, ttl, owner.clone())?,
                None => store.lock(arg(1)?, ttl)?,
            };
            match lock.acquire().await? {
                AcquireOutcome::Acquired { .. } => writeln!(out, "acquired {}", lock.owner())?,
                AcquireOutcome::Held(h) => {
                    writeln!(out, "held {}", h.owner.as_deref().unwrap_or("-"))?
                }
            }
        }
        "release" => match store.restore_lock(arg(1)?, arg(2)?)?.release().await? {
            ReleaseOutcome::Released => writeln!(out, "released")?,
            ReleaseOutcome::NotHeld => writeln!(out, "not-held")?,
            ReleaseOutcome::HeldByOther(h) => {
                writeln!(out, "held-by-other {}", h.owner.as_deref().unwrap_or("-"))?
            }
        },
        "holder" => match store.lock(arg(1)?, 0)?.current_holder().await? {
            Some(h) => writeln!(
                out,
                "{} {}",
                h.owner.as_deref().unwrap_or("-"),
                h.expires_at.map_or("-".to_owned(), |e| e.to_string())
            )?,
            None => writeln!(out, "free")?,
        },
        "get" => match store.get(arg(1)?).await? {
            Some(v) => out.write_all(&codec::serialize(&v))?,
            None => return Ok(ExitCode::from(3)),
        },
        "put" => {
            let mut input = Vec::new();
            std::io::stdin().read_to_end(&mut input)?;
            let value = codec::unserialize(&input)?;
            store.put(arg(1)?, &value, arg(2)?.parse()?).await?;
        }
        other => return Err(format!("unknown command {other:?}").into()),
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
