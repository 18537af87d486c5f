//! A role printing hundreds of megabytes, or one endless line, leaves the engine's memory
//! flat. This file holds a single test so that the process's peak RSS (VmHWM) belongs to it.

mod common;

use std::sync::{Arc, Mutex};

use breeze_supervise::Ending;
use common::*;
use tokio_util::sync::CancellationToken;

/// Peak resident set size of this test process, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

const MIB: u64 = 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_and_endless_lines_keep_memory_bounded() {
    let before = peak_rss_kib();
    let dir = tempfile::tempdir().unwrap();

    // 200 MB in 64-byte lines.
    let flood = 200 * MIB;
    let mut spec = fake_spec(dir.path(), &[&format!("flood={flood}")]);
    spec.tail_bytes = 4096;
    let line_count = Arc::new(Mutex::new(0u64));
    let counter = line_count.clone();
    let outcome = quick_supervisor()
        .run(
            spec,
            None,
            CancellationToken::new(),
            |_, _| {},
            move |line| {
                assert_eq!(line.len(), 63);
                *counter.lock().unwrap() += 1;
            },
        )
        .await
        .unwrap();
    assert_eq!(outcome.ending, Ending::Exited(0));
    assert_eq!(outcome.stdout_bytes, flood);
    assert_eq!(*line_count.lock().unwrap(), flood / 64);
    assert_eq!(outcome.stdout_tail.len(), 4096);
    assert!(outcome.stdout_tail.ends_with(&format!("{}\n", "x".repeat(63))));
    assert_eq!(std::fs::metadata(&outcome.stdout_log).unwrap().len(), flood, "log is complete");
    let after_flood = peak_rss_kib();

    // 100 MB without a single newline.
    let endless = 100 * MIB;
    let mut spec = fake_spec(dir.path(), &[&format!("flood-line={endless}")]);
    spec.max_line_bytes = 1000;
    let lines = Arc::new(Mutex::new(Vec::new()));
    let seen = lines.clone();
    let outcome = quick_supervisor()
        .run(
            spec,
            None,
            CancellationToken::new(),
            |_, _| {},
            move |line| seen.lock().unwrap().push(line.to_owned()),
        )
        .await
        .unwrap();
    assert_eq!(outcome.ending, Ending::Exited(0));
    assert_eq!(outcome.stdout_bytes, endless);
    let lines = lines.lock().unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0], format!("{}… [line truncated: {endless} bytes]", "y".repeat(1000)));
    assert_eq!(outcome.stdout_tail.len(), 64 * 1024);
    assert_eq!(outcome.last_json, None);
    let after_line = peak_rss_kib();

    println!(
        "peak RSS (VmHWM): {before} KiB before, {after_flood} KiB after a {} MiB flood, \
         {after_line} KiB after a {} MiB single line",
        flood / MIB,
        endless / MIB
    );
    // 300 MB went through the supervisor; the engine's peak grew by a few MiB at most.
    // (A memory bound, not a timing one: buffers are 2 × 1 MiB JSON window, one 1000-byte
    // line, 64 KiB read and write buffers, plus the runtime's own.)
    let growth_kib = after_line.saturating_sub(before);
    assert!(growth_kib < 32 * 1024, "peak RSS grew by {growth_kib} KiB");
}
