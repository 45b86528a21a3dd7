//! The S3 provider probe of [`Admin::doctor`]. S3-compatible stores differ on the conditional
//! requests the S3 lock's safety rests on: Hetzner answers a DeleteObject whose `If-Match` names
//! a wrong ETag with 204 and deletes the object (litestream PR #1509), Tencent COS stops honouring
//! put-if-absent once versioning has been on in a bucket (lance issue #6595). So `doctor` tries
//! each condition on a scratch object of its own (`<prefix>ddblock-doctor-probe-<random>`, never a
//! lock's key), reports what the server did, and removes every version of the object afterwards,
//! whatever happened before.

use rand::distr::{Alphanumeric, SampleString};

use ddblock::{Error, Result};

use crate::report::{Check, CheckId, CheckStatus, S3ProbeReport};
use crate::s3_requests::{Answer, Bucket, Condition, Versioning};

/// What the scratch object's key starts with, after the store's prefix.
pub const PROBE_KEY_PREFIX: &str = "ddblock-doctor-probe-";
/// Random characters after [`PROBE_KEY_PREFIX`]: no lock, and no other doctor run, has the key.
const SUFFIX_LEN: usize = 20;

/// The probe's checks, in report order, and what it looked at.
pub(super) async fn probe(bucket: &Bucket) -> (Vec<Check>, S3ProbeReport) {
    let key = format!(
        "{}{PROBE_KEY_PREFIX}{}",
        bucket.config().effective_prefix(),
        Alphanumeric.sample_string(&mut rand::rng(), SUFFIX_LEN)
    );
    let mut run = Run {
        b: bucket,
        key,
        versions: Vec::new(),
        may_exist: false,
        step: 0,
    };
    let versioning = bucket.versioning().await;
    let mut checks = Vec::new();
    if let Err(e) = run.conditions(&mut checks).await {
        // The check whose request failed: the first one not pushed yet.
        let failed = CONDITION_CHECKS[checks.len().min(CONDITION_CHECKS.len() - 1)];
        checks.push(check(
            failed,
            CheckStatus::Fail,
            format!(
                "the probe's request failed: {e}; the s3 lock sends the same requests, so it \
                 cannot work with this bucket as it is: fix what the error names and run doctor \
                 again"
            ),
        ));
        for id in CONDITION_CHECKS.get(checks.len()..).unwrap_or_default() {
            checks.push(check(
                *id,
                CheckStatus::Skipped,
                "not probed: an earlier probe request failed".into(),
            ));
        }
    }
    checks.push(versioning_check(bucket.name(), versioning));
    let (cleanup, cleaned_up) = run.cleanup().await;
    checks.push(cleanup);
    let report = S3ProbeReport {
        bucket: bucket.name().to_owned(),
        scratch_key: run.key,
        cleaned_up,
    };
    (checks, report)
}

/// The checks of the conditions, in the order they are probed.
const CONDITION_CHECKS: [CheckId; 4] = [
    CheckId::S3CreateIfAbsent,
    CheckId::S3EtagChanges,
    CheckId::S3IfMatchPut,
    CheckId::S3IfMatchDelete,
];

fn check(id: CheckId, status: CheckStatus, detail: String) -> Check {
    Check { id, status, detail }
}

/// What to do when a condition the lock's requests need is not honoured.
const ELSEWHERE: &str = "do not keep locks in this store (use the dynamodb backend, or a \
                         provider that passes this probe)";

/// One probe run: the scratch object and every version of it the server named.
struct Run<'a> {
    b: &'a Bucket,
    key: String,
    /// Version ids the answers named (versioned buckets): removed one by one at the end.
    versions: Vec<String>,
    /// Whether the scratch object may be there now (the cleanup deletes it).
    may_exist: bool,
    /// Writes so far, for distinct bodies.
    step: u32,
}

impl Run<'_> {
    /// A body no earlier write had (S3 ETags are content hashes: the same bytes, the same ETag).
    fn body(&mut self) -> Vec<u8> {
        self.step += 1;
        serde_json::json!({
            "ddblock_doctor_probe": self.step,
            "nonce": Alphanumeric.sample_string(&mut rand::rng(), 16),
        })
        .to_string()
        .into_bytes()
    }

    fn note(&mut self, a: &Answer) {
        if let Answer::Done { version: Some(v) } = a {
            if !self.versions.contains(v) {
                self.versions.push(v.clone());
            }
        }
    }

    async fn put(&mut self, cond: Condition<'_>) -> Result<Answer> {
        let body = self.body();
        self.may_exist = true;
        let a = self.b.probe_put(&self.key, body, cond).await?;
        self.note(&a);
        Ok(a)
    }

    async fn delete(&mut self, if_match: Option<&str>) -> Result<Answer> {
        let a = self.b.probe_delete(&self.key, if_match).await?;
        self.note(&a);
        Ok(a)
    }

    /// The current ETag; an error when the object is gone or the answer has no ETag.
    async fn etag(&mut self) -> Result<String> {
        match self.b.probe_etag(&self.key).await? {
            Some(e) if !e.is_empty() => Ok(e),
            Some(_) => Err(Error::Unsupported(
                "GetObject answered without an ETag: conditional changes cannot name a version"
                    .into(),
            )),
            None => Err(Error::Unsupported(
                "the scratch object just written is not there (GetObject: NoSuchKey): this store \
                 does not read its own writes"
                    .into(),
            )),
        }
    }

    /// Probes the four conditions, pushing one check each; `Err` stops at the request that failed.
    async fn conditions(&mut self, out: &mut Vec<Check>) -> Result<()> {
        out.push(self.create_if_absent().await?);
        let (etags, changes) = self.etag_changes().await?;
        out.push(changes);
        out.push(self.if_match_put(etags.as_ref()).await?);
        out.push(self.if_match_delete(etags.as_ref()).await?);
        Ok(())
    }

    /// `If-None-Match: *` creates the absent object and is refused once it exists.
    async fn create_if_absent(&mut self) -> Result<Check> {
        let id = CheckId::S3CreateIfAbsent;
        let first = self.put(Condition::IfAbsent).await?;
        let mut wrong = Vec::new();
        match first {
            Answer::Done { .. } => {}
            Answer::Refused(s) => wrong.push(format!(
                "a PutObject with `If-None-Match: *` of an absent object was refused ({s}): no \
                 lock could ever be acquired"
            )),
            Answer::NotImplemented => wrong.push(
                "the server does not implement `If-None-Match: *` on PutObject (501): no lock \
                 could ever be acquired"
                    .to_owned(),
            ),
        }
        if !matches!(first, Answer::Done { .. }) {
            // The later checks need the object: write it plainly.
            self.put(Condition::Always).await?;
        }
        let second = self.put(Condition::IfAbsent).await?;
        let refused = match second {
            Answer::Refused(s) => Some(s),
            Answer::Done { .. } => {
                wrong.push(
                    "a PutObject with `If-None-Match: *` over the existing object was accepted \
                     (it overwrote it): two processes could both acquire one lock"
                        .to_owned(),
                );
                None
            }
            Answer::NotImplemented => {
                if !matches!(first, Answer::NotImplemented) {
                    wrong.push(
                        "the server does not implement `If-None-Match: *` on PutObject over an \
                         existing object (501): no lock could ever be acquired"
                            .to_owned(),
                    );
                }
                None
            }
        };
        Ok(match (wrong.is_empty(), refused) {
            (true, Some(s)) => check(
                id,
                CheckStatus::Ok,
                format!(
                    "PutObject with `If-None-Match: *` created the absent scratch object and was \
                     refused ({s}) once it existed"
                ),
            ),
            _ => check(
                id,
                CheckStatus::Fail,
                format!("{}; {ELSEWHERE}", wrong.join("; ")),
            ),
        })
    }

    /// Overwriting with other bytes gives another ETag. Returns the stale and current ETags
    /// when they differ.
    async fn etag_changes(&mut self) -> Result<(Option<Etags>, Check)> {
        let id = CheckId::S3EtagChanges;
        let before = self.etag().await?;
        self.put(Condition::Always).await?;
        let after = self.etag().await?;
        if before == after {
            return Ok((
                None,
                check(
                    id,
                    CheckStatus::Fail,
                    format!(
                        "overwriting the scratch object with other bytes left its ETag {before}: \
                         an `If-Match` cannot tell a stale read from the current version, so \
                         two holders at once become possible; {ELSEWHERE}"
                    ),
                ),
            ));
        }
        let detail = format!("overwriting with other bytes changed the ETag ({before} → {after})");
        Ok((
            Some(Etags {
                stale: before,
                current: after,
            }),
            check(id, CheckStatus::Ok, detail),
        ))
    }

    /// `If-Match` on PutObject: the current ETag is accepted, a replaced version's refused.
    async fn if_match_put(&mut self, etags: Option<&Etags>) -> Result<Check> {
        let id = CheckId::S3IfMatchPut;
        let Some(etags) = etags else {
            return Ok(no_two_etags(id));
        };
        let mut wrong = Vec::new();
        match self.put(Condition::IfMatch(&etags.current)).await? {
            Answer::Done { .. } => {}
            Answer::Refused(s) => wrong.push(format!(
                "a PutObject whose `If-Match` named the current ETag {} was refused ({s}): \
                 takeovers of expired locks and refreshes would never succeed",
                etags.current
            )),
            Answer::NotImplemented => wrong.push(
                "the server does not implement `If-Match` on PutObject (501): takeovers and \
                 refreshes cannot work"
                    .to_owned(),
            ),
        }
        let stale = self.put(Condition::IfMatch(&etags.stale)).await?;
        let refused = match stale {
            Answer::Refused(s) => Some(s),
            Answer::Done { .. } => {
                wrong.push(format!(
                    "a PutObject whose `If-Match` named the replaced ETag {} was accepted: a \
                     takeover or refresh based on a stale read would overwrite the new holder's \
                     lock",
                    etags.stale
                ));
                None
            }
            Answer::NotImplemented => {
                if wrong.is_empty() {
                    wrong.push(
                        "the server does not implement `If-Match` on PutObject with a replaced \
                         ETag (501): takeovers and refreshes cannot work"
                            .to_owned(),
                    );
                }
                None
            }
        };
        Ok(match (wrong.is_empty(), refused) {
            (true, Some(s)) => check(
                id,
                CheckStatus::Ok,
                format!(
                    "PutObject with `If-Match` took the current ETag and refused ({s}) a replaced \
                     one"
                ),
            ),
            _ => check(
                id,
                CheckStatus::Fail,
                format!("{}; {ELSEWHERE}", wrong.join("; ")),
            ),
        })
    }

    /// `If-Match` on DeleteObject: a replaced version's ETag is refused, the current one deletes.
    async fn if_match_delete(&mut self, etags: Option<&Etags>) -> Result<Check> {
        let id = CheckId::S3IfMatchDelete;
        let Some(etags) = etags else {
            return Ok(no_two_etags(id));
        };
        let overwrite = self.b.config().s3_release_by_overwrite();
        // With the overwrite release the lock never sends a conditional delete: what the server
        // does with one is worth knowing, not a failure.
        let bad = if overwrite {
            CheckStatus::Warn
        } else {
            CheckStatus::Fail
        };
        let unused = if overwrite {
            "; this store releases by conditional overwrite (DDBLOCK_S3_RELEASE=overwrite), so \
             its locks never send one: keep that setting on every process that takes these locks"
        } else {
            "; set DDBLOCK_S3_RELEASE=overwrite on every process that takes these locks (releases \
             then use a conditional PutObject, which s3_if_match_put checks)"
        };
        let current = self.etag().await?;
        let stale = if current == etags.stale {
            // Not expected (every write had other bytes); fall back to the older current ETag.
            &etags.current
        } else {
            &etags.stale
        };
        let refused = match self.delete(Some(stale)).await? {
            Answer::Refused(s) => s,
            Answer::NotImplemented => {
                return Ok(check(
                    id,
                    CheckStatus::Warn,
                    "the server does not implement `If-Match` on DeleteObject (501): ddblock \
                     notices and releases by a conditional overwrite instead (set \
                     DDBLOCK_S3_RELEASE=overwrite to skip the refused delete)"
                        .to_owned(),
                ))
            }
            Answer::Done { .. } => {
                let what = match self.b.probe_etag(&self.key).await? {
                    None => {
                        self.may_exist = false;
                        "was accepted and deleted the object"
                    }
                    Some(_) => "was answered as done (the object is still there)",
                };
                return Ok(check(
                    id,
                    bad,
                    format!(
                        "a DeleteObject whose `If-Match` named the replaced ETag {stale} {what}: \
                         the server ignores `If-Match` on DeleteObject, and a release based on a \
                         stale read would delete the next holder's lock{unused}"
                    ),
                ));
            }
        };
        let current = self.etag().await?;
        let (status, detail) = match self.delete(Some(&current)).await? {
            Answer::Done { .. } => match self.b.probe_etag(&self.key).await? {
                None => {
                    self.may_exist = false;
                    (
                        CheckStatus::Ok,
                        format!(
                            "DeleteObject with `If-Match` refused ({refused}) a replaced ETag and \
                             deleted the object on the current one"
                        ),
                    )
                }
                Some(_) => (
                    bad,
                    format!(
                        "a DeleteObject whose `If-Match` named the current ETag was answered as \
                         done, but the object is still there: releases would leave locks \
                         behind{unused}"
                    ),
                ),
            },
            Answer::Refused(s) => (
                bad,
                format!(
                    "a DeleteObject whose `If-Match` named the current ETag {current} was refused \
                     ({s}): releases would never succeed (locks would stay until they \
                     expire){unused}"
                ),
            ),
            Answer::NotImplemented => (
                CheckStatus::Warn,
                "the server does not implement `If-Match` on DeleteObject (501): ddblock releases \
                 by a conditional overwrite instead"
                    .to_owned(),
            ),
        };
        Ok(check(id, status, detail))
    }

    /// Removes the scratch object and every version of it the answers named. Never fails the
    /// doctor: an object left behind is reported (warn) with its key, for removal by hand.
    async fn cleanup(&mut self) -> (Check, bool) {
        let id = CheckId::S3Cleanup;
        let mut problems = Vec::new();
        if self.may_exist {
            match self.delete(None).await {
                Ok(Answer::Done { .. }) => self.may_exist = false,
                Ok(Answer::Refused(s)) => problems.push(format!("DeleteObject was refused ({s})")),
                Ok(Answer::NotImplemented) => {
                    problems.push("DeleteObject is not implemented (501)".to_owned())
                }
                // The bucket is missing: nothing can have been left in it.
                Err(Error::Config(_)) => self.may_exist = false,
                Err(e) => problems.push(e.to_string()),
            }
        }
        let mut removed = 0;
        for v in std::mem::take(&mut self.versions) {
            match self.b.probe_delete_version(&self.key, &v).await {
                Ok(()) => removed += 1,
                Err(e) => problems.push(format!("version {v}: {e}")),
            }
        }
        let versions = match removed {
            0 => String::new(),
            1 => " (1 version)".to_owned(),
            n => format!(" ({n} versions and delete markers)"),
        };
        if problems.is_empty() {
            let detail = format!("removed the scratch object `{}`{versions}", self.key);
            (check(id, CheckStatus::Ok, detail), true)
        } else {
            let detail = format!(
                "could not remove the scratch object `{}` (or its versions): {}; delete it by \
                 hand (no lock reads it, and every doctor run uses a new key)",
                self.key,
                problems.join("; ")
            );
            (check(id, CheckStatus::Warn, detail), false)
        }
    }
}

/// An ETag replaced by an overwrite, and the one after it.
struct Etags {
    stale: String,
    current: String,
}

fn no_two_etags(id: CheckId) -> Check {
    check(
        id,
        CheckStatus::Skipped,
        "not probed: the ETag did not change on overwrite, so a replaced version cannot be named"
            .into(),
    )
}

/// The versioning check: never enabled is ok; enabled or suspended is a warning.
fn versioning_check(bucket: &str, v: Result<Versioning>) -> Check {
    let id = CheckId::S3Versioning;
    // Tencent COS (lance issue #6595) ignores put-if-absent in a bucket that has ever had
    // versioning on, suspended or not; the probe above tried the bucket as it is now.
    let cos = "some S3-compatible stores (Tencent COS) stop honouring put-if-absent once \
               versioning has been on, so run doctor again after any versioning change";
    let versions = "every acquire, refresh and release leaves a noncurrent version (each delete a \
                    delete marker), kept and billed until deleted: add a lifecycle rule that \
                    expires noncurrent versions and expired delete markers under the lock prefix";
    match v {
        Ok(Versioning::Never) => check(
            id,
            CheckStatus::Ok,
            format!("versioning has never been enabled on bucket `{bucket}`; {cos}"),
        ),
        Ok(Versioning::Enabled) => check(
            id,
            CheckStatus::Warn,
            format!(
                "versioning is enabled on bucket `{bucket}`: ddblock does not need it, and \
                 {versions}; {cos}"
            ),
        ),
        Ok(Versioning::Suspended) => check(
            id,
            CheckStatus::Warn,
            format!(
                "versioning is suspended on bucket `{bucket}` (it was enabled once): versions \
                 written while it was on stay until deleted; {cos}"
            ),
        ),
        Ok(Versioning::Other(s)) => check(
            id,
            CheckStatus::Unknown,
            format!("GetBucketVersioning answered the status {s:?}, which ddblock does not know"),
        ),
        Err(e) => check(
            id,
            CheckStatus::Unknown,
            format!(
                "the versioning state is unknown (GetBucketVersioning failed: {e}); the \
                 conditions were probed directly all the same"
            ),
        ),
    }
}
