//! A role's own session and PID namespace: nothing it starts outlives it, and nothing it
//! does reaches the terminal the engine runs in.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use breeze_supervise::{Confinement, Ending, ProcessSpec, kernel_support, scrubbed_env};
use common::*;
use tokio_util::sync::CancellationToken;

fn shell(dir: &Path, script: &str) -> ProcessSpec {
    let argv = vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()];
    let mut spec = ProcessSpec::new(argv, dir, dir.join("logs/role"));
    spec.env = scrubbed_env(std::env::vars(), &[], &[]);
    spec.timeout = Some(Duration::from_secs(60));
    spec
}

/// No confinement, and Landlock's confinement to `dir` where the kernel has it.
fn confinements(dir: &Path) -> Vec<Option<Confinement>> {
    let mut all = vec![None];
    if kernel_support().is_available() {
        all.push(Some(Confinement {
            writable_dirs: vec![dir.to_owned()],
            ..Confinement::default()
        }));
    }
    all
}

/// Live processes (zombies aside) whose command line holds `token`.
fn processes_naming(token: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(token))
        })
        .filter(|&pid| is_alive(pid))
        .collect()
}

#[tokio::test]
async fn a_helper_that_double_forks_leaves_its_session_and_clears_its_environment_ends_with_its_role()
 {
    if !pid_namespaces_or_say_so() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let cases = both_starts().into_iter().flat_map(|(start, supervisor)| {
        confinements(root.path()).into_iter().map(move |c| (start, supervisor.clone(), c))
    });
    for (n, (start, supervisor, confinement)) in cases.enumerate() {
        let token = format!("breeze-helper-{}-{n}", std::process::id());
        let ready = root.path().join(format!("ready-{n}"));
        let go = root.path().join(format!("go-{n}"));
        let written = root.path().join(format!("written-after-the-role-{n}"));
        // The subshell exits at once (a double fork); the helper leaves the session and
        // the group (setsid) and clears its environment (no marker), says it is ready,
        // then waits for the test. The role ends once the helper is on its own.
        let script = format!(
            "(setsid env -i sh -c 'touch {ready}; while [ ! -e {go} ]; do sleep 0.05; done; touch {written}' {token} \
             </dev/null >/dev/null 2>&1 &); \
             while [ ! -e {ready} ]; do sleep 0.05; done; echo helper-started",
            ready = ready.display(),
            go = go.display(),
            written = written.display(),
        );
        let mut spec = shell(root.path(), &script);
        spec.confinement = confinement.clone();
        spec.marker = Some(token.clone());
        let (outcome, seen) = run_with(&supervisor, spec, None, CancellationToken::new()).await;
        let confined = format!("{start}, confined {}", confinement.is_some());
        assert_eq!(outcome.ending, Ending::Exited(0), "{confined}: {}", outcome.stderr_tail);
        assert_eq!(seen.lines, ["helper-started"], "{confined}: {}", outcome.stderr_tail);
        assert_eq!(
            processes_naming(&token),
            Vec::<u32>::new(),
            "{confined}: the helper outlived its role"
        );
        assert_nothing_survives(&outcome, &[]);
        // Had it survived, it would write now.
        std::fs::write(&go, "").unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!written.exists(), "{confined}: the helper wrote after its role ended");
    }
}

/// A role in a PID namespace of its own says so, whichever way it started, and one in its
/// session only does not. A helper that kept the run's marker and left the group ends with
/// the role either way: in the namespace with its init (no look through every process's
/// environment), else found by its marker.
#[tokio::test]
async fn a_role_in_its_own_pid_namespace_is_known_as_one_and_its_marked_helpers_end_either_way() {
    let root = tempfile::tempdir().unwrap();
    for (start, supervisor) in both_starts() {
        for isolation in ISOLATIONS {
            let token = format!("breeze-marked-{}-{start}-{isolation:?}", std::process::id());
            let script = format!(
                "(setsid sh -c 'sleep 30' {token} </dev/null >/dev/null 2>&1 &); echo started"
            );
            let mut spec = shell(root.path(), &script);
            spec.marker = Some(token.clone());
            spec.isolation = isolation;
            let (outcome, seen) = run_with(&supervisor, spec, None, CancellationToken::new()).await;
            let case = format!("{start}, {isolation:?}");
            assert_eq!(seen.lines, ["started"], "{case}: {}", outcome.stderr_tail);
            assert_eq!(outcome.own_pid_namespace, in_pid_namespace(isolation), "{case}");
            if !in_pid_namespace(isolation) {
                assert!(!outcome.strays.is_empty(), "{case}: the helper was found by its marker");
            }
            assert_eq!(processes_naming(&token), Vec::<u32>::new(), "{case}: a helper outlived it");
            assert_nothing_survives(&outcome, &[]);
        }
    }
}

#[tokio::test]
async fn a_role_sees_only_its_own_processes_and_makes_pseudo_terminals_of_its_own() {
    if !pid_namespaces_or_say_so() {
        return;
    }
    let has_script = Command::new("script").arg("--version").output().is_ok();
    let has_python = Command::new("python3").arg("--version").output().is_ok();
    // A terminal of the machine's, which the role must not see.
    let machine_pty = nix::pty::openpty(None, None).unwrap();
    let machine_terminal = nix::unistd::ttyname(&machine_pty.slave).unwrap();
    let engine = std::process::id();
    let root = tempfile::tempdir().unwrap();
    let mut script = format!(
        "ls /proc | grep -E '^[0-9]+$' | sort -n | head -1; \
         test -e /proc/{engine} && echo sees-the-engine; \
         test -e {terminal} && echo sees-a-machine-terminal; ",
        terminal = machine_terminal.display()
    );
    if has_script {
        script.push_str("script -qec tty /dev/null | tr -d '\\r'; ");
    }
    if has_python {
        // As root, a role is root in its namespace: its mounts are locked all the same. Only
        // ever tried in a mount namespace that is not the engine's (never on the machine's
        // mounts, should the isolation be broken).
        let engine_mounts = std::fs::read_link("/proc/self/ns/mnt").unwrap();
        script.push_str(&format!(
            "if [ \"$(readlink /proc/self/ns/mnt)\" = '{}' ]; then echo in-the-engines-mount-namespace; \
             else python3 -c 'import ctypes; libc = ctypes.CDLL(None); \
             [print(\"unmounted\", p) for p in (b\"/proc\", b\"/dev/pts\") if libc.umount2(p, 2) == 0]'; fi; ",
            engine_mounts.display()
        ));
    }
    for (start, supervisor) in both_starts() {
        for confinement in confinements(root.path()) {
            let confined = format!("{start}, confined {}", confinement.is_some());
            let mut spec = shell(root.path(), &script);
            spec.confinement = confinement;
            let (outcome, seen) = run_with(&supervisor, spec, None, CancellationToken::new()).await;
            assert_eq!(outcome.ending, Ending::Exited(0), "{confined}: {}", outcome.stderr_tail);
            let mut expected = vec!["1"];
            if has_script {
                expected.push("/dev/pts/0"); // the first of its own
            }
            assert_eq!(seen.lines, expected, "{confined}: {}", outcome.stderr_tail);
        }
    }
}

#[tokio::test]
async fn a_launched_role_does_not_carry_the_engines_memory() {
    if !pid_namespaces_or_say_so() {
        return;
    }
    // What an engine holds for a 100,000-file repository, touched so that it is resident.
    let held: Vec<u8> = vec![7; 192 << 20];
    let root = tempfile::tempdir().unwrap();
    let mut resident = Vec::new();
    for (start, supervisor) in both_starts() {
        // PID 1 is the namespace's init, made before the role and alive as long as it.
        let spec = shell(root.path(), "grep VmRSS /proc/1/status");
        let (outcome, seen) = run_with(&supervisor, spec, None, CancellationToken::new()).await;
        assert_eq!(outcome.ending, Ending::Exited(0), "{start}: {}", outcome.stderr_tail);
        let kib: u64 = seen.lines[0].split_whitespace().nth(1).unwrap().parse().unwrap();
        resident.push((start, kib >> 10));
    }
    assert_eq!(held.iter().map(|&b| b as usize).sum::<usize>(), 7 * (192 << 20));
    // A forked init shares every page the engine had (the control); a launched one has
    // only its own.
    assert!(resident[1].1 >= 192, "{resident:?}");
    assert!(resident[0].1 < 64, "{resident:?}");
}

/// Set for the test binary when it runs as the engine of [`no_role_reaches_the_terminal_the_engine_runs_in`].
const ENGINE_TERMINAL: &str = "BREEZE_TEST_ENGINE_TERMINAL";

/// What the role tries: its own terminal, the engine's by name and through the engine's
/// descriptors, written to (an escape sequence that sets the window title) and injected into
/// (TIOCSTI). The strings that would show on the terminal are split in the script, so that
/// only a successful attempt can put them together.
fn reaching_for_the_terminal(terminal: &str, engine: u32) -> String {
    format!(
        r#"tty
(printf 'x' > /dev/tty) 2>/dev/null && echo wrote-dev-tty
(printf '\033]0;PW''NED\007' > {terminal}) 2>/dev/null && echo wrote-the-engines-terminal
test -e /proc/{engine}/fd/0 && echo sees-the-engines-descriptors
python3 - <<'EOF'
import fcntl, os, termios
for path in ["/dev/tty", "{terminal}", "/proc/{engine}/fd/0"]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY)
    except OSError as e:
        print("cannot open", path)
        continue
    try:
        for ch in "echo INJ" + "ECTED\n":
            fcntl.ioctl(fd, termios.TIOCSTI, ch.encode())
        print("injected through", path)
    except OSError:
        print("refused on", path)
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"x")
        print("injected through fd", fd)
    except OSError:
        pass
EOF
"#
    )
}

/// The engine's side of [`no_role_reaches_the_terminal_the_engine_runs_in`]: run by that test
/// in a terminal of its own, and nothing otherwise.
#[tokio::test]
#[ignore = "the engine of no_role_reaches_the_terminal_the_engine_runs_in, which runs it"]
async fn engine_in_a_terminal() {
    let Ok(terminal) = std::env::var(ENGINE_TERMINAL) else { return };
    let engine = std::process::id();
    assert!(std::fs::File::open("/dev/tty").is_ok(), "the engine has a controlling terminal");
    // The control: the engine itself can inject into its terminal where the machine allows
    // TIOCSTI, and the test sees that.
    let _ = Command::new("python3")
        .args(["-c", "import fcntl, termios\nfor ch in 'CONT' + 'ROL\\n': fcntl.ioctl(0, termios.TIOCSTI, ch.encode())"])
        .status();
    println!("ENGINE-READY");
    let root = tempfile::tempdir().unwrap();
    let script = reaching_for_the_terminal(&terminal, engine);
    let cases = both_starts().into_iter().flat_map(|(start, supervisor)| {
        confinements(root.path()).into_iter().map(move |c| (start, supervisor.clone(), c))
    });
    for (start, supervisor, confinement) in cases {
        let confined = confinement.is_some();
        let mut spec = shell(root.path(), &script);
        spec.confinement = confinement;
        let (outcome, seen) = run_with(&supervisor, spec, None, CancellationToken::new()).await;
        for line in &seen.lines {
            println!("role ({start}, confined {confined}): {line}");
        }
        assert_eq!(outcome.ending, Ending::Exited(0), "{}", outcome.stderr_tail);
        assert_eq!(seen.lines[0], "not a tty", "the role has no controlling terminal");
        let reached: Vec<&String> = seen
            .lines
            .iter()
            .filter(|l| {
                l.starts_with("wrote") || l.starts_with("injected") || l.starts_with("sees")
            })
            .collect();
        assert!(reached.is_empty(), "confined {confined}: {reached:?}");
        assert!(seen.lines.iter().any(|l| l == "cannot open /dev/tty"), "{:?}", seen.lines);
    }
    println!("ENGINE-DONE");
}

#[test]
fn no_role_reaches_the_terminal_the_engine_runs_in() {
    if !pid_namespaces_or_say_so() {
        return;
    }
    for tool in ["setsid", "python3"] {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!("skipped: no `{tool}` to give the engine a terminal or the role its ioctl");
            return;
        }
    }
    let pty = nix::pty::openpty(None, None).unwrap();
    let terminal = nix::unistd::ttyname(&pty.slave).unwrap();
    let slave = std::fs::File::from(pty.slave);
    // The test binary again, as an engine whose controlling terminal is the new one.
    let mut engine = Command::new("setsid")
        .arg("--ctty")
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "engine_in_a_terminal", "--ignored", "--nocapture"])
        .env(ENGINE_TERMINAL, &terminal)
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    // Everything written to the terminal (and echoed from its input) until its last user
    // is gone (EIO).
    let mut master = std::fs::File::from(pty.master);
    let mut shown = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        shown.extend_from_slice(&buf[..n]);
    }
    let status = engine.wait().unwrap();
    let shown = String::from_utf8_lossy(&shown);
    assert!(status.success(), "the engine's side failed:\n{shown}");
    assert!(shown.contains("ENGINE-READY") && shown.contains("ENGINE-DONE"), "{shown}");
    for start in ["launched", "forked"] {
        assert!(shown.contains(&format!("role ({start}, confined false): not a tty")), "{shown}");
    }
    let tiocsti_allowed =
        std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").is_ok_and(|v| v.trim() == "1");
    if tiocsti_allowed {
        assert!(shown.contains("CONTROL"), "the engine's own injection shows: {shown}");
    }
    assert!(!shown.contains("INJECTED"), "a role injected input into the terminal: {shown}");
    assert!(!shown.contains("PWNED"), "a role wrote to the terminal: {shown}");
}
