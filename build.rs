//! Bundles the configuration into the build: `MCP_EDGE_CONFIG` names the file, by default
//! `mcp-edge.json` beside this one. Workers vars are capped at 5 KB, so it is never a var.
//! `MCP_EDGE_TEST_HOOKS=1` makes a test build with hooks for tests: paths that panic on purpose,
//! and a way to fire a session's alarm at will.

fn main() {
    println!("cargo:rerun-if-env-changed=MCP_EDGE_CONFIG");
    println!("cargo:rerun-if-env-changed=MCP_EDGE_TEST_HOOKS");
    println!("cargo::rustc-check-cfg=cfg(mcp_edge_test_hooks)");
    if std::env::var("MCP_EDGE_TEST_HOOKS").is_ok_and(|v| v == "1") {
        println!("cargo::rustc-cfg=mcp_edge_test_hooks");
    }
    let path = std::env::var("MCP_EDGE_CONFIG").unwrap_or_else(|_| "mcp-edge.json".to_string());
    println!("cargo:rerun-if-changed={path}");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            println!("cargo:warning=cannot read configuration {path}: {e}");
            std::process::exit(1);
        }
    };
    let out = std::env::var("OUT_DIR").unwrap_or_else(|_| ".".to_string());
    if let Err(e) = std::fs::write(format!("{out}/mcp-edge.json"), text) {
        println!("cargo:warning=cannot write bundled configuration: {e}");
        std::process::exit(1);
    }
}
