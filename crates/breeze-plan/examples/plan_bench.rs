//! Benchmark: plan analysis on generated plans of 1k and 10k tasks.
//!
//! Generates a plan (a Plans.md, or with `--format toml` a plan.toml) of one of two
//! shapes (`--shape`): `mixed` (the default), whose tasks write realistic sets (files,
//! module directories, globs and a few cross-cutting entries spread over a generated
//! crate tree), or `shared-files`, where task `i` writes `pkg{i%500}/mod{i}/**` and
//! `pkg{i%500}/lib{i%7}.rs`, so many tasks hold the same file. It then times parsing,
//! analysis and rendering, and compares the analysis with the obvious alternative:
//! checking every task pair (`WriteSet::overlap` on n·(n−1)/2 pairs). The naive check
//! runs in full up to `--naive-full` tasks; above that it is timed on a random sample
//! of pairs and extrapolated.
//!
//! Run with `scripts/bench/plan-bench.sh` (release build).

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use breeze_plan::{
    Analysis, ConflictReason, Plan, analyze, parse_plan_toml, parse_plans_md, render,
};

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

/// The generated plan's shape (`--shape`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Files, module directories and globs over a crate tree (the default).
    Mixed,
    /// Task `i` (from 0) writes `pkg{i%500}/mod{i}/**` and one of seven files shared
    /// within its package, `pkg{i%500}/lib{i%7}.rs`: many tasks hold the same file.
    SharedFiles,
}

impl Shape {
    fn parse(name: &str) -> Option<Shape> {
        match name {
            "mixed" => Some(Shape::Mixed),
            "shared-files" => Some(Shape::SharedFiles),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Shape::Mixed => "mixed",
            Shape::SharedFiles => "shared-files",
        }
    }

    fn generate(self, n: usize) -> Vec<GenTask> {
        match self {
            Shape::Mixed => mixed(n, 0x5eed + n as u64),
            Shape::SharedFiles => shared_files(n),
        }
    }
}

/// The plan file the generated tasks are written as (`--format`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    PlansMd,
    Toml,
}

impl Format {
    fn parse(name: &str) -> Option<Format> {
        match name {
            "md" => Some(Format::PlansMd),
            "toml" => Some(Format::Toml),
            _ => None,
        }
    }

    fn file(self) -> &'static str {
        match self {
            Format::PlansMd => "Plans.md",
            Format::Toml => "plan.toml",
        }
    }

    fn write(self, tasks: &[GenTask]) -> String {
        match self {
            Format::PlansMd => plans_md(tasks),
            Format::Toml => plan_toml(tasks),
        }
    }

    fn read(self, text: &str) -> Plan {
        let path = Path::new(self.file());
        match self {
            Format::PlansMd => parse_plans_md(text, path),
            Format::Toml => parse_plan_toml(text, path),
        }
        .expect("generated plan parses")
    }
}

/// One generated task; its id is its position from 1.
struct GenTask {
    title: String,
    writes: Vec<String>,
    depends_on: Vec<String>,
}

/// The `shared-files` shape; no dependencies.
fn shared_files(n: usize) -> Vec<GenTask> {
    (0..n)
        .map(|i| {
            let package = i % 500;
            GenTask {
                title: format!("Task {} in pkg{package}", i + 1),
                writes: vec![
                    format!("pkg{package}/mod{i}/**"),
                    format!("pkg{package}/lib{}.rs", i % 7),
                ],
                depends_on: Vec::new(),
            }
        })
        .collect()
}

/// The `mixed` shape: `n` tasks over a tree of `n / 10` modules, each depending on up
/// to two of the 50 tasks before it.
fn mixed(n: usize, seed: u64) -> Vec<GenTask> {
    let mut rng = Rng(seed);
    let areas = (n / 100).max(4) as u64;
    let modules_per_area = 10;
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let area = rng.below(areas);
        let module = rng.below(modules_per_area);
        let writes = mixed_writes(&mut rng, area, module);
        let mut depends_on: Vec<String> = Vec::new();
        if i > 0 {
            for _ in 0..rng.below(3) {
                let back = 1 + rng.below(50.min(i as u64));
                depends_on.push(format!("{}", i as u64 - back + 1));
            }
        }
        depends_on.sort();
        depends_on.dedup();
        tasks.push(GenTask { title: format!("Task {} in area {area}", i + 1), writes, depends_on });
    }
    tasks
}

/// A `mixed` task's write set: files, the module directory or a glob, sometimes tests,
/// docs and (1%) a cross-cutting entry.
fn mixed_writes(rng: &mut Rng, area: u64, module: u64) -> Vec<String> {
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
    writes
}

/// The tasks as a Plans.md task table.
fn plans_md(tasks: &[GenTask]) -> String {
    let mut text = String::from(
        "# Generated plan\n\n| Task | 内容 | DoD | Writes | Depends | Status |\n|------|------|-----|--------|---------|--------|\n",
    );
    for (i, task) in tasks.iter().enumerate() {
        let writes: Vec<String> = task.writes.iter().map(|w| format!("`{w}`")).collect();
        let deps =
            if task.depends_on.is_empty() { "-".to_owned() } else { task.depends_on.join(", ") };
        let _ = writeln!(
            text,
            "| {} | {} | tests pass | {} | {deps} | cc:TODO |",
            i + 1,
            task.title,
            writes.join(", ")
        );
    }
    text
}

/// The tasks as `[[task]]` tables of a plan.toml.
fn plan_toml(tasks: &[GenTask]) -> String {
    let quoted = |items: &[String]| -> String {
        let items: Vec<String> = items.iter().map(|w| format!("\"{w}\"")).collect();
        items.join(", ")
    };
    let mut text = String::new();
    for (i, task) in tasks.iter().enumerate() {
        let _ = writeln!(
            text,
            "[[task]]\nid = \"{}\"\ntitle = \"{}\"\ndod = \"tests pass\"\nwrites = [{}]\ndepends_on = [{}]\n",
            i + 1,
            task.title,
            quoted(&task.writes),
            quoted(&task.depends_on)
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

/// Options from the command line.
struct Options {
    sizes: Vec<usize>,
    shape: Shape,
    format: Format,
    runs: usize,
    naive_full: usize,
    naive_sample: u64,
}

const USAGE: &str = "usage: plan_bench [TASKS...] [--shape mixed|shared-files] [--format md|toml] [--runs N] [--naive-full N] [--naive-sample PAIRS]";

/// Best and median timings of one phase.
struct Timing {
    best: Duration,
    median: Duration,
}

impl Timing {
    fn of<T>(runs: usize, f: impl FnMut() -> T) -> (Timing, T) {
        let (best, median, out) = timed(runs, f);
        (Timing { best, median }, out)
    }

    fn show(&self) -> String {
        format!("{} / {}", ms(self.best), ms(self.median))
    }
}

fn run(n: usize, options: &Options) {
    let (runs, format) = (options.runs, options.format);
    let tasks = options.shape.generate(n);
    let text = format.write(&tasks);

    // Each run parses afresh, so every analysis starts with cold glob DFAs.
    let (parse, plan) = Timing::of(runs, || format.read(&text));
    let mut fresh: Vec<_> = (0..runs.max(1)).map(|_| format.read(&text)).collect();
    let (analyze_time, analysis) = Timing::of(runs, || {
        let p = fresh.pop().expect("one plan per run");
        analyze(&p, 3).expect("generated plan is valid")
    });
    let (render, rendered) = Timing::of(runs, || {
        serde_json::to_string(&render::json(&plan, &analysis)).expect("json").len()
    });
    let (table, _) = Timing::of(runs, || render::table(&plan, &analysis).len());

    let s = &analysis.stats;
    println!(
        "== {n} tasks, shape {} ({} write-set entries, {} distinct); best / median of {runs} runs",
        options.shape.name(),
        s.entries,
        s.distinct_entries
    );
    println!("  parse {:<10} ({:>4} KiB)  {}", format.file(), text.len() / 1024, parse.show());
    println!("  analyze                     {}", analyze_time.show());
    println!(
        "  parse + analyze             {} / {}",
        ms(parse.best + analyze_time.best),
        ms(parse.median + analyze_time.median)
    );
    println!("  render table                {}", ms(table.best));
    println!("  render --json ({} KiB)    {}", rendered / 1024, render.show());
    let overlaps = overlap_count(&analysis);
    print_stats(&analysis, overlaps);
    naive(&plan, &analysis, overlaps, analyze_time.median, options);
}

/// Conflicting pairs whose write sets overlap (not those of tasks without one).
fn overlap_count(analysis: &Analysis) -> usize {
    analysis.conflicts.iter().filter(|c| matches!(c.reason, ConflictReason::Overlap { .. })).count()
}

/// The analysis's work counters.
fn print_stats(analysis: &Analysis, overlaps: usize) {
    let s = &analysis.stats;
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
}

/// The obvious alternative: every pair of tasks, every pair of entries; in full up to
/// `--naive-full` tasks, else sampled and extrapolated.
fn naive(plan: &Plan, analysis: &Analysis, overlaps: usize, analyzed: Duration, options: &Options) {
    let tasks = &plan.tasks;
    let n = tasks.len();
    if n <= options.naive_full {
        let t = Instant::now();
        let mut found = 0usize;
        for i in 0..n {
            for j in i + 1..n {
                if tasks[i].writes.collision(&tasks[j].writes).is_some() {
                    found += 1;
                }
            }
        }
        let naive = t.elapsed();
        assert_eq!(found, overlaps, "the naive check must find the same conflicts");
        println!(
            "  naive all-pairs             {}  (same {found} conflicts) → analysis (median) is {:.0}× faster",
            ms(naive),
            naive.as_secs_f64() / analyzed.as_secs_f64()
        );
    } else {
        let sample = options.naive_sample;
        let mut rng = Rng(7);
        let t = Instant::now();
        for _ in 0..sample {
            let i = rng.below(n as u64) as usize;
            let mut j = rng.below(n as u64 - 1) as usize;
            if j >= i {
                j += 1;
            }
            std::hint::black_box(tasks[i].writes.collision(&tasks[j].writes));
        }
        let per_pair = t.elapsed().as_secs_f64() / sample as f64;
        let estimate = per_pair * analysis.stats.task_pairs as f64;
        println!(
            "  naive all-pairs (est.)      {estimate:.1} s  ({sample} sampled pairs × {:.2} µs) → analysis (median) is ~{:.0}× faster",
            per_pair * 1e6,
            estimate / analyzed.as_secs_f64()
        );
    }
}

fn parse_args() -> Options {
    let mut options = Options {
        sizes: Vec::new(),
        shape: Shape::Mixed,
        format: Format::PlansMd,
        runs: 5,
        naive_full: 2_000,
        naive_sample: 2_000_000,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--naive-full" => options.naive_full = value().parse().unwrap_or_else(|_| usage()),
            "--runs" => options.runs = value().parse().unwrap_or_else(|_| usage()),
            "--naive-sample" => options.naive_sample = value().parse().unwrap_or_else(|_| usage()),
            "--shape" => options.shape = Shape::parse(&value()).unwrap_or_else(|| usage()),
            "--format" => options.format = Format::parse(&value()).unwrap_or_else(|| usage()),
            other => options.sizes.push(other.parse().unwrap_or_else(|_| usage())),
        }
    }
    if options.sizes.is_empty() {
        options.sizes = vec![1_000, 10_000];
    }
    options
}

fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2)
}

fn main() {
    let options = parse_args();
    for &n in &options.sizes {
        run(n, &options);
    }
}
