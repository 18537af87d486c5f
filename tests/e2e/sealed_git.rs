//! Sealed lanes: a worker writes no byte of the shared repository, and no path a role could
//! have written steers the engine. Shell workers (`command` backend) attack the shared git
//! the way a hostile agent would — overwriting and deleting main's loose objects, planting
//! links in the lane's admin folder for breeze's own git to write through — and a worker
//! uses git normally (`status`, `diff`, `add`, `stash`, `commit`, a nested repository of its
//! own). Asserted with the git CLI (`git fsck --full`, `git show main:…`, the user's own
//! branch) and the file system (the user's checkout and `.git/config` byte for byte,
//! nothing written outside the repository), with a well-behaved task of the same run
//! landing. Under Landlock every attack is refused by the kernel; without it
//! (`sandbox.mode = "detect"`) breeze's checks find and repair what a role planted, or
//! stop the run naming what it damaged.

use std::path::{Path, PathBuf};

use crate::support::{both, breeze, git, repo_with, run_in, stdout, toml_task};

/// What must stay exactly as it was: the user's checkout and config, their own branch,
/// main's README, everything beside the repository.
struct Untouched {
    config: Vec<u8>,
    readme: Vec<u8>,
    mine: String,
    main_readme: String,
    outside: Vec<String>,
}

impl Untouched {
    fn take(root: &Path) -> Untouched {
        Untouched {
            config: std::fs::read(root.join(".git/config")).unwrap(),
            readme: std::fs::read(root.join("README.md")).unwrap(),
            mine: git(root, &["rev-parse", "mine"]),
            main_readme: git(root, &["show", "main:README.md"]),
            outside: listing(root.parent().unwrap()),
        }
    }

    fn check(&self, root: &Path) {
        assert_eq!(std::fs::read(root.join(".git/config")).unwrap(), self.config, ".git/config");
        assert_eq!(std::fs::read(root.join("README.md")).unwrap(), self.readme, "README.md");
        assert_eq!(git(root, &["rev-parse", "mine"]), self.mine, "the user's own branch");
        assert_eq!(git(root, &["show", "mine:notes.txt"]), "my own unpushed work\n");
        assert_eq!(git(root, &["show", "main:README.md"]), self.main_readme, "main's README");
        assert_eq!(listing(root.parent().unwrap()), self.outside, "nothing beside the repo");
        git(root, &["fsck", "--full", "--strict"]);
        assert_eq!(git(root, &["status", "--porcelain"]), "", "the user's checkout is clean");
    }
}

/// The names in `dir`.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A worker that does its task and nothing else.
const GOOD_WORKER: &str = r#"#!/bin/sh
cat > /dev/null
echo "$BREEZE_TASK_ID" > b.txt
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT"
"#;

/// A reviewer that reads the task's change with git in the lane (each step's exit code on
/// stderr), then approves.
const REVIEWER: &str = r#"#!/bin/sh
cat > /dev/null
for step in 'git diff --stat main HEAD' 'git log --oneline main..HEAD' 'git status --short'; do
  sh -c "$step" >&2 2>&1; echo "REVIEW-GIT exit=$? $step" >&2
done
echo '{"schema_version":"review-result.v1","verdict":"APPROVE","gaps":[]}'
"#;

/// A worker that runs `attacks` (shell lines, each reported on stderr as `ATTACK-OK` or
/// `ATTACK-REFUSED`) on its first attempt, then does its task.
fn attacker(attacks: &str) -> String {
    format!(
        r#"#!/bin/sh
cat > /dev/null
try() {{
  if sh -c "$1" >&2 2>&1; then echo "ATTACK-OK: $1" >&2; else echo "ATTACK-REFUSED: $1" >&2; fi
}}
# The repository: this script is its `roles/1.sh` (the lane is elsewhere).
root=$(cd "$(dirname "$0")/.." && pwd)
admin="$root/.git/worktrees/$(basename "$PWD")"
if [ "$BREEZE_ATTEMPT" = 1 ]; then
{attacks}
fi
echo work > a.txt
printf '{{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}}' > "$BREEZE_OUTPUT"
"#
    )
}

/// The loose-object attacks of issue 18: main's README blob overwritten with an object the
/// worker wrote (with `cp` and through an open file), every loose object deleted, the whole
/// object store deleted.
const OBJECT_ATTACKS: &str = r#"
blob=$(git rev-parse main:README.md)
object="$root/.git/objects/$(echo "$blob" | cut -c1-2)/$(echo "$blob" | cut -c3-)"
evil=$(echo evil | git hash-object -w --stdin)
evil_object="$(git rev-parse --git-path objects)/$(echo "$evil" | cut -c1-2)/$(echo "$evil" | cut -c3-)"
test -f "$object" && test -f "$evil_object" && echo "ATTACK-READY: $object" >&2
try "cp -f '$evil_object' '$object'"
try "chmod u+w '$object' && cat '$evil_object' > '$object'"
try "rm -f $root/.git/objects/*/*"
try "rm -rf $root/.git/objects"
"#;

/// Links planted in the lane's admin folder, where breeze's own git appends reflog lines:
/// to `.git/config`, into the user's checkout, to a new file beside the repository; and a
/// FIFO that would block a reader.
const ADMIN_LINK_ATTACKS: &str = r#"
try "mkdir -p '$admin/logs' && ln -sf '$root/.git/config' '$admin/logs/HEAD'"
try "ln -sf '$root/README.md' '$admin/ORIG_HEAD'"
try "ln -sf '$root/../planted-by-reflog' '$admin/logs/refs'"
try "mkfifo '$admin/FETCH_HEAD'"
"#;

/// Shell roles; one lane without confinement (detection cannot tell apart a role's change
/// to the user's checkout from another task's landing made while the role ran).
fn config(root: &Path, mode: &str) -> String {
    crate::support::shell_roles_config(root, mode, if mode == "detect" { 1 } else { 2 })
}

/// A repository with two tasks (1: `worker_one`, writing `a.txt`/`c.txt`; 2: a good worker
/// writing `b.txt`), shell roles, and a branch of the user's own with unpushed work.
fn setup(mode: &str, worker_one: &str) -> (tempfile::TempDir, PathBuf) {
    let plan = toml_task("1", "Attack", &["a.txt", "c.txt"], "")
        + &toml_task("2", "Honest", &["b.txt"], "");
    let (temp, root) = repo_with(&[("README.md", "mine\n"), ("plan.toml", &plan)]);
    let root = std::fs::canonicalize(&root).unwrap();
    crate::support::write(&root, "breeze.toml", &config(&root, mode));
    crate::support::write(&root, "roles/1.sh", worker_one);
    crate::support::write(&root, "roles/2.sh", GOOD_WORKER);
    crate::support::write(&root, "roles/reviewer.sh", REVIEWER);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "roles"]);
    git(&root, &["checkout", "-qb", "mine"]);
    crate::support::write(&root, "notes.txt", "my own unpushed work\n");
    git(&root, &["add", "notes.txt"]);
    git(&root, &["commit", "-qm", "mine"]);
    git(&root, &["checkout", "-q", "main"]);
    (temp, root)
}

/// Everything task 1's workers printed on stderr.
fn worker_one_stderr(root: &Path) -> String {
    stderr_of(root, "1.worker.")
}

/// Everything the role processes whose logs start with `prefix` printed on stderr.
fn stderr_of(root: &Path, prefix: &str) -> String {
    let mut text = String::new();
    for run in std::fs::read_dir(root.join(".breeze/runs")).unwrap().flatten() {
        let Ok(logs) = std::fs::read_dir(run.path().join("logs")) else { continue };
        let mut files: Vec<PathBuf> = logs.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with(prefix) && name.ends_with(".stderr") {
                text.push_str(&std::fs::read_to_string(&file).unwrap_or_default());
            }
        }
    }
    text
}

fn landed(root: &Path) -> Vec<String> {
    let mut tasks: Vec<String> =
        git(root, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"])
            .lines()
            .filter(|line| !line.is_empty())
            .map(str::to_string)
            .collect();
    tasks.sort();
    tasks
}

#[test]
fn confined_workers_cannot_touch_the_shared_objects_or_plant_links_for_breezes_git() {
    if !crate::support::landlock_or_skip() {
        return;
    }
    let attacks = format!("{OBJECT_ATTACKS}{ADMIN_LINK_ATTACKS}");
    let (_temp, root) = setup("require", &attacker(&attacks));
    let untouched = Untouched::take(&root);
    let output = breeze().current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
    let text = both(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(stdout(&output).contains("roles confined by the kernel"), "{text}");

    let log = worker_one_stderr(&root);
    assert!(log.contains("ATTACK-READY"), "the attack found main's object: {log}");
    assert!(!log.contains("ATTACK-OK"), "an attack succeeded: {log}");
    assert_eq!(log.matches("ATTACK-REFUSED").count(), 8, "{log}");
    assert!(log.contains("Permission denied"), "{log}");

    untouched.check(&root);
    assert!(!root.parent().unwrap().join("planted-by-reflog").exists());
    assert_eq!(landed(&root), ["1", "2"], "both tasks landed");
    assert_eq!(git(&root, &["show", "main:a.txt"]), "work\n");
    assert_eq!(git(&root, &["show", "main:b.txt"]), "2\n");
    // The lane stays for the next run, parked at main's tip, and its `.git` names the
    // shared admin folder again, not the worker's private git directory.
    let lane = crate::support::lane(&root, "lane-1");
    let gitfile = std::fs::read_to_string(lane.join(".git")).unwrap();
    assert!(gitfile.trim_end().ends_with(".git/worktrees/lane-1"), "{gitfile}");
    assert_eq!(git(&lane, &["rev-parse", "HEAD"]), git(&root, &["rev-parse", "main"]));
    // `breeze clean` removes the lanes and their private git directories.
    let clean = run_in(&root, &["clean"]);
    assert_eq!(clean.status.code(), Some(0), "{}", both(&clean));
    assert!(!root.join(".breeze/lanes/lane-1").exists());
    assert_eq!(git(&root, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1);
}

#[test]
fn without_confinement_links_planted_in_the_admin_folder_are_removed_before_breeze_writes() {
    let (_temp, root) = setup("detect", &attacker(ADMIN_LINK_ATTACKS));
    let untouched = Untouched::take(&root);
    let output = breeze().current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
    let text = both(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(stdout(&output).contains("NO kernel confinement"), "{text}");
    let log = worker_one_stderr(&root);
    assert_eq!(log.matches("ATTACK-OK").count(), 4, "unconfined, the plants succeed: {log}");

    // The first attempt failed, naming each plant; breeze removed them before its own git
    // committed in the lane (which appends to `logs/HEAD`), and the second attempt landed.
    let input = std::fs::read_to_string(
        std::fs::read_dir(root.join(".breeze/runs"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path()
            .join("io/1.worker.2.input.json"),
    )
    .unwrap();
    for named in [
        "`logs/HEAD` in the admin folder of lane-1",
        "was a symbolic link to",
        "`ORIG_HEAD`",
        "`logs/refs`",
        "`FETCH_HEAD` in the admin folder of lane-1",
        "was a FIFO; removed",
    ] {
        assert!(input.contains(named), "the retry is told `{named}`: {input}");
    }
    untouched.check(&root);
    assert!(!root.parent().unwrap().join("planted-by-reflog").exists());
    assert_eq!(landed(&root), ["1", "2"]);
    assert_eq!(git(&root, &["show", "main:a.txt"]), "work\n");
}

#[test]
fn without_confinement_an_overwritten_object_of_main_stops_the_run_naming_it() {
    let attacks = r#"
blob=$(git rev-parse main:README.md)
object="$root/.git/objects/$(echo "$blob" | cut -c1-2)/$(echo "$blob" | cut -c3-)"
evil=$(echo evil | git hash-object -w --stdin)
evil_object="$(git rev-parse --git-path objects)/$(echo "$evil" | cut -c1-2)/$(echo "$evil" | cut -c3-)"
try "chmod u+w '$object' && cat '$evil_object' > '$object'"
"#;
    let (_temp, root) = setup("detect", &attacker(attacks));
    let blob = git(&root, &["rev-parse", "main:README.md"]).trim().to_string();
    let object = root.join(".git/objects").join(&blob[..2]).join(&blob[2..]);
    let original = std::fs::read(&object).unwrap();
    let output = breeze().current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
    let text = both(&output);
    assert_eq!(output.status.code(), Some(3), "stopped resumably: {text}");
    assert!(text.contains(&format!(".git/objects/{}/{}", &blob[..2], &blob[2..])), "{text}");
    assert!(text.contains("overwritten or deleted") && text.contains("git fsck"), "{text}");
    assert!(!landed(&root).contains(&"1".to_string()), "nothing of the attacker landed");

    // The user restores the object (here from a copy; in life from a clone) and resumes.
    std::fs::write(&object, original).unwrap();
    let resumed = breeze().current_dir(&root).args(["resume"]).output().unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    assert_eq!(landed(&root), ["1", "2"]);
    git(&root, &["fsck", "--full", "--strict"]);
    assert_eq!(git(&root, &["show", "main:README.md"]), "mine\n");
}

/// A worker that uses git the usual way, each step's exit code on stderr.
const GIT_USER: &str = r#"#!/bin/sh
cat > /dev/null
step() { sh -c "$1" >&2 2>&1; echo "GIT-STEP exit=$? $1" >&2; }
echo work > a.txt
echo extra > c.txt
step "git status --short"
step "git diff"
step "git add -A"
step "git -c user.name=Worker -c user.email=w@example.com stash"
step "test ! -e c.txt"
step "git stash pop"
step "git diff --cached --quiet main -- README.md"
step "git -c user.name=Worker -c user.email=w@example.com commit -qm 'worker commit'"
step "git log --format=%s main..HEAD | grep -qx 'worker commit'"
step "git diff --stat main HEAD | grep -q c.txt"
step "git init -q \"\$TMPDIR/nested\" && git -C \"\$TMPDIR/nested\" -c user.name=n -c user.email=n@example.com commit -q --allow-empty -m nested && test \"\$(git -C \"\$TMPDIR/nested\" rev-list --count HEAD)\" = 1"
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT"
"#;

#[test]
fn a_worker_using_git_normally_succeeds_in_its_private_git_directory_and_its_files_land() {
    let mut modes = vec!["detect"];
    if crate::support::landlock_or_skip() {
        modes.push("require");
    }
    for mode in modes {
        let (_temp, root) = setup(mode, GIT_USER);
        let untouched = Untouched::take(&root);
        let output = breeze().current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
        let text = both(&output);
        assert_eq!(output.status.code(), Some(0), "{mode}: {text}");

        let log = worker_one_stderr(&root);
        let steps: Vec<&str> = log.lines().filter(|l| l.starts_with("GIT-STEP")).collect();
        assert_eq!(steps.len(), 11, "{mode}: {log}");
        for step in &steps {
            assert!(step.starts_with("GIT-STEP exit=0 "), "{mode}: {step}\n{log}");
        }

        untouched.check(&root);
        assert_eq!(landed(&root), ["1", "2"], "{mode}");
        // What the worker wrote lands — built from its files by breeze; its own commit,
        // made in its private git directory, is nowhere in the repository.
        assert_eq!(git(&root, &["show", "main:a.txt"]), "work\n");
        assert_eq!(git(&root, &["show", "main:c.txt"]), "extra\n");
        let authors = git(&root, &["log", "--all", "--format=%an %s"]);
        assert!(!authors.contains("worker commit"), "{mode}: {authors}");
        assert!(git(&root, &["stash", "list"]).is_empty(), "{mode}: no stash in the shared repo");

        // The reviewer read the change with git in the lane (at rest: its admin folder),
        // writing nothing.
        let review = stderr_of(&root, "1.reviewer.");
        assert_eq!(review.matches("REVIEW-GIT exit=0 ").count(), 3, "{mode}: {review}");
        assert!(review.contains("c.txt"), "{mode}: the reviewer saw the change: {review}");

        let doctor = breeze().current_dir(&root).args(["doctor"]).output().unwrap();
        assert!(stdout(&doctor).contains("workers' git: private per lane"), "{}", both(&doctor));
    }
}
