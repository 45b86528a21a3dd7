//! Uncontended acquire + release: requests per cycle of every front (through the fault proxy's
//! counters), and client CPU per cycle against the raw SDK of each language.

use std::collections::BTreeMap;
use std::time::Instant;

use ddblock::aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure,
};
use ddblock::aws_sdk_dynamodb::Client;
use ddblock_fault_proxy::ProxyHandle;
use ddblock_test_support::laravel::{self, PeerEnv};
use serde::Serialize;
use serde_json::{json, Value};

use crate::util::{
    cpu_seconds, create_table, last_json, num, run_child, store_at, table_name, unix_now, Ctx,
};
pub use ddblock_bench_cycle::core_cycle;
use ddblock_bench_cycle::measure;

/// Requests per uncontended cycle of one front.
#[derive(Debug, Clone, Serialize)]
pub struct RequestRow {
    pub front: String,
    pub cycles: usize,
    /// Requests by operation, per cycle.
    pub per_cycle: BTreeMap<String, f64>,
    pub writes: f64,
    pub reads: f64,
    pub total: f64,
}

fn request_row(front: &str, cycles: usize, proxy: &ProxyHandle) -> RequestRow {
    let stats = proxy.stats();
    let per_cycle: BTreeMap<String, f64> = stats
        .ops
        .keys()
        .filter(|op| !op.starts_with("__"))
        .map(|op| (op.clone(), stats.total(op) as f64 / cycles.max(1) as f64))
        .collect();
    let sum = |ops: &[&str]| ops.iter().map(|o| per_cycle.get(*o).unwrap_or(&0.0)).sum();
    RequestRow {
        front: front.into(),
        cycles,
        writes: sum(&["PutItem", "UpdateItem", "DeleteItem"]),
        reads: sum(&["GetItem", "BatchGetItem"]),
        total: per_cycle.values().sum(),
        per_cycle,
    }
}

/// Figure 1: requests per uncontended acquire + release, every front, through the proxy.
pub async fn requests(ctx: &Ctx, proxy: &ProxyHandle) -> Result<Vec<RequestRow>, String> {
    let n = ctx.profile.req_cycles;
    let url = proxy.url();
    let mut rows = Vec::new();
    for driver in ["laravel", "ddblock"] {
        let table = table_name("req");
        create_table(&ctx.dynalite, &table).await?;
        proxy.reset();
        php_worker(ctx, &url, &table, driver, n, 0).await?;
        let front = match driver {
            "laravel" => "stock Laravel 8.83",
            _ => "Laravel + ddblock driver",
        };
        rows.push(request_row(front, n, proxy));
    }

    let table = table_name("req");
    create_table(&ctx.dynalite, &table).await?;
    let store = store_at(&url, &table)?;
    store.client().await.map_err(|e| e.to_string())?;
    proxy.reset();
    let lock = store.lock("req", 10).map_err(|e| e.to_string())?;
    for _ in 0..n {
        core_cycle(&lock).await?;
    }
    rows.push(request_row("Rust (core)", n, proxy));

    proxy.reset();
    let py = bench_script(
        ctx,
        Script::Python,
        &["--mode", "cycles"],
        &url,
        &table,
        n,
        0,
    )
    .await?;
    rows.push(request_row("Python", n, proxy));
    let _ = py;

    proxy.reset();
    bench_script(ctx, Script::Node, &["--mode", "cycles"], &url, &table, n, 0).await?;
    rows.push(request_row("Node", n, proxy));

    proxy.reset();
    for _ in 0..n {
        cli_cycle(ctx, &url, &table).await?;
    }
    rows.push(request_row("CLI", n, proxy));
    Ok(rows)
}

/// The same two requests as the core's cycle, sent with the raw SDK client: the acquire
/// UpdateItem (attempt id and fence included) and the owner-conditioned DeleteItem.
pub async fn raw_cycle(client: &Client, table: &str, key: &str, owner: &str) -> Result<(), String> {
    let now = unix_now() as i64;
    let attempt = ddblock::lock::random_owner();
    let owner = AttributeValue::S(owner.to_owned());
    client
        .update_item()
        .table_name(table)
        .key("key", AttributeValue::S(key.to_owned()))
        .update_expression("SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, #fence = if_not_exists(#fence, :fence_base) + :one")
        .condition_expression("attribute_not_exists(#key) OR #expires_at < :now")
        .expression_attribute_names("#key", "key")
        .expression_attribute_names("#value", "value")
        .expression_attribute_names("#expires_at", "expires_at")
        .expression_attribute_names("#attempt", "ddblock_attempt")
        .expression_attribute_names("#fence", "ddblock_fence")
        .expression_attribute_values(":owner", owner.clone())
        .expression_attribute_values(":expires_at", AttributeValue::N((now + 10).to_string()))
        .expression_attribute_values(":attempt", AttributeValue::S(attempt))
        .expression_attribute_values(
            ":fence_base",
            AttributeValue::N(((unix_now() * 1e6) as u64).to_string()),
        )
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .expression_attribute_values(":now", AttributeValue::N((now - 2).to_string()))
        .return_values(ReturnValue::UpdatedNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await
        .map_err(|e| format!("raw UpdateItem: {e:?}"))?;
    client
        .delete_item()
        .table_name(table)
        .key("key", AttributeValue::S(key.to_owned()))
        .condition_expression("#value = :owner")
        .expression_attribute_names("#value", "value")
        .expression_attribute_values(":owner", owner)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await
        .map_err(|e| format!("raw DeleteItem: {e:?}"))?;
    Ok(())
}

/// CPU and wall time per cycle of one client.
#[derive(Debug, Clone, Serialize)]
pub struct CpuRow {
    pub client: String,
    pub cpu_us: f64,
    pub wall_us: f64,
}

/// A pair of figures measured alternately (A B A B), averaged.
#[derive(Debug, Clone, Serialize)]
pub struct CpuPair {
    /// What is compared, e.g. `Rust core vs aws-sdk-dynamodb`.
    pub pair: String,
    pub ours: CpuRow,
    pub baseline: CpuRow,
    /// ours / baseline CPU per cycle.
    pub cpu_ratio: f64,
    /// ours / baseline cycles per second.
    pub rate_ratio: f64,
    /// Versions and other facts the child reported.
    pub notes: Value,
}

fn pair(name: &str, ours: CpuRow, baseline: CpuRow, notes: Value) -> CpuPair {
    CpuPair {
        pair: name.into(),
        cpu_ratio: ours.cpu_us / baseline.cpu_us.max(1e-9),
        rate_ratio: baseline.wall_us / ours.wall_us.max(1e-9),
        ours,
        baseline,
        notes,
    }
}

/// Figure 2: client CPU per cycle, every front against its language's raw SDK (dynalite, no
/// proxy: the server is another process and is not counted).
pub async fn cpu(ctx: &Ctx) -> Result<Vec<CpuPair>, String> {
    let (n, w) = (ctx.profile.cpu_cycles, ctx.profile.cpu_warmup);
    let ep = ctx.dynalite.clone();
    let table = table_name("cpu");
    create_table(&ep, &table).await?;
    let store = store_at(&ep, &table)?;
    let client = store.client().await.map_err(|e| e.to_string())?;
    let lock = store.lock("cpu", 10).map_err(|e| e.to_string())?;
    let owner = format!("s:16:\"{}\";", ddblock::lock::random_owner());
    let (mut core, mut raw) = ((0.0, 0.0), (0.0, 0.0));
    for _ in 0..2 {
        let c = measure(w, n, || core_cycle(&lock)).await?;
        let r = measure(w, n, || raw_cycle(&client, &table, "cpu-raw", &owner)).await?;
        core = (core.0 + c.0 / 2.0, core.1 + c.1 / 2.0);
        raw = (raw.0 + r.0 / 2.0, raw.1 + r.1 / 2.0);
    }
    let core_row = CpuRow {
        client: "ddblock core (Rust)".into(),
        cpu_us: core.0,
        wall_us: core.1,
    };
    let mut out = vec![pair(
        "Rust core vs aws-sdk-dynamodb (same client, same two requests)",
        core_row.clone(),
        CpuRow {
            client: "aws-sdk-dynamodb".into(),
            cpu_us: raw.0,
            wall_us: raw.1,
        },
        json!({}),
    )];

    // A binding against its language's raw SDK, from its script's answer: the `ddblock_*`
    // figures against the `{sdk}_*` ones, the SDK's version under `sdk`.
    let binding = |name: &str, lang: &str, answer: Value, sdk: &str, label: &str| {
        let row = |client: String, of: &str| CpuRow {
            client,
            cpu_us: num(&answer, &format!("{of}_cpu_us")),
            wall_us: num(&answer, &format!("{of}_wall_us")),
        };
        let version = answer[sdk].as_str().unwrap_or("?");
        let ours = row(format!("ddblock ({lang})"), "ddblock");
        let baseline = row(format!("{label} {version}"), sdk);
        pair(name, ours, baseline, answer.clone())
    };
    let py = bench_script(ctx, Script::Python, &["--mode", "cpu"], &ep, &table, n, w).await?;
    out.push(binding(
        "Python binding vs boto3",
        "Python",
        py,
        "boto3",
        "boto3",
    ));
    let nd = bench_script(ctx, Script::Node, &["--mode", "cpu"], &ep, &table, n, w).await?;
    let name = "Node binding vs @aws-sdk/client-dynamodb v3";
    out.push(binding(name, "Node", nd, "sdk", "@aws-sdk/client-dynamodb"));

    // PHP: each driver in its own process (the driver is chosen per process), alternately.
    let (mut drv, mut lar) = ((0.0, 0.0), (0.0, 0.0));
    for _ in 0..2 {
        for driver in ["ddblock", "laravel"] {
            let s = php_worker(ctx, &ep, &table, driver, n, w).await?;
            let per = (
                num(&s, "cpu_s") / n as f64 * 1e6 / 2.0,
                num(&s, "wall_s") / n as f64 * 1e6 / 2.0,
            );
            let acc = if driver == "ddblock" {
                &mut drv
            } else {
                &mut lar
            };
            *acc = (acc.0 + per.0, acc.1 + per.1);
        }
    }
    out.push(pair(
        "PHP driver vs stock Laravel 8.83 (their own requests: 2 vs 3 per cycle)",
        CpuRow {
            client: "Laravel + ddblock driver".into(),
            cpu_us: drv.0,
            wall_us: drv.1,
        },
        CpuRow {
            client: "stock Laravel 8.83".into(),
            cpu_us: lar.0,
            wall_us: lar.1,
        },
        json!({}),
    ));

    // The bindings over the core they wrap (the core's figure from this run).
    for (name, ours) in [
        ("Python binding over the Rust core", out[1].ours.clone()),
        ("Node binding over the Rust core", out[2].ours.clone()),
    ] {
        out.push(pair(name, ours, core_row.clone(), json!({})));
    }
    // The CLI: two processes per cycle (children's CPU).
    let cli_n = (n / 20).max(2);
    let (c0, t0) = (cpu_seconds(true), Instant::now());
    for _ in 0..cli_n {
        cli_cycle(ctx, &ep, &table).await?;
    }
    let cli = CpuRow {
        client: "ddblock CLI (acquire + release: two processes)".into(),
        cpu_us: (cpu_seconds(true) - c0) / cli_n as f64 * 1e6,
        wall_us: t0.elapsed().as_secs_f64() / cli_n as f64 * 1e6,
    };
    out.push(pair(
        "CLI over the Rust core",
        cli,
        core_row,
        json!({"cycles": cli_n}),
    ));

    // What ddblock's metrics cost: the core's cycle in child processes with an application's
    // OpenTelemetry SDK attached, with metrics compiled in and no meter provider (this binary),
    // and with none compiled in (ddblock-bench-cycle, built on its own beside this binary:
    // compat-tests/bench/run.sh). Six rounds, each in another order (A B C, B C A, C A B, ...):
    // a child's place in a round moves its figure by a few percent.
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let bare = me.with_file_name("ddblock-bench-cycle");
    let modes = ["otel", "plain", "compiled-out"];
    const ROUNDS: usize = 6;
    let mut acc = [(0.0, 0.0); 3];
    for round in 0..ROUNDS {
        for k in 0..modes.len() {
            let i = (round + k) % modes.len();
            let mode = modes[i];
            let tail = [
                ep.clone(),
                table.clone(),
                format!("cpu-{mode}"),
                n.to_string(),
                w.to_string(),
            ];
            let (program, args) = match mode {
                "compiled-out" => (bare.clone(), tail.to_vec()),
                _ => {
                    let head = ["cpu-child".to_owned(), mode.to_owned()];
                    (me.clone(), [head.as_slice(), tail.as_slice()].concat())
                }
            };
            let text = run_child(&program.to_string_lossy(), &args, &[], "cpu child").await?;
            let answer = last_json(&text, "cpu child")?;
            if answer["metrics"].as_bool() != Some(mode != "compiled-out") {
                return Err(format!("cpu child {mode}: metrics compiled in? {answer}"));
            }
            acc[i].0 += num(&answer, "cpu_us") / ROUNDS as f64;
            acc[i].1 += num(&answer, "wall_us") / ROUNDS as f64;
        }
    }
    let row = |client: &str, (cpu_us, wall_us): (f64, f64)| CpuRow {
        client: client.into(),
        cpu_us,
        wall_us,
    };
    let plain = "ddblock core, metrics compiled in, no meter provider";
    out.push(pair(
        "Rust core with the OpenTelemetry SDK attached vs without (child processes)",
        row(
            "ddblock core + SdkMeterProvider (in-memory exporter)",
            acc[0],
        ),
        row(plain, acc[1]),
        json!({}),
    ));
    out.push(pair(
        "Rust core with its metrics compiled in, nobody listening, vs compiled out (child processes)",
        row(plain, acc[1]),
        row("ddblock core without the otel feature", acc[2]),
        json!({}),
    ));
    Ok(out)
}

/// `ddblock-bench cpu-child MODE ENDPOINT TABLE NAME CYCLES WARMUP`: the core's uncontended cycle
/// in this process ([`ddblock_bench_cycle::child`]), with an OpenTelemetry SDK meter provider
/// installed first (`otel`) or none (`plain`).
pub async fn cpu_child() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(2).collect();
    let Some((mode, rest)) = args.split_first() else {
        return Err(
            "usage: ddblock-bench cpu-child otel|plain ENDPOINT TABLE NAME CYCLES WARMUP".into(),
        );
    };
    let _provider = (mode == "otel").then(|| {
        let exporter = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
        let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
            .with_reader(opentelemetry_sdk::metrics::PeriodicReader::builder(exporter).build())
            .build();
        opentelemetry::global::set_meter_provider(provider.clone());
        provider
    });
    ddblock_bench_cycle::child(rest).await
}

/// The PHP peer (`compat-tests/laravel/harness.php`): `cycles` uncontended cycles after `warmup`
/// on one name; its answer to the `cycles` request.
async fn php_worker(
    ctx: &Ctx,
    endpoint: &str,
    table: &str,
    driver: &str,
    cycles: usize,
    warmup: usize,
) -> Result<Value, String> {
    let record = ctx.scratch.join(format!("{table}.{driver}.jsonl"));
    let env = PeerEnv::new(endpoint, table, "laravel8", "", driver);
    let request = json!({
        "op": "cycles",
        "names": [format!("php-{driver}")],
        "cycles": cycles + warmup,
        "warmup": warmup,
        "ttl": 10,
        "work_ms": 0,
        "record": record.display().to_string(),
    });
    let summary = laravel::request(&env, &request, "PHP worker").await;
    let _ = std::fs::remove_file(&record);
    let summary = summary?;
    if num(&summary, "released") as usize != cycles + warmup {
        return Err(format!(
            "PHP worker ({driver}): not every cycle released: {summary}"
        ));
    }
    Ok(summary)
}

/// A binding's bench script.
#[derive(Debug, Clone, Copy)]
pub enum Script {
    /// `bindings/python/bench.py`, run by `ctx.python`.
    Python,
    /// `bindings/node/bench.mjs`, run by `ctx.node`.
    Node,
}

/// A binding's bench script in a mode; its JSON line.
pub async fn bench_script(
    ctx: &Ctx,
    script: Script,
    mode: &[&str],
    endpoint: &str,
    table: &str,
    cycles: usize,
    warmup: usize,
) -> Result<Value, String> {
    let (program, path, what) = match script {
        Script::Python => (&ctx.python, "bindings/python/bench.py", "bench.py"),
        Script::Node => (&ctx.node, "bindings/node/bench.mjs", "bench.mjs"),
    };
    let mut args = vec![ctx.root.join(path).display().to_string()];
    args.extend(mode.iter().map(|s| s.to_string()));
    args.extend([
        "--json".into(),
        "--endpoint".into(),
        endpoint.into(),
        "--table".into(),
        table.into(),
        "--cycles".into(),
        cycles.to_string(),
        "--warmup".into(),
        warmup.to_string(),
    ]);
    let out = run_child(program, &args, &[], what).await?;
    last_json(&out, what)
}

/// One `ddblock acquire` + `ddblock release` (two processes).
async fn cli_cycle(ctx: &Ctx, endpoint: &str, table: &str) -> Result<(), String> {
    let cli = ctx.cli.display().to_string();
    let base = |cmd: &str| -> Vec<String> {
        vec![
            cmd.into(),
            "cli".into(),
            "--endpoint".into(),
            endpoint.into(),
            "--table".into(),
            table.into(),
            "--region".into(),
            "us-east-1".into(),
            "--prefix".into(),
            String::new(),
        ]
    };
    let mut acquire = base("acquire");
    acquire.extend(["--ttl".into(), "10".into()]);
    let owner = run_child(&cli, &acquire, &[], "ddblock acquire").await?;
    let mut release = base("release");
    release.extend(["--owner".into(), owner.trim().to_owned()]);
    run_child(&cli, &release, &[], "ddblock release").await?;
    Ok(())
}
