//! `doctor`'s S3 provider probe against moto's S3 (which honours `If-None-Match: *` and `If-Match`
//! on PutObject and DeleteObject), and through the fault proxy acting as stores that ignore one of
//! those conditions (it drops the header and forwards everything else): each result reported, a
//! condition the lock relies on failing the doctor, the scratch object always removed, lock
//! objects never touched. dynalite has no S3: these run on moto only.

use ddblock::{LockBackendKind, Store, StoreConfig};
use ddblock_admin::{Admin, CheckId, CheckStatus, DoctorOptions, DoctorReport, PROBE_KEY_PREFIX};
use ddblock_fault_proxy::STRIPPED;
use ddblock_test_support::faulty::{s3_ignoring, Ignored};
use ddblock_test_support::{new_bucket, s3_client_for, Server};

const S3_CHECKS: [CheckId; 6] = [
    CheckId::S3CreateIfAbsent,
    CheckId::S3EtagChanges,
    CheckId::S3IfMatchPut,
    CheckId::S3IfMatchDelete,
    CheckId::S3Versioning,
    CheckId::S3Cleanup,
];

fn moto() -> String {
    Server::Moto.endpoint()
}

/// An s3 store on `bucket` at `endpoint`, with no table (the probe does not need one).
fn store(endpoint: &str, bucket: &str, overwrite: bool) -> Store {
    Store::new(
        StoreConfig::builder()
            .endpoint(endpoint)
            .region("us-east-1")
            .table("no-such-table-probe")
            .prefix("app_")
            .lock_backend(LockBackendKind::S3)
            .s3_bucket(bucket)
            .s3_release_by_overwrite(overwrite)
            .build()
            .unwrap(),
    )
}

/// The doctor without the item scan and the clock measurement: the table part and the probe.
async fn doctor(store: &Store) -> DoctorReport {
    let opts = DoctorOptions::new().scan(None).clock_answers(0);
    Admin::new(store).doctor(&opts, |_| {}).await.unwrap()
}

fn status(r: &DoctorReport, id: CheckId) -> CheckStatus {
    r.check(id)
        .unwrap_or_else(|| panic!("no {} check: {r:#?}", id.as_str()))
        .status
}

fn detail(r: &DoctorReport, id: CheckId) -> &str {
    &r.check(id).unwrap().detail
}

/// Writes `body` as object `key` of `bucket`; returns its ETag.
async fn put_object(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, body: &str) -> String {
    s3.put_object()
        .bucket(bucket)
        .key(key)
        .body(body.as_bytes().to_vec().into())
        .send()
        .await
        .unwrap()
        .e_tag()
        .unwrap()
        .to_owned()
}

/// A DeleteObject of `key` in `bucket` with `If-Match: etag`.
async fn delete_if_match(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    etag: &str,
) -> Result<(), String> {
    s3.delete_object()
        .bucket(bucket)
        .key(key)
        .if_match(etag)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

/// Every key in `bucket`, and how many versions and delete markers it holds.
async fn contents(bucket: &str) -> (Vec<String>, usize) {
    let s3 = s3_client_for(&moto());
    let keys = s3
        .list_objects_v2()
        .bucket(bucket)
        .send()
        .await
        .unwrap()
        .contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect();
    let v = s3
        .list_object_versions()
        .bucket(bucket)
        .send()
        .await
        .unwrap();
    (keys, v.versions().len() + v.delete_markers().len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_passes_on_moto_and_reports_each_result() {
    let bucket = new_bucket(&moto()).await;
    let store = store(&moto(), &bucket, false);
    // A held lock: the probe never touches it.
    let lock = store.lock("orders", 60).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    let before = lock.current_holder().await.unwrap();

    let r = doctor(&store).await;
    assert!(r.healthy(), "{r:#?}");
    // Every S3 check, after the table's, in order; the missing table only warns.
    let ids: Vec<CheckId> = r.checks.iter().map(|c| c.id).collect();
    assert_eq!(&ids[ids.len() - 6..], S3_CHECKS, "{ids:?}");
    assert_eq!(status(&r, CheckId::Table), CheckStatus::Warn);
    assert!(detail(&r, CheckId::Table).contains(&format!("locks live in bucket `{bucket}`")));
    for id in S3_CHECKS {
        assert_eq!(status(&r, id), CheckStatus::Ok, "{:#?}", r.check(id));
    }
    assert!(detail(&r, CheckId::S3CreateIfAbsent).contains("refused (412)"));
    assert!(detail(&r, CheckId::S3EtagChanges).contains("changed the ETag"));
    assert!(detail(&r, CheckId::S3IfMatchPut).contains("refused (412) a replaced"));
    assert!(detail(&r, CheckId::S3IfMatchDelete).contains("refused (412) a replaced ETag"));
    assert!(detail(&r, CheckId::S3Versioning).contains("never been enabled"));
    let probe = r.s3.as_ref().expect("the probe's report");
    assert_eq!(probe.bucket, bucket);
    assert!(
        probe
            .scratch_key
            .starts_with(&format!("app_{PROBE_KEY_PREFIX}")),
        "{probe:?}"
    );
    assert!(probe.cleaned_up);
    assert!(detail(&r, CheckId::S3Cleanup).contains(&probe.scratch_key));

    // Only the lock's object is left, as it was; every run probes a new key.
    assert_eq!(contents(&bucket).await, (vec!["app_orders".to_owned()], 1));
    assert_eq!(lock.current_holder().await.unwrap(), before);
    let again = doctor(&store).await;
    assert_ne!(again.s3.unwrap().scratch_key, probe.scratch_key);
    assert!(lock.release().await.unwrap().is_released());
}

/// The case (Hetzner: a DeleteObject with a wrong `If-Match` answers 204 and deletes):
/// the proxy drops `If-Match` from DELETE requests, and the probe fails `s3_if_match_delete`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_ignoring_if_match_on_delete_fails_the_probe() {
    let bucket = new_bucket(&moto()).await;
    let proxy = s3_ignoring(&moto(), &[Ignored::IfMatchOnDelete]).await;

    // What the probe has to catch, shown through the proxy: a delete naming a replaced ETag
    // deletes the object.
    let s3 = proxy.s3_client();
    let key = "app_shown-by-hand";
    let stale = put_object(&s3, &bucket, key, "one").await;
    put_object(&s3, &bucket, key, "two").await;
    delete_if_match(&s3, &bucket, key, &stale)
        .await
        .expect("the stale delete is accepted through the proxy");
    assert_eq!(contents(&bucket).await, (vec![], 0), "and it deleted");
    assert_eq!(proxy.stats().count("DELETE", STRIPPED), 1);
    // Straight to moto the same delete is refused: the proxy is what ignores the condition.
    let direct = s3_client_for(&moto());
    let stale = put_object(&direct, &bucket, key, "three").await;
    put_object(&direct, &bucket, key, "four").await;
    let refused = delete_if_match(&direct, &bucket, key, &stale).await;
    assert!(refused.is_err(), "moto refuses a stale If-Match");
    direct
        .delete_object()
        .bucket(&bucket)
        .key(key)
        .send()
        .await
        .unwrap();

    proxy.reset();
    let r = doctor(&store(&proxy.endpoint, &bucket, false)).await;
    assert!(!r.healthy(), "{r:#?}");
    assert_eq!(status(&r, CheckId::S3IfMatchDelete), CheckStatus::Fail);
    let d = detail(&r, CheckId::S3IfMatchDelete);
    assert!(d.contains("was accepted and deleted the object"), "{d}");
    assert!(
        d.contains("DDBLOCK_S3_RELEASE=overwrite"),
        "what to do: {d}"
    );
    for id in [
        CheckId::S3CreateIfAbsent,
        CheckId::S3EtagChanges,
        CheckId::S3IfMatchPut,
        CheckId::S3Versioning,
        CheckId::S3Cleanup,
    ] {
        assert_eq!(status(&r, id), CheckStatus::Ok, "{:#?}", r.check(id));
    }
    assert!(proxy.stats().count("DELETE", STRIPPED) >= 1);
    assert_eq!(contents(&bucket).await, (vec![], 0), "cleaned up");

    // A store that releases by overwrite never sends a conditional delete: a warning.
    let r = doctor(&store(&proxy.endpoint, &bucket, true)).await;
    assert!(r.healthy(), "{r:#?}");
    assert_eq!(status(&r, CheckId::S3IfMatchDelete), CheckStatus::Warn);
    assert!(detail(&r, CheckId::S3IfMatchDelete).contains("keep that setting"));
}

/// Stores that ignore a condition on PutObject: the check relying on it fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_ignoring_a_put_condition_fail_the_probe() {
    for (ignored, failing, says) in [
        (
            Ignored::IfNoneMatchOnPut,
            CheckId::S3CreateIfAbsent,
            "was accepted (it overwrote it)",
        ),
        (
            Ignored::IfMatchOnPut,
            CheckId::S3IfMatchPut,
            "named the replaced ETag",
        ),
    ] {
        let bucket = new_bucket(&moto()).await;
        let proxy = s3_ignoring(&moto(), &[ignored]).await;
        let r = doctor(&store(&proxy.endpoint, &bucket, false)).await;
        assert!(!r.healthy(), "{ignored:?}: {r:#?}");
        assert_eq!(status(&r, failing), CheckStatus::Fail, "{ignored:?}");
        let d = detail(&r, failing);
        assert!(d.contains(says), "{ignored:?}: {d}");
        assert!(
            d.contains("do not keep locks in this store"),
            "{ignored:?}: {d}"
        );
        let failed: Vec<&str> = r
            .checks
            .iter()
            .filter(|c| c.status == CheckStatus::Fail)
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(failed, [failing.as_str()], "{ignored:?}");
        assert!(proxy.stats().count("PUT", STRIPPED) >= 1);
        assert_eq!(
            contents(&bucket).await,
            (vec![], 0),
            "{ignored:?}: cleaned up"
        );
    }
}

/// Versioning on: a warning, and every version and delete marker of the scratch object removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioning_warns_and_every_version_is_removed() {
    use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
    let bucket = new_bucket(&moto()).await;
    s3_client_for(&moto())
        .put_bucket_versioning()
        .bucket(&bucket)
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let r = doctor(&store(&moto(), &bucket, false)).await;
    assert!(r.healthy(), "a warning only: {r:#?}");
    assert_eq!(status(&r, CheckId::S3Versioning), CheckStatus::Warn);
    let d = detail(&r, CheckId::S3Versioning);
    assert!(
        d.contains("versioning is enabled") && d.contains("lifecycle rule"),
        "{d}"
    );
    assert!(d.contains("Tencent COS"), "{d}");
    for id in [
        CheckId::S3CreateIfAbsent,
        CheckId::S3EtagChanges,
        CheckId::S3IfMatchPut,
        CheckId::S3IfMatchDelete,
        CheckId::S3Cleanup,
    ] {
        assert_eq!(status(&r, id), CheckStatus::Ok, "{:#?}", r.check(id));
    }
    assert!(detail(&r, CheckId::S3Cleanup).contains("versions"));
    assert_eq!(contents(&bucket).await, (vec![], 0), "no version left");
}

/// A missing bucket: the first probe request fails the doctor, naming the bucket; the rest is
/// skipped, nothing is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_bucket_fails_the_probe() {
    let r = doctor(&store(&moto(), "no-such-bucket-probe", false)).await;
    assert!(!r.healthy());
    assert_eq!(status(&r, CheckId::S3CreateIfAbsent), CheckStatus::Fail);
    let d = detail(&r, CheckId::S3CreateIfAbsent);
    assert!(d.contains("`no-such-bucket-probe` does not exist"), "{d}");
    for id in [
        CheckId::S3EtagChanges,
        CheckId::S3IfMatchPut,
        CheckId::S3IfMatchDelete,
    ] {
        assert_eq!(status(&r, id), CheckStatus::Skipped);
    }
    assert_eq!(status(&r, CheckId::S3Versioning), CheckStatus::Unknown);
    assert_eq!(status(&r, CheckId::S3Cleanup), CheckStatus::Ok);
}

/// With locks in the table there is no probe at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_probe_without_the_s3_backend() {
    let store = Store::new(
        StoreConfig::builder()
            .endpoint(moto())
            .region("us-east-1")
            .table("no-such-table-probe")
            .build()
            .unwrap(),
    );
    let r = doctor(&store).await;
    assert!(r.s3.is_none());
    assert!(r.checks.iter().all(|c| !c.id.as_str().starts_with("s3_")));
    assert_eq!(
        status(&r, CheckId::Table),
        CheckStatus::Fail,
        "no bucket: the table is needed"
    );
}
