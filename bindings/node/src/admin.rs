//! The store's admin methods, `createTable` and `doctor`: their options in, the core's reports
//! out as plain objects.

use ddblock_admin::{
    Admin, ClockReading, CreateTableOptions, DoctorOptions, ScanOptions, TtlState,
};
use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::error::{promise_on, Result};
use crate::options::millis;
use crate::store::NativeStore;

#[napi]
impl NativeStore {
    /// Creates the table Laravel's cache store needs (idempotent), waits up to `waitMs`
    /// (default 120 000) for ACTIVE and enables TTL unless `ttl` is false.
    #[napi(strict, ts_return_type = "Promise<TableReport>")]
    pub fn create_table<'env>(
        &self,
        env: &'env Env,
        options: Option<CreateTableInput>,
    ) -> napi::Result<PromiseRaw<'env, TableReport>> {
        promise_on(env, &self.inner, |s| {
            create_table(s, options.unwrap_or_default())
        })
    }

    /// Checks the table (exists, key schema, TTL) and, unless `scan` is false, its items; with
    /// the s3 backend also probes the bucket's conditional requests (the `s3_*` checks).
    #[napi(strict, ts_return_type = "Promise<DoctorReport>")]
    pub fn doctor<'env>(
        &self,
        env: &'env Env,
        options: Option<DoctorInput>,
    ) -> napi::Result<PromiseRaw<'env, DoctorReport>> {
        let scan = options.and_then(|o| o.scan).unwrap_or(true);
        promise_on(env, &self.inner, |s| doctor(s, scan))
    }
}

/// `Store.createTable`.
async fn create_table(store: ddblock::Store, o: CreateTableInput) -> Result<TableReport> {
    let mut opts = CreateTableOptions::new().ttl(o.ttl.unwrap_or(true));
    if let Some(ms) = o.wait_ms {
        opts = opts.wait(millis("waitMs", ms)?);
    }
    let r = Admin::new(&store).create_table(&opts).await?;
    Ok(TableReport {
        created: r.created,
        ready: r.ready(),
        status: r.status.clone(),
        key_schema_problem: r.key_schema_problem.clone(),
        ttl: r.ttl.as_ref().map(ttl_state),
        ttl_changed: r.ttl_changed,
    })
}

/// `Store.doctor`.
async fn doctor(store: ddblock::Store, scan: bool) -> Result<DoctorReport> {
    let opts = DoctorOptions::new().scan(scan.then(ScanOptions::new));
    let r = Admin::new(&store).doctor(&opts, |_| {}).await?;
    Ok(DoctorReport {
        healthy: r.healthy(),
        checks: r
            .checks
            .iter()
            .map(|c| Check {
                id: c.id.as_str().to_owned(),
                status: c.status.as_str().to_owned(),
                detail: c.detail.clone(),
            })
            .collect(),
        table_status: r.table_status.clone(),
        ttl: r.ttl.as_ref().map(ttl_state),
        clock: r.clock.map(|reading| {
            let measured = match reading {
                ClockReading::Measured(o) => Some(o),
                ClockReading::NoDate | ClockReading::Inconsistent => None,
            };
            ClockCheck {
                allowed: r.clock_allowed,
                offset: measured.map(|o| o.estimate()),
                low: measured.map(|o| o.low),
                high: measured.map(|o| o.high),
                answers: measured.map(|o| o.samples),
                unmeasured: reading.unmeasured().map(str::to_owned),
            }
        }),
        s3: r.s3.as_ref().map(|p| S3Probe {
            bucket: p.bucket.clone(),
            scratch_key: p.scratch_key.clone(),
            cleaned_up: p.cleaned_up,
        }),
    })
}

/// Options of `createTable`.
#[napi(object)]
#[derive(Default)]
pub struct CreateTableInput {
    /// Enable TTL on the expiry attribute (default true).
    pub ttl: Option<bool>,
    /// How long to wait for the table to become ACTIVE (default 120 000).
    pub wait_ms: Option<f64>,
}

/// Options of `doctor`.
#[napi(object)]
pub struct DoctorInput {
    /// Scan the items too (default true).
    pub scan: Option<bool>,
}

/// The table's TTL setting.
#[napi(object)]
pub struct Ttl {
    /// `enabled`, `enabling`, `disabling`, `disabled` or `unknown`.
    pub state: String,
    /// The TTL attribute, when there is one.
    pub attribute: Option<String>,
}

fn ttl_state(t: &TtlState) -> Ttl {
    Ttl {
        state: t.as_str().to_owned(),
        attribute: t.attribute().map(str::to_owned),
    }
}

/// What `createTable` did.
#[napi(object)]
pub struct TableReport {
    /// This call created the table.
    pub created: bool,
    /// ACTIVE with the right key schema.
    pub ready: bool,
    /// The table status.
    pub status: String,
    /// Why the key schema does not fit, for an existing table.
    pub key_schema_problem: Option<String>,
    /// The TTL setting afterwards.
    pub ttl: Option<Ttl>,
    /// This call enabled TTL.
    pub ttl_changed: bool,
}

/// One doctor check.
#[napi(object)]
pub struct Check {
    /// `table`, `key_schema`, `regions`, `ttl`, `expired_items`, `default_ttl_locks`,
    /// `invalid_items`, `layout`, `clock`; with the s3 backend also `s3_create_if_absent`,
    /// `s3_etag_changes`, `s3_if_match_put`, `s3_if_match_delete`, `s3_versioning`, `s3_cleanup`.
    pub id: String,
    /// `ok`, `warn`, `fail`, `unknown`, `skipped`.
    pub status: String,
    /// What was found.
    pub detail: String,
}

/// What `doctor` found.
#[napi(object)]
pub struct DoctorReport {
    /// No check failed.
    pub healthy: bool,
    /// Every check.
    pub checks: Vec<Check>,
    /// The table status, absent when it does not exist.
    pub table_status: Option<String>,
    /// The TTL setting, absent when the table does not exist.
    pub ttl: Option<Ttl>,
    /// This host's clock offset to DynamoDB's, from the `Date` headers of its answers.
    pub clock: Option<ClockCheck>,
    /// The bucket probed, with the s3 backend (its results are the `s3_*` checks).
    pub s3: Option<S3Probe>,
}

/// What `doctor`'s probe of the s3 backend's bucket looked at.
#[napi(object)]
pub struct S3Probe {
    /// The bucket probed.
    pub bucket: String,
    /// The scratch object's key (under the prefix; never a lock's).
    pub scratch_key: String,
    /// Every version of the scratch object was removed afterwards.
    pub cleaned_up: bool,
}

/// This host's clock minus DynamoDB's, in seconds: an interval, since `Date` has whole seconds.
#[napi(object)]
pub struct ClockCheck {
    /// The middle of the interval.
    pub offset: Option<f64>,
    /// The smallest offset the answers allow.
    pub low: Option<f64>,
    /// The largest offset the answers allow.
    pub high: Option<f64>,
    /// How many answers were intersected.
    pub answers: Option<u32>,
    /// Why there is no measurement (`no Date header`, `the answers disagree`).
    pub unmeasured: Option<String>,
    /// The offset the clock-skew margin allows: (margin + 1) / 2 seconds.
    pub allowed: f64,
}
