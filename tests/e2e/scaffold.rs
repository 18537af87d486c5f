//! The Lead plans: `breeze plan --fill-writes` has the scaffolder propose write sets for a
//! plan written without any, `breeze draft` turns a goal into tasks — then the plan runs on
//! as many lanes as its write groups allow.

use crate::support::{SCRIPTED_CONFIG, both, breeze, git, repo_with, run_in, status_json, stdout};

/// A plan as people write it: a task table without a Writes column, six tasks over three
/// areas; each area's two tasks touch one shared module file.
pub const SIX_TASKS: &str = "# Plans\n\n| Task | 内容 | DoD | Depends | Status |\n|------|------|-----|---------|--------|\n| 1 | Add the user model in `src/users/model.rs`, declared in `src/users/mod.rs` | users have ids | - | cc:TODO |\n| 2 | Add the user API in `src/users/api.rs`, routed in `src/users/mod.rs` | GET /users works | 1 | cc:TODO |\n| 3 | Add the ledger in `src/billing/ledger.rs`, declared in `src/billing/mod.rs` | entries balance | - | cc:TODO |\n| 4 | Add invoices in `src/billing/invoice.rs`, declared in `src/billing/mod.rs` | invoices total | 3 | cc:TODO |\n| 5 | Write the setup guide `docs/setup.md`, linked from `docs/index.md` | a new user can set up | - | cc:TODO |\n| 6 | Write the API guide `docs/api.md`, linked from `docs/index.md` | every route is described | 5 | cc:TODO |\n";

/// The repository with the six-task plan and `config`, committed.
fn six_task_repo(config: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    repo_with(&[("Plans.md", SIX_TASKS), ("breeze.toml", config), ("README.md", "r\n")])
}

/// Fills the write sets, commits the plan, runs it; checks three groups, three lanes, six
/// landings. Returns the run's output.
pub fn fill_then_run(
    root: &std::path::Path,
    breeze_cmd: impl Fn() -> std::process::Command,
) -> String {
    let filled = breeze_cmd().current_dir(root).args(["plan", "--fill-writes"]).output().unwrap();
    assert_eq!(filled.status.code(), Some(0), "{}", both(&filled));
    let text = stdout(&filled);
    let after = text.split("After").nth(1).unwrap_or_default();
    assert!(after.contains("Write groups: 3 · lanes: 3"), "three groups after filling:\n{text}");
    let plans = std::fs::read_to_string(root.join("Plans.md")).unwrap();
    // Only the Writes column was added: every other line of the plan is as it was.
    for line in SIX_TASKS.lines().filter(|line| !line.starts_with('|')) {
        assert!(plans.lines().any(|l| l == line), "`{line}` kept:\n{plans}");
    }
    assert!(plans.contains("| Task | 内容 | DoD | Writes | Depends | Status |"), "{plans}");
    assert!(plans.contains("`src/users/model.rs`, `src/users/mod.rs`"), "{plans}");
    git(root, &["commit", "-qam", "write sets"]);

    let ran = breeze_cmd().current_dir(root).args(["run"]).output().unwrap();
    let out = both(&ran);
    assert_eq!(ran.status.code(), Some(0), "{out}");
    assert!(out.contains("6 tasks, 3 write groups, 3 lanes"), "{out}");
    let landed = git(root, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"]);
    assert_eq!(landed.lines().filter(|l| !l.is_empty()).count(), 6, "{landed}");
    out
}

#[test]
fn a_plan_without_write_sets_is_filled_and_runs_on_three_lanes() {
    let (_temp, root) = six_task_repo(SCRIPTED_CONFIG);
    let before = run_in(&root, &["plan"]);
    assert!(
        stdout(&before).contains("lanes: 1"),
        "before: every task runs alone: {}",
        both(&before)
    );
    fill_then_run(&root, breeze);
    let status = status_json(&root);
    assert_eq!(status["state"], "succeeded", "{status}");
}

#[test]
fn a_refused_proposal_is_asked_again_then_the_plan_is_left_untouched() {
    // A scaffolder that proposes a path inside .git, twice.
    let (temp, root) = six_task_repo(SCRIPTED_CONFIG);
    let script = temp.path().join("scaffolder.sh");
    std::fs::write(
        &script,
        "cat > /dev/null\nprintf '{\"schema_version\":\"plan-draft.v1\",\"tasks\":[{\"id\":\"1\",\"title\":\"t\",\"writes\":[\".git/config\"]}]}'\n",
    )
    .unwrap();
    let config = format!(
        "{SCRIPTED_CONFIG}\n[roles.scaffolder]\nbackend = \"command\"\ncommand = [\"sh\", \"{}\"]\n",
        script.display()
    )
    .replace("[roles.scaffolder]\nbackend = \"scripted\"\n", "");
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    git(&root, &["commit", "-qam", "scaffolder"]);
    let before = std::fs::read(root.join("Plans.md")).unwrap();
    let output = run_in(&root, &["plan", "--fill-writes"]);
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    let err = both(&output);
    assert!(err.contains("refused twice") && err.contains(".git"), "{err}");
    assert!(err.contains("the plan is unchanged"), "{err}");
    assert_eq!(std::fs::read(root.join("Plans.md")).unwrap(), before, "the plan file is untouched");
}

#[test]
fn a_goal_becomes_tasks_of_a_new_plan() {
    let (_temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("README.md", "r\n")]);
    let goal = "Add a health check in `src/health.rs`\nDocument it in `docs/health.md`\n";
    let output = breeze().current_dir(&root).args(["draft", goal]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(stdout(&output).contains("2 task(s) created"), "{}", both(&output));
    let plans = std::fs::read_to_string(root.join("Plans.md")).unwrap();
    assert!(plans.starts_with("# Plans"), "made from the template: {plans}");
    assert!(!plans.contains("Describe the first task"), "without the template's examples: {plans}");
    assert!(
        plans.contains("| 1 | Add a health check in src/health.rs | ")
            && plans.contains("`docs/health.md`"),
        "{plans}"
    );
    assert!(stdout(&output).contains("Write groups: 2"), "{}", both(&output));
    // A second goal adds to the same plan, with new ids.
    let more = breeze()
        .current_dir(&root)
        .args(["draft", "Add metrics in `src/metrics.rs`"])
        .output()
        .unwrap();
    assert_eq!(more.status.code(), Some(0), "{}", both(&more));
    let plans = std::fs::read_to_string(root.join("Plans.md")).unwrap();
    assert!(plans.contains("| 3 | Add metrics in src/metrics.rs |"), "{plans}");
}

/// A scaffolder in Python: first a broad proposal (`src/` for code, `docs/` for docs);
/// when pushed back with conflicts, the exact paths each task names.
const PY_SCAFFOLDER: &str = r#"
import json, os, re, sys
sys.stdin.read()
inp = json.load(open(os.environ["BREEZE_INPUT"]))
tasks = []
for t in inp["tasks"]:
    named = re.findall(r"`([^`]+)`", t["title"] + " " + t["dod"])
    if inp["conflicts"]:
        writes = named
    else:
        writes = sorted({p.split("/")[0] + "/" for p in named})
    tasks.append(dict(t, writes=writes))
out = {"schema_version": "plan-draft.v1", "tasks": tasks, "notes": "narrowed" if inp["conflicts"] else "broad"}
open(os.environ["BREEZE_OUTPUT"], "w").write(json.dumps(out))
"#;

/// A worker in Python: writes every file of its write set.
const PY_WORKER: &str = r#"
import json, os, sys
sys.stdin.read()
inp = json.load(open(os.environ["BREEZE_INPUT"]))
written = []
for w in inp["task"]["writes"]:
    if w.endswith("/") or any(c in w for c in "*?["):
        continue
    os.makedirs(os.path.dirname(w) or ".", exist_ok=True)
    with open(w, "a") as f:
        f.write("task %s: %s\n" % (inp["task"]["id"], inp["task"]["title"]))
    written.append(w)
report = {"schema_version": "worker-report.v1", "status": "completed", "summary": "wrote " + ", ".join(written),
          "files_changed": written,
          "self_review": [{"rule": "write-set-respected", "verified": True, "evidence": "wrote only " + ", ".join(written)}]}
open(os.environ["BREEZE_OUTPUT"], "w").write(json.dumps(report))
"#;

#[test]
fn shell_roles_fill_the_plan_after_one_pushback_and_run_it_on_three_lanes() {
    let temp = tempfile::tempdir().unwrap();
    let scaffolder = temp.path().join("scaffolder.py");
    let worker = temp.path().join("worker.py");
    std::fs::write(&scaffolder, PY_SCAFFOLDER).unwrap();
    std::fs::write(&worker, PY_WORKER).unwrap();
    let config = format!(
        "[run]\nmax_workers = 3\n[roles.worker]\nbackend = \"command\"\ncommand = [\"python3\", \"{}\"]\n[roles.scaffolder]\nbackend = \"command\"\ncommand = [\"python3\", \"{}\"]\n[roles.reviewer]\nbackend = \"scripted\"\n[roles.advisor]\nbackend = \"scripted\"\n",
        worker.display(),
        scaffolder.display()
    );
    let (_repo, root) = six_task_repo(&config);
    let filled = run_in(&root, &["plan", "--fill-writes"]);
    let text = stdout(&filled);
    assert!(text.contains("asked again: ") && text.contains("narrower write sets"), "{text}");
    assert!(text.contains("notes: narrowed"), "the narrowed proposal was taken: {text}");
    git(&root, &["checkout", "-q", "--", "Plans.md"]);
    let out = fill_then_run(&root, breeze);
    assert!(out.contains("(lane 3)"), "{out}");
    assert_eq!(
        git(&root, &["show", "main:docs/index.md"]).lines().count(),
        2,
        "both docs tasks linked their guide"
    );
}

#[test]
fn a_draft_replaces_init_s_untouched_template() {
    let (_temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("README.md", "r\n")]);
    let init = run_in(&root, &["init"]);
    assert_eq!(init.status.code(), Some(0), "{}", both(&init));
    let template = std::fs::read_to_string(root.join("Plans.md")).unwrap();
    assert!(template.contains("<!-- breeze:template"), "{template}");
    let output = breeze()
        .current_dir(&root)
        .args(["draft", "Add a health check in `src/health.rs`"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(stdout(&output).contains("1 task(s) created"), "{}", both(&output));
    let plans = std::fs::read_to_string(root.join("Plans.md")).unwrap();
    assert!(
        !plans.contains("breeze:template") && !plans.contains("Describe the first task"),
        "{plans}"
    );
    assert!(plans.contains("| 1 | Add a health check in src/health.rs | "), "{plans}");
    // The plan is the user's now: the preflight passes.
    let doctor = run_in(&root, &["doctor", "--no-setup"]);
    assert_eq!(doctor.status.code(), Some(0), "{}", both(&doctor));
}
