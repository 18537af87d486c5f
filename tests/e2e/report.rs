//! `breeze report --html`: one self-contained page of a real (scripted) run, its links to
//! the run's files, and — with Chromium on the machine — the page as a browser renders it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::support::*;

/// Four tasks on three lanes: change requests, failed attempts, an Advisor consult, a
/// conflict (`src/shared.txt`) and dependencies; review checks and a verify command give
/// gates and landing their own commands.
fn scripted_run() -> (tempfile::TempDir, PathBuf) {
    let plan = toml_task(
        "1",
        "Parser",
        &["src/parser.txt", "src/shared.txt"],
        "[task.sim]\nrequest_changes = 1\ndelay_ms = 300",
    ) + &toml_task(
        "2",
        "Lexer <script>alert(1)</script>",
        &["src/lexer.txt"],
        "[task.sim]\nfail_attempts = 2\ndelay_ms = 150",
    ) + &toml_task(
        "3",
        "Docs",
        &["src/shared.txt", "docs/guide.md"],
        "depends_on = [\"2\"]\n[task.sim]\ndelay_ms = 100",
    ) + &toml_task(
        "4",
        "CLI",
        &["src/cli.txt"],
        "depends_on = [\"2\"]\n[task.sim]\nask_advisor = true\ndelay_ms = 200",
    );
    let config = format!(
        "{SCRIPTED_CONFIG}\n[review]\nchecks = [[\"true\"]]\n[land]\nverify = [\"true\"]\n"
    );
    let (temp, root) = repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)]);
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    (temp, root)
}

/// `breeze report --html` (with `extra` flags): the path it printed.
fn report_html(root: &Path, extra: &[&str]) -> PathBuf {
    let mut args = vec!["report", "--html"];
    args.extend_from_slice(extra);
    let output = run_in(root, &args);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let path = PathBuf::from(stdout(&output).trim());
    assert!(path.is_absolute() && path.is_file(), "the path is printed: {}", both(&output));
    path
}

/// The lanes the journal gave tasks.
fn lanes_used(root: &Path) -> BTreeSet<u64> {
    let runs = root.join(".breeze/runs");
    let run = std::fs::read_dir(&runs).unwrap().next().unwrap().unwrap().path();
    let journal = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    journal
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["event"]["kind"] == "task_started")
        .map(|event| event["event"]["lane"].as_u64().unwrap())
        .collect()
}

/// Every `href` of the page but in-page anchors, percent-decoded.
fn file_links(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .filter(|href| !href.starts_with('#'))
        .map(|href| {
            let bytes = href.replace("&amp;", "&").into_bytes();
            let mut out = Vec::with_capacity(bytes.len());
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] == b'%' {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                    out.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 3;
                } else {
                    out.push(bytes[i]);
                    i += 1;
                }
            }
            String::from_utf8(out).unwrap()
        })
        .collect()
}

/// Checks the page: self-contained, a timeline row per lane used, every task, and links
/// to files that exist.
fn check_page(root: &Path, page: &Path) {
    let html = std::fs::read_to_string(page).unwrap();
    for outside in ["http://", "https://", "<script", "<link", "@import", "src="] {
        assert!(!html.contains(outside), "the page refers to something outside ({outside})");
    }
    assert!(html.split("url(").skip(1).all(|rest| rest.starts_with('#')), "only inline urls");
    assert!(html.contains("<svg id=\"timeline\""), "{html}");
    assert!(html.contains("<svg id=\"conflict-graph\""), "{html}");
    let lanes = lanes_used(root);
    assert!(lanes.len() >= 2, "the run used several lanes: {lanes:?}");
    assert_eq!(html.matches("class=\"lane-row\"").count(), lanes.len(), "one row per lane");
    for lane in &lanes {
        assert!(html.contains(&format!("data-lane=\"{lane}\"")), "lane {lane}");
    }
    for id in ["1", "2", "3", "4"] {
        assert!(html.contains(&format!("data-task=\"{id}\"><td>")), "a table row of task {id}");
    }
    assert!(html.contains("Lexer &lt;script&gt;alert(1)&lt;/script&gt;"), "the title is escaped");
    for phase in ["work", "gates", "review", "advisor", "landing"] {
        assert!(html.contains(&format!("phase-{phase}")), "the timeline shows {phase}");
    }
    let links = file_links(&html);
    let dir = page.parent().unwrap();
    for link in &links {
        assert!(dir.join(link).is_file(), "the link {link} leads to a file");
    }
    for kind in [".round-1.diff", ".round-2.diff", ".review-result.json", ".advisor-response.json"]
    {
        assert!(links.iter().any(|link| link.ends_with(kind)), "a link to a {kind}: {links:?}");
    }
    assert!(links.iter().any(|link| link.contains("contracts/")), "{links:?}");
    assert!(links.iter().any(|link| link.contains("logs/")), "{links:?}");
}

#[test]
fn report_html_is_one_self_contained_page_with_a_timeline_graph_table_and_links() {
    let (temp, root) = scripted_run();
    let page = report_html(&root, &[]);
    let runs = root.join(".breeze/runs").canonicalize().unwrap();
    assert!(page.starts_with(&runs) && page.ends_with("report.html"), "{}", page.display());
    check_page(&root, &page);

    // Elsewhere (--out), its links lead back into the run folder.
    let out = temp.path().join("pages/run.html");
    let elsewhere = report_html(&root, &["--out", out.to_str().unwrap()]);
    assert_eq!(elsewhere, out);
    check_page(&root, &elsewhere);

    // Each of task 2's three attempts is a bar of its own, the two that failed marked; the
    // time per phase is summed; times are local, with the reader's UTC offset.
    let html = std::fs::read_to_string(&page).unwrap();
    for attempt in 1..=3 {
        assert!(html.contains(&format!("data-attempt=\"{attempt}\"")), "attempt {attempt}");
    }
    assert!(html.matches("class=\"attempt-failed\"").count() >= 2, "{html}");
    assert!(html.contains("<h2>Where the time went</h2>"), "{html}");
    for id in ["1", "2", "3", "4"] {
        let rows = html.matches(&format!("data-task=\"{id}\"><td>")).count();
        assert_eq!(rows, 2, "task {id}: a row in the task table and one of where its time went");
    }
    let india = temp.path().join("pages/local.html");
    let output = breeze()
        .current_dir(&root)
        .env("TZ", "<+0530>-5:30")
        .args(["report", "--html", "--out", india.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let html = std::fs::read_to_string(&india).unwrap();
    let started = html.split("<dt>started</dt><dd>").nth(1).unwrap().split('<').next().unwrap();
    assert!(started.ends_with(" +05:30") && started.len() == 26, "local time: {started}");
    assert!(html.contains("local time, UTC+05:30"), "{html}");

    // The Markdown report is still the default.
    let markdown = run_in(&root, &["report"]);
    assert_eq!(markdown.status.code(), Some(0), "{}", both(&markdown));
    assert!(stdout(&markdown).starts_with("# breeze run "), "{}", stdout(&markdown));
}

#[test]
fn report_html_shows_an_approval_wait_off_the_lanes_and_the_resumed_session() {
    let config = format!("{SCRIPTED_CONFIG}\n[land]\nrequire_approval = true\n");
    let plan = toml_task("1", "A", &["a.txt"], "");
    let (_temp, root) = repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)]);
    assert_eq!(run_in(&root, &["run"]).status.code(), Some(3), "task 1 awaits approval");
    assert_eq!(run_in(&root, &["approve", "1"]).status.code(), Some(0));
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    let html = std::fs::read_to_string(report_html(&root, &[])).unwrap();
    assert!(html.contains("data-ended=\"awaiting-approval\""), "{html}");
    assert_eq!(html.matches("class=\"deferred-row\"").count(), 1, "an off-lane row: {html}");
    assert_eq!(html.matches("<g class=\"break\">").count(), 1, "two sessions: {html}");
    let landed = html.matches("data-ended=\"landed\"").count();
    assert_eq!(landed, 1, "it landed after the approval: {html}");
}

/// The first Chromium on PATH.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let names = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];
    std::env::split_paths(&path)
        .flat_map(|dir| names.map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

#[test]
fn report_html_renders_in_a_real_browser() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("BREEZE_REQUIRE_CHROMIUM").is_none(),
            "BREEZE_REQUIRE_CHROMIUM is set but no Chromium is on PATH"
        );
        eprintln!(
            "skipped: no Chromium on PATH (apt-get install chromium) to render the HTML report"
        );
        return;
    };
    let (_temp, root) = scripted_run();
    let page = report_html(&root, &[]);
    // Kept after the test, to look at.
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-html");
    std::fs::create_dir_all(&keep).unwrap();
    let shot = keep.join("report.png");
    let output = std::process::Command::new(project_root().join("scripts/check-report-html.sh"))
        .arg(&page)
        .arg(&shot)
        .env("CHROMIUM", &browser)
        .output()
        .unwrap();
    let text = both(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    eprintln!("the report as Chromium renders it: {}\n{text}", shot.display());
    assert!(stdout(&output).contains("ok tasks 1 2 3 4"), "{text}");
    assert!(stdout(&output).contains("ok a table row per task of the plan (4 of 4)"), "{text}");
    assert!(stdout(&output).contains("ok console: nothing logged"), "{text}");
    assert!(stdout(&output).contains("ok a bar per worker attempt"), "{text}");
    assert!(stdout(&output).contains("ok at 800 px table#tasks fits its box"), "{text}");
    let lanes: Vec<String> = lanes_used(&root).iter().map(u64::to_string).collect();
    assert!(stdout(&output).contains(&format!("ok lanes {}", lanes.join(" "))), "{text}");

    // Without arguments the script runs `breeze demo` and checks its page.
    let demo_shot = keep.join("demo.png");
    let output = std::process::Command::new(project_root().join("scripts/check-report-html.sh"))
        .env("CHROMIUM", &browser)
        .env("BREEZE", env!("CARGO_BIN_EXE_breeze"))
        .env("OUT", &demo_shot)
        .output()
        .unwrap();
    let text = both(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(stdout(&output).contains("ok tasks 1 2 3 4 5 6 7 8 9"), "{text}");
    assert!(demo_shot.is_file(), "{text}");
}
