//! `ticktrade serve` as a stand-alone binary (`serve_cli serve --listen …`) built from the
//! subcommand module, so process-level tests (ccxt) can run before the binary wires it.

#[path = "../../ticktrade/src/serve.rs"]
mod serve;

use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    Serve(serve::Args),
}

fn main() -> anyhow::Result<std::process::ExitCode> {
    let Command::Serve(args) = Cli::parse().command;
    serve::run(args)
}
