//! The starter `breeze.toml`: `templates/breeze.toml` with what detection found filled
//! in — the test command in `[review] checks` and `[land] verify`, the install command in
//! `[worktree] setup`, the build caches of the ecosystems found in `[sandbox] writable` — and
//! comments saying what was found and why.

use super::detect::{Detection, Project};

const TEMPLATE: &str = include_str!("../../../../../templates/breeze.toml");

/// The project files detection knows, for the "nothing found" comment.
const KNOWN: &str = "Cargo.toml, package.json, go.mod, uv.lock, poetry.lock, pyproject.toml, \
                     requirements*.txt, setup.py, a Makefile";

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An argv as a TOML array of strings.
fn toml_argv(argv: &[String]) -> String {
    let items: Vec<String> = argv.iter().map(|arg| toml_string(arg)).collect();
    format!("[{}]", items.join(", "))
}

/// `key = value` with a comment aligned like the template's (column 32).
fn line(key_value: &str, comment: &str) -> String {
    if comment.is_empty() {
        return key_value.to_string();
    }
    format!("{key_value:<30} # {comment}")
}

/// What `land.verify` runs: the test command, after the install when the project needs
/// one — the integration checkout gets no `worktree.setup`.
pub fn verify_argv(project: &Project) -> Option<Vec<String>> {
    let test = project.test.as_ref()?;
    Some(match &project.install {
        Some(install) => {
            vec!["sh".into(), "-c".into(), format!("{} && {}", install.join(" "), test.join(" "))]
        }
        None => test.clone(),
    })
}

/// The comment block about what was found.
fn detected(detection: &Detection) -> String {
    let describe = |project: &Project| match project.test_line() {
        Some(test) => format!("{}: {} → {test}", project.name, project.why),
        None => format!("{}: {}", project.name, project.why),
    };
    let mut lines = Vec::new();
    match detection.primary() {
        Some(primary) => {
            lines.push(
                "What `breeze init` found here; the first line's test command is in [review] checks and [land] verify:"
                    .to_string(),
            );
            lines.push(format!("  {}", describe(primary)));
            for other in detection.others() {
                let note = if other.test.is_some() { " (not used; see [land])" } else { "" };
                lines.push(format!("  {}{note}", describe(other)));
            }
        }
        None if detection.projects.is_empty() => {
            lines.push(format!("`breeze init` found no project file it knows ({KNOWN}),"));
            lines.push(
                "so no test command: set yours in [review] checks and [land] verify below."
                    .to_string(),
            );
        }
        None => {
            lines.push("What `breeze init` found here:".to_string());
            for project in &detection.projects {
                lines.push(format!("  {}", describe(project)));
            }
            lines.push(
                "None of it names a test command: set yours in [review] checks and [land] verify below."
                    .to_string(),
            );
        }
    }
    lines.iter().map(|line| format!("# {line}")).collect::<Vec<_>>().join("\n")
}

fn checks(detection: &Detection) -> String {
    match detection.primary().and_then(|project| project.test.as_ref()) {
        Some(test) => line(&format!("checks = [{}]", toml_argv(test)), ""),
        None => line("checks = []", "e.g. [[\"make\", \"test\"], [\"./scripts/lint.sh\"]]"),
    }
}

fn verify(detection: &Detection) -> String {
    let mut lines = Vec::new();
    match detection.primary().and_then(|primary| Some((primary, verify_argv(primary)?))) {
        Some((primary, argv)) => {
            if primary.install.is_some() {
                lines.push(
                    "# The integration checkout keeps its ignored files (dependencies) between"
                        .to_string(),
                );
                lines.push(
                    "# landings, but nothing installs them there: the install runs first."
                        .to_string(),
                );
            }
            lines.push(format!("verify = {}", toml_argv(&argv)));
        }
        None => lines.push(line(
            "verify = []",
            "your test command as an argv, e.g. [\"make\", \"test\"] or [\"./run-tests.sh\"]",
        )),
    }
    for other in detection.others() {
        if let Some(argv) = verify_argv(other) {
            lines.push(line(&format!("# verify = {}", toml_argv(&argv)), other.name));
        }
    }
    lines.join("\n")
}

fn setup(detection: &Detection) -> String {
    match detection.primary().and_then(|project| project.install.as_ref()) {
        Some(install) => line(
            &format!("setup = {}", toml_argv(install)),
            "run in each lane, again when its inputs change",
        ),
        None => line(
            "# setup = [\"npm\", \"ci\"]",
            "run in each lane, again when its inputs change (e.g. to install dependencies)",
        ),
    }
}

fn writable(detection: &Detection) -> String {
    let mut caches: Vec<String> = Vec::new();
    let projects = detection.primary().into_iter().chain(detection.others());
    for cache in projects.flat_map(|project| project.caches) {
        if !caches.iter().any(|have| have == cache) {
            caches.push((*cache).to_string());
        }
    }
    if caches.is_empty() {
        return "# writable = [\"~/.cache/your-tool\"]".to_string();
    }
    // Enabled: setup, checks and verify download into these caches, and confined they could
    // not (an install's first run would fail with EACCES). breeze creates a missing one.
    format!("writable = {}", toml_argv(&caches))
}

/// The hosts the detected projects' installs download from: roles and the project's
/// commands reach nothing else (`sandbox.network`).
fn network(detection: &Detection) -> String {
    let mut hosts: Vec<String> = Vec::new();
    let projects = detection.primary().into_iter().chain(detection.others());
    for host in projects.flat_map(|project| project.registries) {
        if !hosts.iter().any(|have| have == host) {
            hosts.push((*host).to_string());
        }
    }
    if hosts.is_empty() {
        return "network = []                   # e.g. [\"registry.npmjs.org\"]".to_string();
    }
    format!("network = {}", toml_argv(&hosts))
}

/// Where approved work lands: locally, with the remote modes offered (commented out) when
/// the repository has a remote.
fn land_to(remote: Option<&str>, main_branch: &str) -> String {
    let Some(remote) = remote else {
        return line(
            "# to = \"local\"",
            "approved work lands on your local main; \"remote\" or \"pull-request\" land on a remote (docs/LANDING.md)",
        );
    };
    let remote_string = toml_string(remote);
    [
        "#".to_string(),
        format!("# Where approved work lands (docs/LANDING.md). This repository has a remote, {remote}:"),
        format!("# each approved task can go to {remote}'s {main_branch} (merged onto its fetched tip, verified,"),
        "# pushed with a lease — never over someone else's push) instead of your local main:".to_string(),
        "# to = \"remote\"".to_string(),
        format!("# remote = {remote_string}"),
        "# or become a pull request of its own (GitHub's gh here; GitLab: [\"glab\", \"mr\", \"create\", ...]):".to_string(),
        "# to = \"pull-request\"".to_string(),
        format!("# remote = {remote_string}"),
        format!("# pr_command = {}", toml_argv(&breeze_engine::Config::defaults().land.pr_command)),
    ]
    .join("\n")
}

/// The starter `breeze.toml` for what was detected, in a repository whose main is
/// `main_branch` and whose remote (`origin`, else the first) is `remote`.
pub fn render(detection: &Detection, remote: Option<&str>, main_branch: &str) -> String {
    let values = [
        ("{{detected}}", detected(detection)),
        ("{{checks}}", checks(detection)),
        ("{{verify}}", verify(detection)),
        ("{{setup}}", setup(detection)),
        ("{{writable}}", writable(detection)),
        ("{{network}}", network(detection)),
        ("{{land_to}}", land_to(remote, main_branch)),
    ];
    // One pass: a value is never searched for placeholders.
    let mut out = String::with_capacity(TEMPLATE.len() + 1024);
    let mut rest = TEMPLATE;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        match values.iter().find(|(name, _)| rest.starts_with(name)) {
            Some((name, value)) => {
                out.push_str(value);
                rest = &rest[name.len()..];
            }
            None => {
                out.push_str("{{");
                rest = &rest[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(name: &'static str, test: Option<&[&str]>, install: Option<&[&str]>) -> Project {
        let argv = |words: &[&str]| words.iter().map(|w| (*w).to_string()).collect();
        Project {
            name,
            why: format!("{name} files"),
            test: test.map(argv),
            install: install.map(argv),
            caches: &["~/.cache/x"],
            registries: &["registry.example.com"],
        }
    }

    fn load(text: &str) -> breeze_engine::Config {
        assert!(!text.contains("{{"), "a placeholder is left:\n{text}");
        breeze_engine::Config::parse(text, "breeze.toml")
            .unwrap_or_else(|err| panic!("{err}\n{text}"))
    }

    #[test]
    fn a_repository_with_a_remote_is_offered_the_remote_landing_modes() {
        let text = render(&Detection::default(), Some("upstream"), "trunk");
        assert!(text.contains("This repository has a remote, upstream:"), "{text}");
        assert!(text.contains("# to = \"remote\"\n# remote = \"upstream\""), "{text}");
        assert!(text.contains("upstream's trunk"), "{text}");
        // Uncommented, each block is a valid configuration.
        for mode in ["remote", "pull-request"] {
            let lines: Vec<&str> = text.lines().collect();
            let first = lines.iter().position(|l| *l == format!("# to = \"{mode}\"")).unwrap();
            let block = lines[first..]
                .iter()
                .take_while(|l| {
                    ["# to = ", "# remote = ", "# pr_command = "].iter().any(|k| l.starts_with(k))
                })
                .count();
            let chosen: Vec<&str> = lines
                .iter()
                .enumerate()
                .map(|(i, l)| if (first..first + block).contains(&i) { &l[2..] } else { l })
                .collect();
            let config = load(&chosen.join("\n"));
            assert_eq!(config.land.to.as_str(), mode);
            assert_eq!(config.land.remote, "upstream");
        }
        let local = render(&Detection::default(), None, "main");
        assert!(local.contains("# to = \"local\""), "{local}");
        assert_eq!(load(&local).land.to, breeze_engine::config::LandTo::Local);
    }

    #[test]
    fn the_test_command_goes_into_checks_and_verify() {
        let detection = Detection {
            projects: vec![
                project("Rust (cargo)", Some(&["cargo", "test"]), None),
                project("Node (npm)", Some(&["npm", "test"]), Some(&["npm", "ci"])),
                project("Make", None, None),
            ],
        };
        let text = render(&detection, None, "main");
        let config = load(&text);
        assert_eq!(config.verify, ["cargo", "test"]);
        assert_eq!(config.review_checks, [["cargo", "test"]]);
        assert!(config.worktree_setup.is_empty());
        assert!(text.contains("#   Rust (cargo): Rust (cargo) files → cargo test\n"), "{text}");
        assert!(text.contains("# verify = [\"sh\", \"-c\", \"npm ci && npm test\"]"), "{text}");
        assert!(text.contains("#   Make: Make files\n"), "{text}");
    }

    #[test]
    fn a_project_that_installs_first_gets_setup_and_an_installing_verify() {
        let detection = Detection {
            projects: vec![project(
                "Node (pnpm)",
                Some(&["pnpm", "test"]),
                Some(&["pnpm", "install", "--frozen-lockfile"]),
            )],
        };
        let config = load(&render(&detection, None, "main"));
        assert_eq!(config.review_checks, [["pnpm", "test"]]);
        assert_eq!(config.verify, ["sh", "-c", "pnpm install --frozen-lockfile && pnpm test"]);
        assert_eq!(config.worktree_setup, ["pnpm", "install", "--frozen-lockfile"]);
        // Its cache is writable to setup, checks and verify, not merely suggested; its
        // registry reachable.
        assert_eq!(config.sandbox_writable, ["~/.cache/x"]);
        assert_eq!(
            config.network,
            breeze_engine::config::NetworkPolicy::AllowList(vec![
                breeze_supervise::HostRule::parse("registry.example.com").unwrap()
            ])
        );
    }

    #[test]
    fn without_a_test_command_verify_is_empty_with_a_hint() {
        for detection in
            [Detection::default(), Detection { projects: vec![project("Make", None, None)] }]
        {
            let text = render(&detection, None, "main");
            let config = load(&text);
            assert!(config.verify.is_empty() && config.review_checks.is_empty());
            assert!(text.contains("verify = []"), "{text}");
            assert!(text.contains("set yours in [review] checks and [land] verify"), "{text}");
        }
    }

    #[test]
    fn the_starter_keeps_the_defaults_it_does_not_set() {
        let config = load(&render(&Detection::default(), None, "main"));
        let defaults = breeze_engine::Config::defaults();
        assert_eq!(config.worker, defaults.worker);
        assert_eq!(config.reviewer, defaults.reviewer);
        assert_eq!(config.sandbox_mode, defaults.sandbox_mode);
        assert_eq!(config.max_workers, 3);
        assert!(!config.require_approval && config.notify_command.is_empty());
        let text = render(&Detection::default(), None, "main");
        for mention in ["require_approval", "breeze approve", "[notify]", "breeze-event.v1"] {
            assert!(text.contains(mention), "{mention}: {text}");
        }
    }

    #[test]
    fn the_commented_budget_and_independence_load_once_uncommented() {
        let text = render(&Detection { projects: Vec::new() }, None, "main");
        let keys = ["[budget", "run_usd", "task_usd", "run_tokens", "\"my-model\"", "independent"];
        let uncommented: Vec<&str> = text
            .lines()
            .map(|line| match line.strip_prefix("# ") {
                Some(rest) if keys.iter().any(|key| rest.starts_with(key)) => rest,
                _ => line,
            })
            .collect();
        let config = load(&uncommented.join("\n"));
        let caps = config.budget.caps;
        assert_eq!(
            (caps.run_usd, caps.task_usd, caps.run_tokens),
            (Some(20.0), Some(5.0), Some(5_000_000))
        );
        assert_eq!(config.independent, breeze_engine::config::Independence::Require);
        assert!(config.budget.prices.contains_key("my-model"), "the user's price is added");
        assert!(config.budget.prices.contains_key("gpt-5"), "to breeze's own");
        // As written, with the examples commented out: no cap, and "warn".
        let config = load(&text);
        assert!(!config.budget.caps.any());
        assert_eq!(config.independent, breeze_engine::config::Independence::Warn);
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(toml_string("a \"b\" \\ \u{7}"), "\"a \\\"b\\\" \\\\ \\u0007\"");
        let argv = vec!["./x y".to_string(), "'q'".to_string()];
        let text = format!("[land]\nverify = {}\n", toml_argv(&argv));
        assert_eq!(breeze_engine::Config::parse(&text, "t").unwrap().verify, argv);
    }
}
