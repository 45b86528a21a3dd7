//! `fault-proxy`: the command-line front end of `ddblock-fault-proxy` (see `--help`).

use std::io::Write;
use std::process::ExitCode;

use ddblock_fault_proxy::{parse_args, start, Command, USAGE};

#[tokio::main]
async fn main() -> ExitCode {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Run(config)) => config,
        Ok(Command::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("fault-proxy: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let proxy = match start(*config).await {
        Ok(p) => p,
        Err(e) => {
            eprintln!("fault-proxy: {e}");
            return ExitCode::FAILURE;
        }
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening {}", proxy.url());
        let _ = out.flush();
    }

    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fault-proxy: cannot install the SIGTERM handler: {e}");
            return ExitCode::FAILURE;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }

    let stats = proxy.stats();
    proxy.shutdown().await;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{}",
        serde_json::to_string(&stats).unwrap_or_else(|_| "{}".into())
    );
    let _ = out.flush();
    ExitCode::SUCCESS
}
