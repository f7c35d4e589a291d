//! Configuration files: anything may be wrong in them, and loading must say what, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(e) = mcp_edge::config::load(text) {
            assert!(!e.to_string().is_empty());
        }
    }
});
