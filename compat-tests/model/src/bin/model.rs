//! Runs every configuration of the model and prints the states explored, each property's verdict
//! and the counterexample traces. Exits 1 if a ddblock property fails or an expected
//! counterexample is not found.

use ddblock_model::config::configurations;
use ddblock_model::run::{check, render};

fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let mut wrong = Vec::new();
    let mut states = 0;
    for cfg in configurations() {
        if !only.is_empty() && !only.iter().any(|o| o == cfg.name) {
            continue;
        }
        let report = check(cfg);
        print!("{}", render(&report));
        println!();
        states += report.states;
        if !report.ok() {
            wrong.push(report.name);
        }
    }
    if wrong.is_empty() {
        println!("model: every configuration as expected ({states} states explored in all)");
    } else {
        println!("model: NOT AS EXPECTED: {}", wrong.join(", "));
        std::process::exit(1);
    }
}
