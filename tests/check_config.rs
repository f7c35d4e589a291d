//! The `check-config` command on the shipped configurations and on a broken one.
#![allow(clippy::expect_used)]

use std::process::Command;

fn check(file: &str) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_check-config"))
        .arg(file)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("check-config runs");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn shipped_configurations_are_valid() {
    let (ok, stdout, stderr) = check("mcp-edge.json");
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "mcp-edge.json: ok: mcp-edge-demo 0.1.0 on /mcp and /stream: tools echo, get_current_time\n");
    let (ok, stdout, stderr) = check("tests/e2e/config.json");
    assert!(ok, "{stderr}");
    assert_eq!(stdout.lines().count(), 10);
}

#[test]
fn a_broken_configuration_names_the_path() {
    let (ok, stdout, stderr) = check("tests/e2e/invalid-config.json");
    assert!(!ok);
    assert_eq!(stdout, "");
    assert_eq!(stderr, "tests/e2e/invalid-config.json: servers[0].tools[1].http.url: unknown argument \"cty\" in template\n");
}

#[test]
fn a_missing_file_is_reported() {
    let (ok, _, stderr) = check("no-such-file.json");
    assert!(!ok);
    assert!(stderr.starts_with("no-such-file.json: cannot read: "), "{stderr}");
}
