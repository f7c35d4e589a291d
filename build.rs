//! `MCP_EDGE_TEST_HOOKS=1` makes a test build with hooks for tests: paths that panic on purpose,
//! and a way to fire a session's alarm at will. The configuration is not an input of the build:
//! the Worker reads it as data when an isolate starts (`src/edge/config.js`).

fn main() {
    println!("cargo:rerun-if-env-changed=MCP_EDGE_TEST_HOOKS");
    println!("cargo::rustc-check-cfg=cfg(mcp_edge_test_hooks)");
    if std::env::var("MCP_EDGE_TEST_HOOKS").is_ok_and(|v| v == "1") {
        println!("cargo::rustc-cfg=mcp_edge_test_hooks");
    }
}
