//! Each lane's own environment: `BREEZE_LANE` and a port range of its own for every process
//! of a task, the integration checkout's for `land.verify` — and two lanes binding a real
//! listener at the same moment, on their own ports and (the control) on one shared port.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::Path;

use breeze_engine::Config;
use breeze_protocol::{AttemptOutcome, EventKind, RunState, TaskState};
use tokio_util::sync::CancellationToken;

use breeze_test_support::plan::toml_task;

use super::{Fixture, script, shell_worker, task};

const APPROVE: &str = r#"printf '{"schema_version":"review-result.v1","verdict":"APPROVE","type":"code","reviewer_profile":"static","checks":[],"gaps":[],"followups":[],"memory_updates":[]}' > "$BREEZE_OUTPUT""#;
const COMPLETED: &str = r#"printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT""#;

/// A base port whose four ranges of ten (integration, lanes 1–3) are all free right now.
fn free_port_base() -> u16 {
    let start = 20_000 + (std::process::id() % 200) as u16 * 40;
    (0..200u16)
        .map(|k| 20_000 + (start - 20_000 + k * 40) % 8_000)
        .find(|&base| (base..base + 40).all(|port| TcpListener::bind(("127.0.0.1", port)).is_ok()))
        .expect("a free range of 40 ports")
}

/// The worker of the port tests: binds `port` (a shell expression) with a real listener,
/// says so in `dir`, and holds it until the other task's worker has bound its own port or
/// failed to — so the two hold their ports at the same moment. A port already taken fails
/// the attempt with the OS's error.
fn binding_worker(fixture: &Fixture, dir: &Path, port: &str) -> String {
    let body = format!(
        r#"cat > /dev/null
python3 - {port} {dir} "$BREEZE_TASK_ID" <<'EOF'
import os, socket, sys, time
port, folder, me = int(sys.argv[1]), sys.argv[2], sys.argv[3]
other = "2" if me == "1" else "1"
listener = socket.socket()
try:
    listener.bind(("127.0.0.1", port))
    listener.listen()
except OSError as err:
    open(os.path.join(folder, me + ".collided"), "w").write(str(err))
    sys.exit("task %s cannot listen on port %d: %s" % (me, port, err))
open(os.path.join(folder, me + ".bound"), "w").write(str(port))
deadline = time.time() + 120
while not any(os.path.exists(os.path.join(folder, other + end)) for end in (".bound", ".collided")):
    if time.time() > deadline:
        sys.exit("the other lane's worker never tried its port")
    time.sleep(0.02)
EOF
[ $? = 0 ] || exit 1
echo "listened on {port}" > "$BREEZE_TASK_ID.txt"
{COMPLETED}
"#,
        dir = dir.display(),
    );
    script(fixture, "binding-worker.sh", &body)
}

/// Two tasks on two lanes whose workers bind `port` at the same moment: the outcome, the
/// ports they held and the failures of their attempts.
async fn two_lanes_binding(
    port: &str,
    port_base: u16,
    network: breeze_engine::config::NetworkPolicy,
) -> (RunState, Vec<u16>, Vec<String>) {
    let plan =
        toml_task("1", "Serve one", &["1.txt"], "") + &toml_task("2", "Serve two", &["2.txt"], "");
    let fixture = Fixture::new(&plan, &[]);
    let dir = fixture.repo.outside().join("ports");
    std::fs::create_dir_all(&dir).unwrap();
    let mut options = fixture.options();
    let worker = binding_worker(&fixture, &dir, port);
    shell_worker(&mut options, &worker);
    options.max_workers = Some(2);
    let config = options.config.as_mut().unwrap();
    config.port_base = port_base;
    config.network = network;
    // The markers folder is outside the lanes: the workers may write it.
    config.sandbox_writable.push(dir.display().to_string());
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    for id in ["1", "2"] {
        assert_eq!(task(&outcome, id).state, TaskState::Landed, "{outcome:?}");
    }
    let mut ports: Vec<u16> = ["1", "2"]
        .iter()
        .filter_map(|id| std::fs::read_to_string(dir.join(format!("{id}.bound"))).ok())
        .map(|port| port.parse().unwrap())
        .collect();
    ports.sort();
    let failures = fixture
        .events(&outcome)
        .into_iter()
        .filter_map(|event| match event {
            EventKind::Attempt { outcome: AttemptOutcome::Failed, error, .. } => error,
            _ => None,
        })
        .collect();
    (outcome.state, ports, failures)
}

#[tokio::test]
async fn two_lanes_listen_on_their_own_ports_at_once_where_one_shared_port_collides() {
    use breeze_engine::config::NetworkPolicy;
    // On the machine's own network (`sandbox.network = "open"`), as every process was before
    // network namespaces.
    let base = free_port_base();
    let (state, ports, failures) =
        two_lanes_binding("$BREEZE_PORT_BASE", base, NetworkPolicy::Open).await;
    assert_eq!(state, RunState::Succeeded);
    assert!(failures.is_empty(), "no lane's listener collided: {failures:?}");
    assert_eq!(ports, [base + 10, base + 20], "lanes 1 and 2 each held their own first port");
    println!("lanes 1 and 2 listened on {ports:?} at once (port_base {base})");

    // The control: the same two workers on one fixed port. Whichever binds second fails
    // its attempt with the OS's "address in use"; its retry, once the first let go, lands.
    let shared = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (state, ports, failures) =
        two_lanes_binding(&shared.to_string(), base, NetworkPolicy::Open).await;
    assert_eq!(state, RunState::Succeeded);
    println!("the control's failed attempt: {failures:?}");
    assert_eq!(ports, [shared, shared], "each held the shared port, one after the other");
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].contains(&format!("cannot listen on port {shared}"))
            && failures[0].contains("Address already in use"),
        "{failures:?}"
    );

    // With the network allow-listed (the default) each process has a loopback of its own:
    // the shared port does not collide either.
    if breeze_supervise::network_namespace_support().is_ok()
        && breeze_supervise::kernel_support().is_available()
    {
        let allow_listed = NetworkPolicy::AllowList(Vec::new());
        let (state, ports, failures) =
            two_lanes_binding(&shared.to_string(), base, allow_listed).await;
        assert_eq!(state, RunState::Succeeded);
        assert!(failures.is_empty(), "each lane's own loopback: {failures:?}");
        assert_eq!(ports, [shared, shared]);
    }
}

#[tokio::test]
async fn every_process_of_a_task_gets_its_lanes_variables_and_verify_the_integration_checkouts() {
    let plan = toml_task("1", "One", &["1.txt"], "") + &toml_task("2", "Two", &["2.txt"], "");
    let fixture = Fixture::new(&plan, &[]);
    let log = fixture.repo.outside().join("seen");
    std::fs::create_dir_all(&log).unwrap();
    let note = |kind: &str| {
        format!(
            "echo \"{kind} $BREEZE_TASK_ID $BREEZE_LANE $BREEZE_PORT_BASE $BREEZE_PORT_COUNT\" >> {}/{kind}-$$",
            log.display()
        )
    };
    let worker = script(
        &fixture,
        "noting-worker.sh",
        &format!(
            "cat > /dev/null\n{}\necho x > \"$BREEZE_TASK_ID.txt\"\n{COMPLETED}\n",
            note("worker")
        ),
    );
    // The reviewer may write only its scratch folder: it says what it saw in its log.
    let reviewer = script(
        &fixture,
        "noting-reviewer.sh",
        &format!(
            "cat > /dev/null\necho \"reviewer $BREEZE_TASK_ID $BREEZE_LANE $BREEZE_PORT_BASE $BREEZE_PORT_COUNT\" >&2\n{APPROVE}\n"
        ),
    );
    let mut options = fixture.options();
    shell_worker(&mut options, &worker);
    options.max_workers = Some(2);
    let sh = |line: String| vec!["sh".to_string(), "-c".to_string(), line];
    let config: &mut Config = options.config.as_mut().unwrap();
    config.port_base = 30_000;
    config.ports_per_lane = 5;
    config.sandbox_writable.push(log.display().to_string());
    config.reviewer.backend = breeze_engine::BackendKind::Command;
    config.reviewer.command = vec!["sh".into(), reviewer];
    config.worktree_setup = sh(note("setup").replace("$BREEZE_TASK_ID", "-"));
    config.review_checks = vec![sh(note("checks").replace("$BREEZE_TASK_ID", "-"))];
    config.verify = sh(note("verify").replace("$BREEZE_TASK_ID", "-"));
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");

    let mut seen: BTreeSet<String> = BTreeSet::new();
    for entry in std::fs::read_dir(&log).unwrap() {
        seen.extend(
            std::fs::read_to_string(entry.unwrap().path()).unwrap().lines().map(String::from),
        );
    }
    for id in ["1", "2"] {
        let log = outcome.run_dir.join(format!("logs/{id}.reviewer.round-1.try-1.log.stderr"));
        seen.extend(std::fs::read_to_string(log).unwrap().lines().map(String::from));
    }
    // Which task ran on which lane is the scheduler's choice; each kept its lane throughout.
    // (Project commands get the engine's environment and the lane's variables, not the
    // role protocol's: no task id.)
    let lane_of = |id: &str| {
        let line = seen.iter().find(|line| line.starts_with(&format!("worker {id} "))).unwrap();
        line.split(' ').nth(2).unwrap().to_string()
    };
    let lanes: BTreeSet<String> = ["1", "2"].iter().map(|id| lane_of(id)).collect();
    assert_eq!(lanes, BTreeSet::from(["1".to_string(), "2".to_string()]), "{seen:?}");
    let mut expected = BTreeSet::new();
    for id in ["1", "2"] {
        let lane: u16 = lane_of(id).parse().unwrap();
        let range = format!("{lane} {} 5", 30_000 + 5 * lane);
        expected.insert(format!("worker {id} {range}"));
        expected.insert(format!("checks - {range}"));
        expected.insert(format!("reviewer {id} {range}"));
        expected.insert(format!("setup - {range}"));
        expected.insert("verify - 0 30000 5".to_string());
    }
    // The preflight's trial of the setup, in a checkout of its own: the integration's.
    expected.insert("setup - 0 30000 5".to_string());
    assert_eq!(seen, expected);
}
