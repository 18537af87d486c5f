//! What starting a role costs as the engine's memory grows: through the launcher (this
//! binary registers itself, as `breeze` does) or as a fork of the engine (`FORK=1`).
//!
//!     cargo run --release -p breeze-supervise --example spawn_cost [MB] [starts]
//!
//! Holds MB megabytes, touched, then starts `true` under the supervisor (confined to a
//! scratch folder; `NET=1` adds a network namespace) `starts` times, and prints the
//! minimum and median time until `spawn` returned and until the run ended.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use breeze_supervise::{Confinement, ProcessSpec, Supervisor, scrubbed_env};
use tokio_util::sync::CancellationToken;

fn spec(dir: &Path) -> ProcessSpec {
    let mut spec = ProcessSpec::new(vec!["true".into()], dir, dir.join("logs/role"));
    spec.env = scrubbed_env(std::env::vars(), &[], &[]);
    spec.timeout = Some(Duration::from_secs(120));
    spec.confinement =
        Some(Confinement { writable_dirs: vec![dir.to_path_buf()], ..Confinement::default() });
    if std::env::var_os("NET").is_some() {
        spec.network = Some(breeze_supervise::NetworkAccess {
            allow: vec![breeze_supervise::HostRule::parse("http://127.0.0.1:8080").unwrap()],
            on_refused: Arc::new(|_| {}),
        });
    }
    spec
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    breeze_supervise::start_roles_through_this_binary();
    let mb: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(128);
    let rounds: usize = std::env::args().nth(2).and_then(|n| n.parse().ok()).unwrap_or(40);
    let mut ballast: Vec<Vec<u8>> = Vec::new();
    for i in 0..mb {
        ballast.push(vec![(i % 251) as u8 + 1; 1 << 20]);
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let supervisor = match std::env::var_os("FORK") {
        Some(_) => Supervisor::new().with_launcher(None),
        None => Supervisor::new(),
    };
    let (mut spawn, mut total) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        let at = Arc::new(Mutex::new(None));
        let seen = at.clone();
        let outcome = supervisor
            .run(
                spec(&dir),
                None,
                CancellationToken::new(),
                move |_, _| *seen.lock().unwrap() = Some(start.elapsed()),
                |_| {},
            )
            .await
            .unwrap();
        assert!(outcome.ending.is_success(), "{}", outcome.stderr_tail);
        total.push(start.elapsed());
        spawn.push(at.lock().unwrap().unwrap());
    }
    let ms = |d: &mut Vec<Duration>| {
        d.sort();
        format!(
            "min {:.2} median {:.2}",
            d[0].as_secs_f64() * 1e3,
            d[d.len() / 2].as_secs_f64() * 1e3
        )
    };
    println!("{mb} MB: spawn {} | to exit {} ({})", ms(&mut spawn), ms(&mut total), ballast.len());
}
