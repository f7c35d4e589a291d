//! `npm run check-config [file]`: validates a configuration and prints each server's routes and tools.

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
    match mcp_edge::config::load(&text) {
        Ok(catalog) => {
            for s in &catalog.servers {
                let tools: Vec<&str> = s.tools.iter().map(|t| t.name.as_str()).collect();
                println!("{path}: ok: {} {} on {} and {}: tools {}", s.name, s.version, s.route.as_str(), s.stream_route.as_str(), tools.join(", "));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{path}: {e}");
            ExitCode::FAILURE
        }
    }
}
