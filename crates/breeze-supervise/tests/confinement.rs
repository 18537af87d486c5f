//! Role processes under kernel confinement (Landlock) and processes that leave their group.

mod common;

use std::time::Duration;

use breeze_supervise::{
    Confinement, Ending, MARKER_VAR, ProcessSpec, kernel_support, processes_with_env, scrubbed_env,
};
use common::*;
use tokio_util::sync::CancellationToken;

fn shell(dir: &std::path::Path, script: &str) -> ProcessSpec {
    let argv = vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()];
    let mut spec = ProcessSpec::new(argv, dir, dir.join("logs/role"));
    spec.env = scrubbed_env(std::env::vars(), &[], &[]);
    spec.timeout = Some(Duration::from_secs(60));
    spec
}

/// Skips (loudly) on a machine without Landlock, unless CI says it must be there.
fn landlock_or_skip() -> bool {
    let support = kernel_support();
    if support.is_available() {
        return true;
    }
    assert!(
        std::env::var_os("BREEZE_REQUIRE_LANDLOCK").is_none(),
        "BREEZE_REQUIRE_LANDLOCK is set but {support}"
    );
    eprintln!("skipped: {support}");
    false
}

#[tokio::test]
async fn a_confined_role_writes_only_where_it_is_allowed() {
    if !landlock_or_skip() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let lane = root.path().join("lane");
    let scratch = root.path().join("scratch");
    let checkout = root.path().join("checkout");
    for dir in [&lane, &scratch, &checkout] {
        std::fs::create_dir(dir).unwrap();
    }
    std::fs::write(checkout.join("README.md"), "mine\n").unwrap();
    let state_file = root.path().join("state.json");
    std::fs::write(&state_file, "{}").unwrap();

    let script = format!(
        "echo work > {lane}/a.txt && echo ok-lane; \
         echo tmp > {scratch}/t && echo ok-scratch; \
         echo '{{\"n\":1}}' > {state} && echo ok-state-file; \
         echo evil > {checkout}/README.md && echo escaped-write; \
         cd {lane} && cd .. && echo evil > checkout/new.txt && echo escaped-relative; \
         rm {checkout}/README.md && echo escaped-delete; \
         mv {state} {lane}/moved && echo escaped-rename; \
         exit 0",
        lane = lane.display(),
        scratch = scratch.display(),
        state = state_file.display(),
        checkout = checkout.display(),
    );
    let mut spec = shell(&lane, &script);
    spec.log_path = scratch.join("role");
    spec.confinement = Some(Confinement {
        writable_dirs: vec![lane.clone(), scratch.clone()],
        writable_files: vec![state_file.clone()],
    });
    let (outcome, seen) = run(spec).await;
    assert_eq!(outcome.ending, Ending::Exited(0), "{}", outcome.stderr_tail);
    assert_eq!(seen.lines, ["ok-lane", "ok-scratch", "ok-state-file"], "{}", outcome.stderr_tail);
    assert!(outcome.stderr_tail.contains("Permission denied"), "{}", outcome.stderr_tail);
    assert_eq!(std::fs::read_to_string(checkout.join("README.md")).unwrap(), "mine\n");
    assert!(!checkout.join("new.txt").exists());
    assert_eq!(std::fs::read_to_string(&state_file).unwrap(), "{\"n\":1}\n");
    assert_eq!(std::fs::read_to_string(lane.join("a.txt")).unwrap(), "work\n");
}

#[tokio::test]
async fn the_engine_itself_stays_unconfined() {
    if !landlock_or_skip() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let mut spec = shell(root.path(), "true");
    spec.confinement = Some(Confinement::default());
    let (outcome, _) = run(spec).await;
    assert_eq!(outcome.ending, Ending::Exited(0));
    // The test process (the "engine") can still write anywhere it could before.
    std::fs::write(root.path().join("engine.txt"), "still writable").unwrap();
}

#[tokio::test]
async fn a_confined_role_cannot_signal_the_engine() {
    let support = kernel_support();
    if !landlock_or_skip()
        || !matches!(support, breeze_supervise::KernelSupport::Landlock { abi } if abi >= 6)
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let me = std::process::id();
    let mut spec = shell(root.path(), &format!("kill -0 {me} && echo reached-engine; exit 0"));
    spec.confinement = Some(Confinement::default());
    let (outcome, seen) = run(spec).await;
    assert_eq!(outcome.ending, Ending::Exited(0));
    assert!(seen.lines.is_empty(), "a role signalled the engine: {:?}", seen.lines);
}

#[tokio::test]
async fn a_setsid_descendant_ends_with_its_role() {
    let root = tempfile::tempdir().unwrap();
    let marker = format!("test-{}-{}", std::process::id(), line!());
    // The daemon leaves the group and the session, and its parent exits at once.
    let mut spec = shell(
        root.path(),
        "setsid sh -c 'sleep 300' </dev/null >/dev/null 2>&1 & \
         (setsid sh -c 'sleep 301' </dev/null >/dev/null 2>&1 &) ; sleep 0.3; echo started",
    );
    spec.marker = Some(marker.clone());
    let (outcome, seen) = run_with(&quick_supervisor(), spec, None, CancellationToken::new()).await;
    assert_eq!(outcome.ending, Ending::Exited(0));
    assert_eq!(seen.lines, ["started"]);
    // Two daemons, each a shell and its sleep.
    assert!(outcome.strays.len() >= 2, "both daemons were found: {:?}", outcome.strays);
    assert!(processes_with_env(MARKER_VAR, &marker).is_empty(), "a daemon outlived its role");
}
