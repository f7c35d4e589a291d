//! What redaction costs a plain call: a 2 KB JSON reply (as a tool result carries it, the JSON
//! also escaped in its text) scanned for 10 secrets, none of them in it; a redactor built, and a
//! caller's credential added to it; beside the 10 substring searches redaction was before.
//! Timed natively, release:
//! `cargo test --release --test redaction_cost -- --ignored --nocapture --test-threads=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::time::Instant;

use mcp_edge::redact::Redactor;

fn secrets() -> Vec<String> {
    (0..10).map(|i| format!("sk-{i}-{}", "9f8e7d6c5b4a3210".repeat(2))).collect()
}

fn reply() -> String {
    let items: Vec<serde_json::Value> = (0..12).map(|i| serde_json::json!({"id": i, "name": format!("item {i}"), "note": "a plain line of text, 50 %-ish & more"})).collect();
    let value = serde_json::json!({"items": items});
    mcp_edge::jsonrpc::success(&serde_json::json!(7), mcp_edge::upstream::reply::structured_result(value))
}

#[test]
#[ignore]
fn cost_of_a_plain_reply() {
    let text = reply();
    let redactor = Redactor::new(secrets());
    assert!(redactor.redact(&text).len() == text.len());
    let rounds = 20_000;
    let started = Instant::now();
    let mut total = 0;
    for _ in 0..rounds {
        total += redactor.redact(std::hint::black_box(&text)).len();
    }
    let per = started.elapsed() / rounds;
    println!("scan: {} bytes, 10 secrets, no match: {per:?} per reply ({total})", text.len());
    let started = Instant::now();
    for _ in 0..1_000 {
        std::hint::black_box(Redactor::new(secrets()));
    }
    println!("build: 10 secrets: {:?}", started.elapsed() / 1_000);
    let started = Instant::now();
    for _ in 0..1_000 {
        std::hint::black_box(redactor.with(["caller-token-0123456789"]));
    }
    println!("with: one more secret: {:?}", started.elapsed() / 1_000);
}

#[test]
#[ignore]
fn baselines() {
    let text = reply();
    let secrets = secrets();
    let rounds = 20_000;
    let started = Instant::now();
    let mut found = 0;
    for _ in 0..rounds {
        found += secrets.iter().filter(|s| std::hint::black_box(&text).contains(s.as_str())).count();
    }
    println!("str::contains × 10 (the redaction before): {:?} ({found})", started.elapsed() / rounds);
    let started = Instant::now();
    for _ in 0..rounds {
        found += std::hint::black_box(&text).bytes().filter(|&b| b == b'\x01').count();
    }
    println!("one byte counted: {:?} ({found})", started.elapsed() / rounds);
    let started = Instant::now();
    for _ in 0..rounds {
        found += std::hint::black_box(&text).as_bytes().windows(2).filter(|w| w == b"\x01\x02").count();
    }
    println!("pairs compared: {:?} ({found})", started.elapsed() / rounds);
}
