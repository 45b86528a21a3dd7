//! `ddblock-bench-cycle ENDPOINT TABLE NAME CYCLES WARMUP`: the core's uncontended cycle, as
//! this build of the core runs it (built alone: no metrics compiled in).

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = ddblock_bench_cycle::child(&args).await {
        eprintln!("ddblock-bench-cycle: {e}");
        std::process::exit(1);
    }
}
