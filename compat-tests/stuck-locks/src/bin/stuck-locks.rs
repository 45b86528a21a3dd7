//! Prints the stuck-lock comparison: Laravel's release path vs Laravel with the ddblock driver vs
//! ddblock, same workload, same run.
//!
//! `stuck-locks --upstream http://127.0.0.1:PORT [--workers 4] [--cycles 40] [--names a,b]
//!  [--ttl 1] [--work-ms 10] [--stale-ms 500] [--stale-probability 1.0] [--seed 42]
//!  [--layout laravel8] [--prefix app_] [--mixed]`
//!
//! `--mixed` adds a fourth run: the three kinds of workers on ONE table at the same time.

use ddblock_stuck_locks::{
    render, run_ddblock, run_laravel, run_laravel_driver, run_mixed, start_proxy, Options,
};

fn parse() -> Result<(Options, bool), String> {
    let mut o = Options::default();
    let mut mixed = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut val = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{v:?}: {e}"));
        match flag.as_str() {
            "--upstream" => o.upstream = val()?,
            "--workers" => o.workers = num(val()?)? as usize,
            "--cycles" => o.cycles = num(val()?)? as usize,
            "--names" => o.names = val()?.split(',').map(str::to_owned).collect(),
            "--ttl" => o.ttl_secs = num(val()?)? as i64,
            "--work-ms" => o.work_ms = num(val()?)?,
            "--stale-ms" => o.stale_ms = num(val()?)?,
            "--stale-probability" => {
                o.stale_probability = val()?
                    .parse()
                    .map_err(|e| format!("--stale-probability: {e}"))?
            }
            "--seed" => o.seed = num(val()?)?,
            "--layout" => o.layout = val()?.parse().map_err(|e: ddblock::Error| e.to_string())?,
            "--prefix" => o.prefix = val()?,
            "--mixed" => mixed = true,
            "-h" | "--help" => {
                println!("usage: stuck-locks --upstream URL [--workers N] [--cycles N] [--names a,b] [--ttl S] [--work-ms MS] [--stale-ms MS] [--stale-probability P] [--seed N] [--layout laravel8|laravel11|laravel12] [--prefix P] [--mixed]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown flag {other} (try --help)")),
        }
    }
    if o.upstream.is_empty() {
        return Err("--upstream URL of a DynamoDB-compatible server is required".into());
    }
    if o.workers == 0 || o.cycles == 0 || o.names.is_empty() {
        return Err("--workers, --cycles and --names must be non-empty".into());
    }
    Ok((o, mixed))
}

#[tokio::main]
async fn main() {
    let (opts, mixed) = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("stuck-locks: {e}");
            std::process::exit(2);
        }
    };
    let result = async {
        let proxy = start_proxy(&opts).await?;
        let laravel = run_laravel(&opts, &proxy).await?;
        let driver = run_laravel_driver(&opts, &proxy).await?;
        let ddblock = run_ddblock(&opts, &proxy).await?;
        let mut reports = vec![laravel, driver, ddblock];
        let mut note = String::new();
        if mixed {
            let m = run_mixed(&opts, &proxy).await?;
            note = format!(
                "same table, all three at once (a migration): {} overlaps across them\n",
                m.overlaps
            );
            reports.extend([m.laravel, m.driver, m.ddblock]);
        }
        proxy.shutdown().await;
        Ok::<_, String>((reports, note))
    }
    .await;
    match result {
        Ok((reports, note)) => print!("{}{note}", render(&reports, &opts)),
        Err(e) => {
            eprintln!("stuck-locks: {e}");
            std::process::exit(1);
        }
    }
}
