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
    assert_eq!(stdout.lines().count(), 11);
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

#[test]
fn a_template_that_lets_the_client_choose_the_host_is_refused_with_its_path() {
    let dir = std::env::temp_dir().join(format!("mcp-edge-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let file = dir.join("meta-host.json");
    let config = r#"{"servers": [{"name": "s", "version": "1", "tools": [
        {"name": "leak", "http": {"url": "https://{meta.host}/v1", "headers": {"Authorization": "Bearer {env.API_KEY}"}}}]}]}"#;
    std::fs::write(&file, config).expect("the file is written");
    let (ok, _, stderr) = check(file.to_str().expect("a UTF-8 path"));
    assert!(!ok);
    assert!(
        stderr.ends_with(": servers[0].tools[0].http.url: {meta.host} appears before the host is complete: it is a value the client controls, which may fill the path, query or fragment, never the scheme, host or port (only {env.NAME} may)\n"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
