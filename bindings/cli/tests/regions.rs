//! Tables that span Regions through the CLI (docs/semantics.md "Multi-Region"), behind the fault
//! proxy (no local server has global tables): a global table with eventual consistency (MREC) is
//! a `config` error with exit 1 and nothing written, unless `--allow-eventual-global-table true`;
//! MRSC's `ReplicatedWriteConflictException` is sent again by `acquire`, which tries once (before,
//! it sent one UpdateItem and exited 1 with a service error).

mod common;

use common::{json_of, Ctx, Server};
use ddblock_fault_proxy::{FaultConfig, FORWARDED_OK, REPLICATED_CONFLICT};
use ddblock_test_support::faulty::{faulty, global_table};
use serde_json::{json, Value};
use tokio::runtime::Runtime;

fn acquire(ctx: &Ctx, extra: &[&str]) -> (i32, Value) {
    let out = ctx
        .cmd()
        .args(extra)
        .args(["--json", "acquire", "job", "--ttl", "30"])
        .output()
        .unwrap();
    json_of(&out, "acquire")
}

#[test]
fn an_eventual_global_table_is_a_config_error_with_exit_1() {
    let base = Ctx::new(Server::Moto);
    let rt = Runtime::new().unwrap();
    let faults = FaultConfig {
        describe_table: global_table(None),
        ..FaultConfig::default()
    };
    let proxy = rt.block_on(faulty(&base.endpoint, faults));
    let ctx = base.via(proxy.endpoint.clone());
    let (code, out) = acquire(&ctx, &[]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["error"]["kind"], "config", "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("(MREC; replicas: us-east-1, eu-west-1)"),
        "{message}"
    );
    assert!(
        !proxy.stats().ops.contains_key("UpdateItem"),
        "nothing written"
    );
    let (code, out) = acquire(&ctx, &["--allow-eventual-global-table", "true"]);
    assert_eq!((code, &out["acquired"]), (0, &json!(true)), "{out}");
}

#[test]
fn a_replicated_write_conflict_is_sent_again_by_a_try_once_acquire() {
    let base = Ctx::new(Server::Moto);
    let rt = Runtime::new().unwrap();
    let faults = FaultConfig {
        describe_table: global_table(Some("STRONG")),
        sequence: [(
            "UpdateItem".to_owned(),
            vec!["replicated_conflict".to_owned()],
        )]
        .into(),
        ..FaultConfig::default()
    };
    let proxy = rt.block_on(faulty(&base.endpoint, faults));
    let (code, out) = acquire(&base.via(proxy.endpoint.clone()), &[]);
    assert_eq!((code, &out["acquired"]), (0, &json!(true)), "{out}");
    let stats = proxy.stats();
    assert_eq!(
        stats.count("UpdateItem", REPLICATED_CONFLICT),
        1,
        "{stats:?}"
    );
    assert_eq!(stats.count("UpdateItem", FORWARDED_OK), 1, "{stats:?}");
}
