//! Benchmark: plan analysis on generated plans of 1k and 10k tasks.
//!
//! Generates a Plans.md whose tasks write realistic sets (files, module directories,
//! globs and a few cross-cutting entries spread over a generated crate tree), then
//! times parsing, analysis and JSON rendering, and compares the analysis with the
//! obvious alternative: checking every task pair (`WriteSet::overlap` on n·(n−1)/2
//! pairs). The naive check runs in full up to `--naive-full` tasks; above that it is
//! timed on a random sample of pairs and extrapolated.
//!
//! Run with `scripts/bench/plan-bench.sh` (release build).

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use breeze_plan::{ConflictReason, analyze, parse_plans_md, render};

/// SplitMix64: a small deterministic generator, so every run plans the same tasks.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A Plans.md with `n` tasks over a tree of `n / 10` modules.
fn generate(n: usize, seed: u64) -> String {
    let mut rng = Rng(seed);
    let areas = (n / 100).max(4) as u64;
    let modules_per_area = 10;
    let mut text = String::from(
        "# Generated plan\n\n| Task | 内容 | DoD | Writes | Depends | Status |\n|------|------|-----|--------|---------|--------|\n",
    );
    for i in 0..n {
        let area = rng.below(areas);
        let module = rng.below(modules_per_area);
        let base = format!("crates/area{area}/src/mod{module}");
        let mut writes: Vec<String> = Vec::new();
        match rng.below(100) {
            0..=59 => {
                for _ in 0..1 + rng.below(3) {
                    writes.push(format!("{base}/file{}.rs", rng.below(8)));
                }
            }
            60..=74 => writes.push(format!("{base}/")),
            75..=84 => writes.push(format!("{base}/*.rs")),
            85..=94 => writes.push(format!("crates/area{area}/src/**/file{}.rs", rng.below(8))),
            _ => writes.push(format!("crates/area{area}/src/mod{module}/{{file0,file1}}.rs")),
        }
        if rng.chance(30) {
            if rng.chance(70) {
                writes.push(format!("tests/area{area}/mod{module}_{}.rs", rng.below(4)));
            } else {
                writes.push(format!("tests/area{area}/mod{module}_*.rs"));
            }
        }
        if rng.chance(10) {
            if rng.chance(80) {
                writes.push(format!("docs/area{area}/mod{module}.md"));
            } else {
                writes.push(format!("docs/area{area}/**/*.md"));
            }
        }
        if rng.chance(1) {
            writes.push(if rng.chance(50) { "**/*.proto".into() } else { "Cargo.lock".into() });
        }
        let mut deps: Vec<String> = Vec::new();
        if i > 0 {
            for _ in 0..rng.below(3) {
                let back = 1 + rng.below(50.min(i as u64));
                deps.push(format!("{}", i as u64 - back + 1));
            }
        }
        deps.sort();
        deps.dedup();
        let writes: Vec<String> = writes.iter().map(|w| format!("`{w}`")).collect();
        let _ = writeln!(
            text,
            "| {} | Task {} in area {area} | tests pass | {} | {} | cc:TODO |",
            i + 1,
            i + 1,
            writes.join(", "),
            if deps.is_empty() { "-".to_owned() } else { deps.join(", ") }
        );
    }
    text
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// Best and median of `runs` timings of `f`, and its last result.
fn timed<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, Duration, T) {
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let out = f();
        times.push(t.elapsed());
        last = Some(out);
    }
    times.sort();
    (times[0], times[times.len() / 2], last.expect("at least one run"))
}

fn run(n: usize, runs: usize, naive_full: usize, naive_sample: u64) {
    let text = generate(n, 0x5eed + n as u64);
    let path = Path::new("Plans.md");

    // Each run parses afresh, so every analysis starts with cold glob DFAs.
    let (parse_best, parse_median, plan) =
        timed(runs, || parse_plans_md(&text, path).expect("generated plan parses"));
    let mut fresh: Vec<_> = (0..runs.max(1))
        .map(|_| parse_plans_md(&text, path).expect("generated plan parses"))
        .collect();
    let (analyze_best, analyze_median, analysis) = timed(runs, || {
        let p = fresh.pop().expect("one plan per run");
        analyze(&p, 3).expect("generated plan is valid")
    });
    let (render_best, render_median, rendered) =
        timed(runs, || serde_json::to_string(&render::json(&plan, &analysis)).expect("json").len());
    let (table_best, _, _) = timed(runs, || render::table(&plan, &analysis).len());

    let s = &analysis.stats;
    let overlaps = analysis
        .conflicts
        .iter()
        .filter(|c| matches!(c.reason, ConflictReason::Overlap { .. }))
        .count();
    println!(
        "== {n} tasks ({} write-set entries, {} distinct); best / median of {runs} runs",
        s.entries, s.distinct_entries
    );
    println!(
        "  parse Plans.md ({} KiB)     {} / {}",
        text.len() / 1024,
        ms(parse_best),
        ms(parse_median)
    );
    println!("  analyze                     {} / {}", ms(analyze_best), ms(analyze_median));
    println!(
        "  parse + analyze             {} / {}",
        ms(parse_best + analyze_best),
        ms(parse_median + analyze_median)
    );
    println!("  render table                {}", ms(table_best));
    println!(
        "  render --json ({} KiB)    {} / {}",
        rendered / 1024,
        ms(render_best),
        ms(render_median)
    );
    println!(
        "  groups {}  workers {}  conflicting pairs {overlaps}",
        analysis.groups.len(),
        analysis.workers
    );
    println!("  task pairs n(n-1)/2       {}", s.task_pairs);
    println!(
        "  candidate entry pairs     {}  ({:.3}% of task pairs; {} skipped: tasks already conflicting)",
        s.candidate_pairs,
        100.0 * s.candidate_pairs as f64 / s.task_pairs.max(1) as f64,
        s.skipped_known
    );
    println!(
        "  exact checks              {} string, {} automaton ({} glob-pair product searches), {} DFAs built",
        s.string_checks, s.automaton_checks, s.product_searches, s.dfas_built
    );

    // The obvious alternative: every pair of tasks, every pair of entries.
    let fresh = parse_plans_md(&text, path).expect("parses");
    let tasks = &fresh.tasks;
    let s = &analysis.stats;
    if n <= naive_full {
        let t = Instant::now();
        let mut found = 0usize;
        for i in 0..tasks.len() {
            for j in i + 1..tasks.len() {
                if tasks[i].writes.overlap(&tasks[j].writes).is_some() {
                    found += 1;
                }
            }
        }
        let naive = t.elapsed();
        assert_eq!(found, overlaps, "the naive check must find the same conflicts");
        println!(
            "  naive all-pairs             {}  (same {found} conflicts) → analysis (median) is {:.0}× faster",
            ms(naive),
            naive.as_secs_f64() / analyze_median.as_secs_f64()
        );
    } else {
        let mut rng = Rng(7);
        let t = Instant::now();
        let mut found = 0usize;
        for _ in 0..naive_sample {
            let i = rng.below(n as u64) as usize;
            let mut j = rng.below(n as u64 - 1) as usize;
            if j >= i {
                j += 1;
            }
            if tasks[i].writes.overlap(&tasks[j].writes).is_some() {
                found += 1;
            }
        }
        let per_pair = t.elapsed().as_secs_f64() / naive_sample as f64;
        let estimate = per_pair * s.task_pairs as f64;
        println!(
            "  naive all-pairs (est.)      {:.1} s  ({naive_sample} sampled pairs × {:.2} µs) → analysis (median) is ~{:.0}× faster",
            estimate,
            per_pair * 1e6,
            estimate / analyze_median.as_secs_f64()
        );
        let _ = found;
    }
}

fn main() {
    let mut sizes = Vec::new();
    let mut naive_full = 2_000usize;
    let mut naive_sample = 2_000_000u64;
    let mut runs = 5usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--naive-full" => naive_full = args.next().and_then(|v| v.parse().ok()).expect("--naive-full N"),
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--naive-sample" => {
                naive_sample = args.next().and_then(|v| v.parse().ok()).expect("--naive-sample N");
            }
            other => sizes.push(other.parse::<usize>().unwrap_or_else(|_| {
                eprintln!("usage: plan_bench [TASKS...] [--runs N] [--naive-full N] [--naive-sample PAIRS]");
                std::process::exit(2)
            })),
        }
    }
    if sizes.is_empty() {
        sizes = vec![1_000, 10_000];
    }
    for n in sizes {
        run(n, runs, naive_full, naive_sample);
    }
}
