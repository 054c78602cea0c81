//! `ticktrade sim` without the rest of the binary: `sim_cli sim [ARGS]` runs the same module
//! the `ticktrade` binary wires in (`crates/ticktrade/src/sim.rs`), for third-party-client
//! tests (`TICKTRADE_BIN=target/debug/examples/sim_cli`) before the binary is rebuilt.

#![allow(dead_code)]

#[path = "../../ticktrade/src/sim.rs"]
mod sim;

use clap::Parser;

#[derive(Parser)]
enum Cli {
    /// Run the simulator.
    Sim(sim::Args),
}

fn main() -> std::process::ExitCode {
    let Cli::Sim(args) = Cli::parse();
    match sim::run(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
