//! Bundles the configuration into the build: `MCP_EDGE_CONFIG` names the file, by default
//! `mcp-edge.json` beside this one. Workers vars are capped at 5 KB, so it is never a var.
//! The file is read here and written out as Rust (`src/config/emit.rs`); a file that cannot be
//! read into the model becomes a build whose every request answers with the located fault.
//! `MCP_EDGE_TEST_HOOKS=1` makes a test build with hooks for tests: paths that panic on purpose,
//! and a way to fire a session's alarm at will.

#[allow(dead_code)]
#[path = "src/config/model.rs"]
mod model;

#[allow(dead_code)]
#[path = "src/config/locate.rs"]
mod locate;

#[allow(dead_code)]
#[path = "src/config/file.rs"]
mod file;

#[allow(dead_code)]
#[path = "src/config/emit.rs"]
mod emit;

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
    for f in ["model", "locate", "file", "emit"] {
        println!("cargo:rerun-if-changed=src/config/{f}.rs");
    }
    let bundled = emit::result(&file::read(&text));
    // A configuration with every field the model has, for the unit test that checks the emitter.
    println!("cargo:rerun-if-changed=tests/every-field.json");
    let fixture = std::fs::read_to_string("tests/every-field.json").map(|t| emit::result(&file::read(&t))).unwrap_or_default();
    for (name, contents) in [("mcp-edge.json", text.as_str()), ("bundled.rs", bundled.as_str()), ("every_field.rs", fixture.as_str())] {
        if let Err(e) = std::fs::write(format!("{out}/{name}"), contents) {
            println!("cargo:warning=cannot write bundled configuration: {e}");
            std::process::exit(1);
        }
    }
}
