//! The replay benchmark: replays the last N first-parent changes of a local clone as a
//! breeze run and reports makespan, lanes, the list-scheduling bound, verify time per
//! landing, and whether main ends equal to upstream. See scripts/bench/README.md.
//!
//! `cargo run --release -p breeze-test-support --example replay_bench -- --breeze BIN
//!  --upstream CLONE [--rev REV] [--changes N] [--worker-seconds S] [--lanes L]
//!  [--verify CMD] [--kills K] [--repeat R] [--seed S] [--work DIR] [--json]`

use std::path::PathBuf;
use std::process::ExitCode;

use breeze_test_support::replay::{ReplayOptions, ReplayReport, replay};

const USAGE: &str = "usage: replay_bench --breeze BIN --upstream CLONE [--rev REV] [--changes N] [--worker-seconds S] [--lanes L] [--verify CMD] [--kills K] [--repeat R] [--seed S] [--work DIR] [--json]";

struct Args {
    options: ReplayOptions,
    repeat: usize,
    work: Option<PathBuf>,
    json: bool,
}

fn parse() -> Result<Args, String> {
    let mut options = ReplayOptions::new("breeze".as_ref(), ".".as_ref(), ".".as_ref());
    options.seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let (mut repeat, mut work, mut json, mut upstream) = (1, None, false, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--json" {
            json = true;
            continue;
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let number = |what: &str| {
            value.parse::<f64>().map_err(|_| format!("{what}: {value} is not a number"))
        };
        match flag.as_str() {
            "--breeze" => options.breeze = value.into(),
            "--upstream" => upstream = Some(PathBuf::from(value)),
            "--rev" => options.rev = value,
            "--changes" => options.changes = number("--changes")? as usize,
            "--worker-seconds" => options.worker_seconds = number("--worker-seconds")?,
            "--lanes" => options.lanes = number("--lanes")? as u32,
            "--verify" => options.verify = Some(value),
            "--kills" => options.kills = number("--kills")? as usize,
            "--repeat" => repeat = number("--repeat")? as usize,
            "--seed" => options.seed = number("--seed")? as u64,
            "--work" => work = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    options.upstream = upstream.ok_or_else(|| format!("--upstream is required\n{USAGE}"))?;
    Ok(Args { options, repeat: repeat.max(1), work, json })
}

fn summary(report: &ReplayReport, options: &ReplayOptions) -> serde_json::Value {
    let landed = report.trailers.len();
    let verify: f64 = report.facts.verify.iter().sum();
    serde_json::json!({
        "base": report.history.base,
        "last": report.history.last,
        "changes": report.history.changes.len(),
        "empty_skipped": report.history.empty.len(),
        "worker_seconds": options.worker_seconds,
        "lanes": options.lanes,
        "plan_groups": report.plan.groups,
        "plan_workers": report.plan.workers,
        "plan_widest": report.plan.widest,
        "landed": landed,
        "landed_events": report.facts.landed.len(),
        "makespan": report.facts.makespan(),
        "wall_seconds": report.wall_seconds,
        "lanes_used": report.facts.lanes,
        "bound_list": report.bound.list,
        "bound_critical_path": report.bound.critical_path,
        "bound_work_per_lane": report.bound.work_per_lane,
        "nominal_bound_list": report.nominal_bound.list,
        "ratio": report.ratio(),
        "verify_runs": report.facts.verify.len(),
        "verify_seconds_per_landed_task": if landed == 0 { 0.0 } else { verify / landed as f64 },
        "kills": report.kills,
        "main_tree": report.main_tree,
        "upstream_tree": report.upstream_tree,
        "faithful": report.faithful(),
        "problems": report.problems(),
        "journal_gaps": report.journal_gaps(),
    })
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::from(2);
        }
    };
    let mut faithful = true;
    for round in 0..args.repeat {
        let temp;
        let mut options = args.options.clone();
        options.seed = options.seed.wrapping_add(round as u64);
        options.work = match &args.work {
            Some(work) if args.repeat == 1 => work.clone(),
            Some(work) => work.join(format!("round-{}", round + 1)),
            None => {
                temp = match tempfile::Builder::new().prefix("breeze-replay-").tempdir() {
                    Ok(temp) => temp,
                    Err(err) => {
                        eprintln!("cannot make a temporary folder: {err}");
                        return ExitCode::FAILURE;
                    }
                };
                temp.path().join("work")
            }
        };
        eprintln!(
            "round {}: replaying in {} (kill seed {})",
            round + 1,
            options.work.display(),
            options.seed
        );
        match replay(&options) {
            Ok(report) => {
                if args.json {
                    println!("{}", summary(&report, &options));
                } else {
                    println!("{report}");
                }
                faithful &= report.faithful();
            }
            Err(err) => {
                eprintln!("replay failed: {err}");
                return ExitCode::FAILURE;
            }
        }
    }
    if faithful { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
