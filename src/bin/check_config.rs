//! `npm run check-config [file]`: validates a configuration and prints each server's routes and
//! tools, or the located fault. `mcp-edge check` prints the same lines from the Worker's module.

use std::process::ExitCode;

fn main() -> ExitCode {
    let path = std::env::args().nth(1).unwrap_or_else(|| "mcp-edge.json".to_string());
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("{path}: cannot read: {e}");
            return ExitCode::FAILURE;
        }
    };
    match mcp_edge::config::check(&path, &text) {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(fault) => {
            eprintln!("{fault}");
            ExitCode::FAILURE
        }
    }
}
