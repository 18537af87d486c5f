//! What confining a role costs: the time the read rules and the network namespace add to a
//! process start, and what the proxy adds to a model call (a request and a streamed answer).
//!
//!     cargo run --release -p breeze-supervise --example confinement_cost [rounds]
//!
//! Starts compare, alternating, `true` run by the supervisor: in its PID namespace with write
//! rules only (what a role got before), plus the read rules of a hidden home, plus a network
//! namespace with the proxy's listeners. Calls compare a Python client making 200 requests
//! (and one 20 MB streamed answer) to a local HTTP server: from the engine's network, from a
//! role's namespace through the proxy (`HTTP_PROXY`), and at a forwarded loopback port.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use breeze_supervise::{
    Confinement, HostRule, NetworkAccess, ProcessSpec, Supervisor, readable_except, scrubbed_env,
};
use tokio_util::sync::CancellationToken;

fn spec(argv: &[&str], dir: &Path) -> ProcessSpec {
    let argv = argv.iter().map(|a| a.to_string()).collect();
    let mut spec = ProcessSpec::new(argv, dir, dir.join("logs/role"));
    spec.env = scrubbed_env(std::env::vars(), &[], &[]);
    spec.timeout = Some(Duration::from_secs(120));
    spec
}

fn writes_only(dir: &Path) -> Confinement {
    Confinement { writable_dirs: vec![dir.to_path_buf()], ..Confinement::default() }
}

/// What a run's read policy looks like on this machine: the homes hidden, the toolchains back.
fn reads(dir: &Path) -> Confinement {
    let home = PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()));
    let allowed: Vec<PathBuf> = [".cargo", ".rustup", ".npm", ".pyenv", ".cache/pip", ".gitconfig"]
        .iter()
        .map(|p| home.join(p))
        .collect();
    let hidden =
        [home.clone(), PathBuf::from("/home"), PathBuf::from("/root"), PathBuf::from("/etc/ssh")];
    Confinement { readable: Some(readable_except(&hidden, &allowed)), ..writes_only(dir) }
}

fn access(allow: &[String]) -> NetworkAccess {
    NetworkAccess {
        allow: allow.iter().map(|rule| HostRule::parse(rule).unwrap()).collect(),
        on_refused: Arc::new(|_| {}),
    }
}

async fn run(supervisor: &Supervisor, spec: ProcessSpec) -> (Duration, String) {
    let start = Instant::now();
    let outcome =
        supervisor.run(spec, None, CancellationToken::new(), |_, _| {}, |_| {}).await.unwrap();
    assert!(outcome.ending.is_success(), "{}", outcome.stderr_tail);
    (start.elapsed(), outcome.stdout_tail)
}

fn summary(name: &str, times: &mut [Duration]) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("| {name} | {:.2} | {:.2} |", ms(times[0]), ms(times[times.len() / 2]));
}

/// A keep-nothing HTTP server: `/big` streams 20 MB in 64 KiB chunks, anything else `ok`.
fn server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut head = [0u8; 4096];
                let n = stream.read(&mut head).unwrap_or(0);
                if String::from_utf8_lossy(&head[..n]).contains("/big") {
                    let chunk = vec![b'x'; 64 * 1024];
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        320 * chunk.len()
                    );
                    for _ in 0..320 {
                        if stream.write_all(&chunk).is_err() {
                            break;
                        }
                    }
                } else {
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    );
                }
            });
        }
    });
    port
}

const CLIENT: &str = r#"
import sys, time, urllib.request
port = sys.argv[1]
opener = urllib.request.build_opener()
start = time.perf_counter()
for _ in range(200):
    opener.open(f"http://127.0.0.1:{port}/v1/messages").read()
per_call = (time.perf_counter() - start) / 200
start = time.perf_counter()
size = len(opener.open(f"http://127.0.0.1:{port}/big").read())
print(f"{per_call * 1000:.3f} {(time.perf_counter() - start) * 1000:.1f} {size}")
"#;

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(30);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let supervisor = Supervisor::new();
    let started = Instant::now();
    let read_rules = reads(&dir);
    println!(
        "read rules: {} paths, made in {:.1} ms (once per run)\n",
        read_rules.readable.as_ref().unwrap().len(),
        started.elapsed().as_secs_f64() * 1000.0
    );

    let (mut writes, mut with_reads, mut with_network) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let mut plain = spec(&["true"], &dir);
        plain.confinement = Some(writes_only(&dir));
        writes.push(run(&supervisor, plain).await.0);
        let mut read = spec(&["true"], &dir);
        read.confinement = Some(read_rules.clone());
        with_reads.push(run(&supervisor, read).await.0);
        let mut network = spec(&["true"], &dir);
        network.confinement = Some(read_rules.clone());
        network.network = Some(access(&["http://127.0.0.1:8080".into()]));
        with_network.push(run(&supervisor, network).await.0);
    }
    println!("process start, `true` under the supervisor, {rounds} alternating rounds\n");
    println!("| confinement | min ms | median ms |\n| --- | --- | --- |");
    summary("PID namespace + write rules (before)", &mut writes);
    summary("+ read rules", &mut with_reads);
    summary("+ read rules + network namespace and proxy", &mut with_network);

    let port = server();
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let python = String::from_utf8_lossy(&python.stdout).trim().to_string();
    let script = dir.join("client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let client = |network: Option<NetworkAccess>| {
        let mut client = spec(&[&python, script.to_str().unwrap(), &port.to_string()], &dir);
        client.confinement = Some(writes_only(&dir));
        if let Some(network) = network {
            client.env.extend(network.proxy_env());
            client.network = Some(network);
        }
        client
    };
    println!("\nmodel call: 200 requests over fresh connections, then one 20 MB streamed answer\n");
    println!("| path | ms per request | 20 MB answer ms |\n| --- | --- | --- |");
    let mut rows: Vec<(&str, Vec<(f64, f64)>)> = vec![
        ("engine's network, direct", vec![]),
        ("namespace, through the proxy", vec![]),
        ("namespace, forwarded port", vec![]),
    ];
    for _ in 0..3 {
        let direct = client(None);
        let mut proxied = client(Some(access(&[format!("127.0.0.1:{}", port + 1)])));
        // Only the proxy knows the server here: its port is not forwarded.
        proxied
            .network
            .as_mut()
            .unwrap()
            .allow
            .push(HostRule { host: "127.0.0.1".into(), port: Some(0) });
        let forwarded = {
            let mut spec = client(Some(access(&[format!("127.0.0.1:{port}")])));
            spec.env.retain(|(name, _)| !name.to_ascii_lowercase().ends_with("_proxy"));
            spec
        };
        for (index, spec) in [direct, proxied, forwarded].into_iter().enumerate() {
            let (_, out) = run(&supervisor, spec).await;
            let fields: Vec<f64> = out.split_whitespace().filter_map(|f| f.parse().ok()).collect();
            rows[index].1.push((fields[0], fields[1]));
        }
    }
    for (name, samples) in rows {
        let best_call = samples.iter().map(|s| s.0).fold(f64::MAX, f64::min);
        let best_stream = samples.iter().map(|s| s.1).fold(f64::MAX, f64::min);
        println!("| {name} | {best_call:.3} | {best_stream:.1} |");
    }
}
