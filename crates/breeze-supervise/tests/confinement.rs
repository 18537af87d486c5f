//! Role processes under kernel confinement (Landlock) and processes that leave their group.

mod common;

use std::time::Duration;

use breeze_supervise::{
    Confinement, DevShm, DevShmSupport, Ending, Isolation, MARKER_VAR, ProcessSpec,
    dev_shm_support, kernel_support, processes_with_env, scrubbed_env,
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
    for (start, supervisor) in both_starts() {
        std::fs::write(&state_file, "{}").unwrap();
        let mut spec = shell(&lane, &script);
        spec.log_path = scratch.join("role");
        spec.confinement = Some(Confinement {
            writable_dirs: vec![lane.clone(), scratch.clone()],
            writable_files: vec![state_file.clone()],
            ..Confinement::default()
        });
        let (outcome, seen) = run_with(&supervisor, spec, None, CancellationToken::new()).await;
        let err = &outcome.stderr_tail;
        assert_eq!(outcome.ending, Ending::Exited(0), "{start}: {err}");
        assert_eq!(seen.lines, ["ok-lane", "ok-scratch", "ok-state-file"], "{start}: {err}");
        assert!(err.contains("Permission denied"), "{start}: {err}");
        assert_eq!(std::fs::read_to_string(checkout.join("README.md")).unwrap(), "mine\n");
        assert!(!checkout.join("new.txt").exists(), "{start}");
        assert_eq!(std::fs::read_to_string(&state_file).unwrap(), "{\"n\":1}\n");
        assert_eq!(std::fs::read_to_string(lane.join("a.txt")).unwrap(), "work\n");
    }
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
    for (start, supervisor) in both_starts() {
        let script = format!("kill -0 {me} && echo reached-engine; exit 0");
        let mut spec = shell(root.path(), &script);
        spec.confinement = Some(Confinement::default());
        let (outcome, seen) = run_with(&supervisor, spec, None, CancellationToken::new()).await;
        assert_eq!(outcome.ending, Ending::Exited(0), "{start}");
        assert!(seen.lines.is_empty(), "{start}: a role signalled the engine: {:?}", seen.lines);
    }
}

#[tokio::test]
async fn a_setsid_descendant_ends_with_its_role() {
    let root = tempfile::tempdir().unwrap();
    for isolation in ISOLATIONS {
        let marker = format!("test-{}-{}-{isolation:?}", std::process::id(), line!());
        // The daemon leaves the group and the session, and its parent exits at once.
        let mut spec = shell(
            root.path(),
            "setsid sh -c 'sleep 300' </dev/null >/dev/null 2>&1 & \
             (setsid sh -c 'sleep 301' </dev/null >/dev/null 2>&1 &) ; sleep 0.3; echo started",
        );
        spec.marker = Some(marker.clone());
        spec.isolation = isolation;
        let (outcome, seen) =
            run_with(&quick_supervisor(), spec, None, CancellationToken::new()).await;
        assert_eq!(outcome.ending, Ending::Exited(0));
        assert_eq!(seen.lines, ["started"]);
        if in_pid_namespace(isolation) {
            // The namespace's init stayed in the group while they lived: ended with it.
            assert!(outcome.leaked, "{outcome:?}");
            assert_eq!(outcome.strays, Vec::<u32>::new(), "the namespace ended them");
        } else {
            // Two daemons, each a shell and its sleep.
            assert!(outcome.strays.len() >= 2, "both daemons were found: {:?}", outcome.strays);
        }
        assert!(processes_with_env(MARKER_VAR, &marker).is_empty(), "a daemon outlived its role");
    }
}

/// A device that is not one of the harmless ones and that the user may open for writing
/// as far as file permissions go (so only Landlock can refuse it): a loop block device as
/// root, else one of a few character devices whose opening has no effect. `None` when
/// there is none on this machine.
fn a_device_only_landlock_refuses() -> Option<std::path::PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut candidates: Vec<std::path::PathBuf> = std::fs::read_dir("/dev")
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.file_name().to_string_lossy().starts_with("loop"))
                .filter(|entry| entry.file_type().is_ok_and(|t| t.is_block_device()))
                .map(|entry| entry.path())
                .collect()
        })
        .unwrap_or_default();
    candidates.sort();
    candidates.extend(["/dev/kmsg", "/dev/net/tun", "/dev/fuse"].map(std::path::PathBuf::from));
    candidates.into_iter().find(|path| {
        let writable = std::process::Command::new("sh")
            .args(["-c", "test -w \"$1\"", "sh"])
            .arg(path)
            .status();
        writable.is_ok_and(|status| status.success())
    })
}

#[tokio::test]
async fn a_confined_role_writes_only_the_harmless_devices() {
    if !landlock_or_skip() {
        return;
    }
    for (start, supervisor) in both_starts() {
        for isolation in ISOLATIONS {
            a_confined_role_writes_only_the_harmless_devices_with(&supervisor, isolation)
                .await
                .unwrap_or_else(|failure| panic!("{start}, {isolation:?}: {failure}"));
        }
    }
}

async fn a_confined_role_writes_only_the_harmless_devices_with(
    supervisor: &breeze_supervise::Supervisor,
    isolation: Isolation,
) -> Result<(), String> {
    let root = tempfile::tempdir().unwrap();
    let lane = root.path().join("lane");
    std::fs::create_dir(&lane).unwrap();
    let own_terminals = in_pid_namespace(isolation);
    let mut script = String::from(
        "echo x > /dev/null && echo ok-null; \
         echo ok-stdout > /dev/stdout; \
         echo ok-fd > /dev/fd/1; \
         echo ok-stderr > /dev/stderr; \
         test $(head -c1 /dev/urandom | wc -c) = 1 && echo ok-urandom; \
         test $(head -c4 /dev/zero | wc -c) = 4 && echo ok-zero; \
         echo x 2>/dev/null > /dev/full || echo full-is-full; ",
    );
    // A program with a terminal: `script` opens /dev/ptmx, makes the pseudo-terminal the
    // controlling terminal of its child (ioctls), and the child writes /dev/tty. In its own
    // PID namespace a role has pseudo-terminals of its own; else none at all.
    let has_script = std::process::Command::new("script").arg("--version").output().is_ok();
    if has_script {
        script.push_str("script -qec 'echo ok-tty > /dev/tty' /dev/null | tr -d '\\r'; ");
    } else {
        eprintln!("the /dev/tty part is skipped: `script` (util-linux) is not installed");
    }
    script.push_str("(exec 3<>/dev/ptmx) 2>/dev/null && echo opened-ptmx; ");
    let refused = a_device_only_landlock_refuses();
    match &refused {
        Some(device) => {
            script.push_str(&format!("(exec 3>>{}) && echo opened-device; ", device.display()));
        }
        None => eprintln!(
            "the device part is skipped: no block device or other character device here is writable to this user"
        ),
    }
    script.push_str("exit 0");
    let mut spec = shell(&lane, &script);
    spec.log_path = root.path().join("logs/role");
    spec.confinement =
        Some(Confinement { writable_dirs: vec![lane.clone()], ..Confinement::default() });
    spec.isolation = isolation;
    let (outcome, seen) = run_with(supervisor, spec, None, CancellationToken::new()).await;
    if outcome.ending != Ending::Exited(0) {
        return Err(format!("{:?}: {}", outcome.ending, outcome.stderr_tail));
    }
    let mut expected =
        vec!["ok-null", "ok-stdout", "ok-fd", "ok-urandom", "ok-zero", "full-is-full"];
    if has_script && own_terminals {
        expected.push("ok-tty");
    }
    if own_terminals {
        expected.push("opened-ptmx");
    }
    if seen.lines != expected || !outcome.stderr_tail.contains("ok-stderr") {
        return Err(format!("{:?} not {expected:?}: {}", seen.lines, outcome.stderr_tail));
    }
    if let Some(device) = refused
        && !outcome.stderr_tail.contains(&format!("{}: Permission denied", device.display()))
    {
        return Err(format!("{} was not refused: {}", device.display(), outcome.stderr_tail));
    }
    Ok(())
}

/// A name no other test or process uses.
fn unique_name(what: &str) -> String {
    format!("breeze-test-{what}-{}-{}", std::process::id(), line!())
}

#[tokio::test]
async fn dev_shm_is_private_to_the_role_where_namespaces_allow_it_and_never_shared() {
    if !landlock_or_skip() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    // Removed when dropped, also when an assertion fails.
    let host =
        tempfile::Builder::new().prefix("breeze-test-host-").tempfile_in("/dev/shm").unwrap();
    let host_file = host.path();
    let role_name = unique_name("role");
    let script = format!(
        "touch /dev/shm/{role_name} && echo wrote-shm; \
         test -e {host} && echo sees-host-shm; \
         echo mine > own.txt; id -u; exit 0",
        host = host_file.display()
    );
    let support = dev_shm_support();
    let cases = both_starts().into_iter().flat_map(|(start, supervisor)| {
        ISOLATIONS.into_iter().flat_map(move |isolation| {
            [DevShm::PrivateWherePossible, DevShm::NotWritable]
                .map(|dev_shm| (start, supervisor.clone(), isolation, dev_shm))
        })
    });
    for (start, supervisor, isolation, dev_shm) in cases {
        let mut spec = shell(root.path(), &script);
        spec.log_path = root.path().join("logs/role");
        spec.confinement = Some(Confinement {
            writable_dirs: vec![root.path().to_path_buf()],
            dev_shm,
            ..Confinement::default()
        });
        spec.isolation = isolation;
        let (outcome, seen) = run_with(&supervisor, spec, None, CancellationToken::new()).await;
        assert_eq!(outcome.ending, Ending::Exited(0), "{start}: {}", outcome.stderr_tail);
        let private = dev_shm == DevShm::PrivateWherePossible
            && (in_pid_namespace(isolation) || support == DevShmSupport::Private);
        if private {
            // Its own tmpfs: writable, and the engine's files are not in it.
            assert_eq!(
                seen.lines[0], "wrote-shm",
                "{start} {isolation:?} {dev_shm:?}: {}",
                outcome.stderr_tail
            );
        } else {
            assert_eq!(
                seen.lines[0], "sees-host-shm",
                "{start} {isolation:?} {dev_shm:?}: {}",
                outcome.stderr_tail
            );
            assert!(outcome.stderr_tail.contains("Permission denied"), "{}", outcome.stderr_tail);
        }
        assert!(
            !std::path::Path::new("/dev/shm").join(&role_name).exists(),
            "{dev_shm:?}: the role's file reached the machine's /dev/shm"
        );
        // The role keeps the engine's user id, and what it creates is the user's.
        use std::os::unix::fs::MetadataExt;
        let uid = std::fs::metadata(root.path()).unwrap().uid(); // created by this process
        assert_eq!(seen.lines.last().map(String::as_str), Some(uid.to_string().as_str()));
        assert_eq!(std::fs::metadata(root.path().join("own.txt")).unwrap().uid(), uid);
    }
    if std::env::var_os("BREEZE_REQUIRE_PRIVATE_DEV_SHM").is_some() {
        assert_eq!(support, DevShmSupport::Private, "BREEZE_REQUIRE_PRIVATE_DEV_SHM is set");
    } else if support != DevShmSupport::Private {
        eprintln!("only the not-writable case was checked: /dev/shm is {support}");
    }
}

#[tokio::test]
async fn a_confined_role_in_its_own_namespaces_is_still_stopped_with_its_group_and_strays() {
    if !landlock_or_skip() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    for isolation in ISOLATIONS {
        let marker = format!("test-{}-{}-{isolation:?}", std::process::id(), line!());
        let mut spec = shell(
            root.path(),
            "setsid sh -c 'sleep 302' </dev/null >/dev/null 2>&1 & \
             sh -c 'sleep 303' & echo started; wait",
        );
        spec.marker = Some(marker.clone());
        spec.timeout = Some(Duration::from_millis(500));
        spec.grace = Duration::from_millis(200);
        spec.confinement = Some(Confinement::default());
        spec.isolation = isolation;
        let (outcome, seen) =
            run_with(&quick_supervisor(), spec, None, CancellationToken::new()).await;
        assert_eq!(outcome.ending, Ending::TimedOut);
        assert_eq!(seen.lines, ["started"]);
        assert!(outcome.survivors.is_empty(), "{:?}", outcome.survivors);
        if in_pid_namespace(isolation) {
            assert_eq!(outcome.strays, Vec::<u32>::new(), "the namespace ended the daemon");
        } else {
            assert!(!outcome.strays.is_empty(), "the setsid daemon was found by its marker");
        }
        assert!(processes_with_env(MARKER_VAR, &marker).is_empty(), "a process outlived its role");
    }
}

#[tokio::test]
async fn a_confined_role_cannot_make_device_nodes_in_its_folders() {
    if !landlock_or_skip() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    // A loop device's numbers: as root, unconfined, this would make a node that writes it.
    let script = "mknod blk b 7 0 && echo made-block; mknod chr c 1 3 && echo made-char; \
                  mkfifo fifo && echo made-fifo; exit 0";
    let cases = both_starts().into_iter().flat_map(|(start, supervisor)| {
        [DevShm::PrivateWherePossible, DevShm::NotWritable]
            .map(|dev_shm| (start, supervisor.clone(), dev_shm))
    });
    for (start, supervisor, dev_shm) in cases {
        let lane = root.path().join(format!("{start}-{dev_shm:?}"));
        std::fs::create_dir(&lane).unwrap();
        let mut spec = shell(&lane, script);
        spec.log_path = root.path().join("logs/role");
        spec.confinement = Some(Confinement {
            writable_dirs: vec![lane.clone()],
            dev_shm,
            ..Confinement::default()
        });
        let (outcome, seen) = run_with(&supervisor, spec, None, CancellationToken::new()).await;
        assert_eq!(outcome.ending, Ending::Exited(0), "{start}: {}", outcome.stderr_tail);
        assert_eq!(seen.lines, ["made-fifo"], "{start} {dev_shm:?}: {}", outcome.stderr_tail);
        assert!(!lane.join("blk").exists() && !lane.join("chr").exists(), "{start} {dev_shm:?}");
    }
}

#[tokio::test]
async fn a_confined_role_ends_as_it_would_unconfined_in_either_isolation() {
    if !landlock_or_skip() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let confined = |mut spec: ProcessSpec, isolation| {
        spec.confinement =
            Some(Confinement { writable_dirs: vec![root.path().into()], ..Confinement::default() });
        spec.isolation = isolation;
        spec
    };
    let cases = both_starts().into_iter().flat_map(|(start, supervisor)| {
        ISOLATIONS.map(|isolation| (start, supervisor.clone(), isolation))
    });
    for (start, supervisor, isolation) in cases {
        let run = |spec| run_with(&supervisor, spec, None, CancellationToken::new());
        let spec = confined(fake_spec(root.path(), &["print=x", "exit=3"]), isolation);
        assert_eq!(run(spec).await.0.ending, Ending::Exited(3), "{start} {isolation:?}");
        for signal in [libc::SIGTERM, libc::SIGKILL] {
            let raise = format!("raise={signal}");
            let spec = confined(fake_spec(root.path(), &[&raise]), isolation);
            let ending = run(spec).await.0.ending;
            assert_eq!(ending, Ending::Signaled(signal), "{start} {isolation:?}");
        }
        // Cancelled in the middle: SIGTERM to the group, obeyed within the grace.
        let spec = confined(fake_spec(root.path(), &["print=ready", "stall"]), isolation);
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let outcome = supervisor
            .run(
                spec,
                None,
                cancel,
                |_, _| {},
                move |line| {
                    if line == "ready" {
                        trigger.cancel();
                    }
                },
            )
            .await
            .unwrap();
        assert_eq!(outcome.ending, Ending::Cancelled, "{start} {isolation:?}");
        assert!(!outcome.sigkilled, "{start} {isolation:?}: the role obeyed SIGTERM");
        assert_nothing_survives(&outcome, &[]);
    }
}
