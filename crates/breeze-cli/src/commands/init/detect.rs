//! What kind of project a repository is, from the files at its root: the test command
//! `breeze init` writes into `land.verify` and `[review] checks`.
//!
//! | marker | project | test command |
//! |---|---|---|
//! | `Makefile` with a `test` target | Make | `make test` |
//! | `Cargo.toml` (with `[workspace]`) | Rust | `cargo test` (`cargo test --workspace`) |
//! | `go.mod` | Go | `go test ./...` |
//! | `uv.lock` | Python, uv | `uv run pytest` |
//! | `poetry.lock`, or `[tool.poetry]` in `pyproject.toml` | Python, poetry | `poetry run pytest` |
//! | `pyproject.toml`, `requirements*.txt`, `setup.py` | Python, pip | `python -m pytest` |
//! | `package.json` with a `test` script | Node; the lockfile picks npm, pnpm, yarn or bun | `npm test`, `pnpm test`, `yarn test`, `bun run test` |
//!
//! Several can match (a Rust crate with a Makefile, a Go service with a web front end):
//! the first in this order is used, the others are mentioned. A `test` target in a Makefile
//! comes first because it is the project's own word on how its tests run.

use std::path::Path;

/// A project found at the repository root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// What it is, for people: `Rust (cargo)`, `Node (pnpm)`.
    pub name: &'static str,
    /// Why: the files that said so.
    pub why: String,
    /// Its test command (argv), or `None` when the project has none (a `package.json`
    /// without a `test` script, a Makefile without a `test` target).
    pub test: Option<Vec<String>>,
    /// What installs its dependencies in a fresh checkout (`worktree.setup`), when the test
    /// command needs it and does not do it itself.
    pub install: Option<Vec<String>>,
    /// Folders outside the worktree the project's build writes (download caches), for the
    /// `sandbox.writable` suggestion.
    pub caches: &'static [&'static str],
    /// The hosts its installs download from, for the `sandbox.network` allow-list.
    pub registries: &'static [&'static str],
}

impl Project {
    /// The test command as one shell-like line.
    pub fn test_line(&self) -> Option<String> {
        self.test.as_ref().map(|argv| argv.join(" "))
    }
}

/// Everything found, the project whose test command breeze uses first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Detection {
    /// In priority order.
    pub projects: Vec<Project>,
}

impl Detection {
    /// The project whose test command is used: the first that has one.
    pub fn primary(&self) -> Option<&Project> {
        self.projects.iter().find(|project| project.test.is_some())
    }

    /// The others (with or without a test command), for comments.
    pub fn others(&self) -> impl Iterator<Item = &Project> {
        let primary = self.primary();
        self.projects.iter().filter(move |project| Some(*project) != primary)
    }
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| (*word).to_string()).collect()
}

/// Looks at the files at `root`.
pub fn detect(root: &Path) -> Detection {
    detect_in(&RootFiles::read(root))
}

/// Detection over what is known of the root's files: a pure function, for tests.
pub fn detect_in(files: &RootFiles) -> Detection {
    let mut projects = Vec::new();
    projects.extend(make(files));
    projects.extend(cargo(files));
    projects.extend(go(files));
    projects.extend(python(files));
    projects.extend(node(files));
    Detection { projects }
}

/// The files detection reads the text of; of the others only the name matters.
const READ: [&str; 6] =
    ["Cargo.toml", "pyproject.toml", "package.json", "GNUmakefile", "makefile", "Makefile"];

/// The names of the files at a repository root, and the texts of those in [`READ`].
#[derive(Debug, Clone, Default)]
pub struct RootFiles {
    names: Vec<String>,
    texts: std::collections::BTreeMap<String, String>,
}

impl RootFiles {
    /// What is at `root` (files only, not folders; texts: at most 1 MiB each).
    pub fn read(root: &Path) -> RootFiles {
        use std::io::Read as _;
        let names: Vec<String> = std::fs::read_dir(root)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|entry| entry.file_type().is_ok_and(|kind| !kind.is_dir()))
                    .filter_map(|entry| entry.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        let mut texts = std::collections::BTreeMap::new();
        for name in READ.into_iter().filter(|name| names.iter().any(|have| have == name)) {
            let Ok(file) = std::fs::File::open(root.join(name)) else { continue };
            let mut text = String::new();
            if file.take(1 << 20).read_to_string(&mut text).is_ok() {
                texts.insert(name.to_string(), text);
            }
        }
        RootFiles::new(names, texts)
    }

    /// Files given by name and text.
    #[cfg(test)]
    pub fn from_list(files: &[(&str, &str)]) -> RootFiles {
        RootFiles::new(
            files.iter().map(|(name, _)| (*name).to_string()).collect(),
            files.iter().map(|(name, text)| ((*name).to_string(), (*text).to_string())).collect(),
        )
    }

    fn new(mut names: Vec<String>, texts: std::collections::BTreeMap<String, String>) -> RootFiles {
        names.sort();
        RootFiles { names, texts }
    }

    fn has(&self, name: &str) -> bool {
        self.names.iter().any(|have| have == name)
    }

    /// The text of a root file, if it is one detection reads.
    fn text(&self, name: &str) -> Option<String> {
        self.texts.get(name).cloned()
    }
}

/// TOML table headers of a file (`[workspace]`, `[tool.poetry]`), without parsing it.
fn has_table(text: &str, table: &str) -> bool {
    text.lines().map(str::trim).any(|line| {
        line.strip_prefix('[')
            .and_then(|rest| rest.split(']').next())
            .map(str::trim)
            .is_some_and(|name| name == table || name.starts_with(&format!("{table}.")))
    })
}

fn make(files: &RootFiles) -> Option<Project> {
    let name = ["GNUmakefile", "makefile", "Makefile"].into_iter().find(|name| files.has(name))?;
    let text = files.text(name).unwrap_or_default();
    let has_test = makefile_targets(&text).any(|target| target == "test");
    Some(Project {
        name: "Make",
        why: if has_test {
            format!("{name} with a `test` target")
        } else {
            format!("{name} without a `test` target")
        },
        test: has_test.then(|| argv(&["make", "test"])),
        install: None,
        caches: &[],
        registries: &[],
    })
}

/// The targets a Makefile defines (`test:`, `test check:`), not special ones (`.PHONY`)
/// nor variable assignments (`A := b`).
fn makefile_targets(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter(|line| !line.starts_with(['\t', ' ', '#']))
        .filter_map(|line| {
            let colon = line.find(':')?;
            let after = &line[colon + 1..];
            if after.starts_with('=') || line[..colon].contains('=') {
                return None;
            }
            Some(&line[..colon])
        })
        .flat_map(str::split_whitespace)
        .filter(|target| !target.starts_with('.'))
}

fn cargo(files: &RootFiles) -> Option<Project> {
    let text = files.text("Cargo.toml")?;
    let workspace = has_table(&text, "workspace");
    Some(Project {
        name: "Rust (cargo)",
        why: if workspace {
            "Cargo.toml with a [workspace] table".into()
        } else {
            "Cargo.toml".into()
        },
        // `--no-fail-fast`: every test binary runs, so a test a task breaks is not hidden
        // behind one that fails on main already (which stops cargo at its binary).
        test: Some(if workspace {
            argv(&["cargo", "test", "--workspace", "--no-fail-fast"])
        } else {
            argv(&["cargo", "test", "--no-fail-fast"])
        }),
        install: None,
        caches: &["~/.cargo/registry", "~/.cargo/git"],
        registries: &["index.crates.io", "static.crates.io", "crates.io", "github.com"],
    })
}

fn go(files: &RootFiles) -> Option<Project> {
    files.has("go.mod").then(|| Project {
        name: "Go",
        why: "go.mod".into(),
        test: Some(argv(&["go", "test", "./..."])),
        install: None,
        caches: &["~/go/pkg/mod", "~/.cache/go-build"],
        registries: &["proxy.golang.org", "sum.golang.org"],
    })
}

fn python(files: &RootFiles) -> Option<Project> {
    let pyproject = files.text("pyproject.toml");
    if files.has("uv.lock") {
        return Some(Project {
            name: "Python (uv)",
            why: "uv.lock".into(),
            // `uv run` installs the locked environment itself, in each checkout.
            test: Some(argv(&["uv", "run", "pytest"])),
            install: None,
            caches: &["~/.cache/uv"],
            registries: &["pypi.org", "files.pythonhosted.org"],
        });
    }
    let poetry_table = pyproject.as_deref().is_some_and(|text| has_table(text, "tool.poetry"));
    if files.has("poetry.lock") || poetry_table {
        return Some(Project {
            name: "Python (poetry)",
            why: if files.has("poetry.lock") {
                "poetry.lock".into()
            } else {
                "pyproject.toml with a [tool.poetry] table".into()
            },
            test: Some(argv(&["poetry", "run", "pytest"])),
            // Poetry keeps one environment per checkout path: a new worktree has none.
            install: Some(argv(&["poetry", "install"])),
            caches: &["~/.cache/pypoetry"],
            registries: &["pypi.org", "files.pythonhosted.org"],
        });
    }
    let requirements: Vec<&String> = files
        .names
        .iter()
        .filter(|name| name.starts_with("requirements") && name.ends_with(".txt"))
        .collect();
    let markers: Vec<String> = ["pyproject.toml", "setup.py", "setup.cfg"]
        .into_iter()
        .filter(|name| files.has(name))
        .map(String::from)
        .chain(requirements.into_iter().cloned())
        .collect();
    if markers.is_empty() {
        return None;
    }
    Some(Project {
        name: "Python (pip)",
        why: markers.join(", "),
        test: Some(argv(&["python", "-m", "pytest"])),
        install: None,
        caches: &["~/.cache/pip"],
        registries: &["pypi.org", "files.pythonhosted.org"],
    })
}

/// npm's placeholder script, which fails on purpose: not a test command.
const NPM_PLACEHOLDER: &str = "no test specified";

fn node(files: &RootFiles) -> Option<Project> {
    let text = files.text("package.json")?;
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let script = manifest["scripts"]["test"].as_str().filter(|s| !s.contains(NPM_PLACEHOLDER));
    // The lockfile decides; without one, the `packageManager` field; else npm.
    let declared = manifest["packageManager"].as_str().unwrap_or("");
    let by_lockfile = [
        ("pnpm-lock.yaml", "pnpm"),
        ("yarn.lock", "yarn"),
        ("bun.lock", "bun"),
        ("bun.lockb", "bun"),
        ("package-lock.json", "npm"),
    ]
    .into_iter()
    .find(|(lockfile, _)| files.has(lockfile));
    let (manager, because) = match by_lockfile {
        Some((lockfile, manager)) => (manager, format!("package.json and {lockfile}")),
        None => match ["pnpm", "yarn", "bun", "npm"]
            .into_iter()
            .find(|manager| declared.starts_with(&format!("{manager}@")))
        {
            Some(manager) => (manager, format!("package.json with packageManager {declared}")),
            None => ("npm", "package.json without a lockfile".to_string()),
        },
    };
    let (name, test, install): (&str, &[&str], &[&str]) = match manager {
        "pnpm" => ("Node (pnpm)", &["pnpm", "test"], &["pnpm", "install", "--frozen-lockfile"]),
        "yarn" => ("Node (yarn)", &["yarn", "test"], &["yarn", "install"]),
        "bun" => ("Node (bun)", &["bun", "run", "test"], &["bun", "install"]),
        _ if files.has("package-lock.json") => ("Node (npm)", &["npm", "test"], &["npm", "ci"]),
        _ => ("Node (npm)", &["npm", "test"], &["npm", "install"]),
    };
    let caches: &'static [&'static str] = match manager {
        "pnpm" => &["~/.local/share/pnpm", "~/.cache/pnpm"],
        "yarn" => &["~/.cache/yarn"],
        "bun" => &["~/.bun/install/cache"],
        _ => &["~/.npm"],
    };
    Some(Project {
        name,
        why: if script.is_some() {
            format!("{because}, a `test` script")
        } else {
            format!("{because}, no `test` script")
        },
        test: script.is_some().then(|| argv(test)),
        install: Some(argv(install)),
        caches,
        registries: match manager {
            "yarn" => &["registry.yarnpkg.com", "registry.npmjs.org"],
            _ => &["registry.npmjs.org"],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files by name and text.
    type Files<'a> = &'a [(&'a str, &'a str)];

    fn detect_files(files: &[(&str, &str)]) -> Detection {
        detect_in(&RootFiles::from_list(files))
    }

    #[test]
    fn the_files_are_read_from_the_root_and_folders_are_not_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("go.mod"), "module x\n").unwrap();
        std::fs::write(dir.path().join("Makefile"), "test:\n\tgo test ./...\n").unwrap();
        std::fs::create_dir(dir.path().join("Cargo.toml")).unwrap();
        let detection = detect(dir.path());
        let names: Vec<&str> = detection.projects.iter().map(|p| p.name).collect();
        assert_eq!(names, ["Make", "Go"]);
        assert_eq!(detection.primary().and_then(Project::test_line).as_deref(), Some("make test"));
    }

    fn primary_test(files: &[(&str, &str)]) -> Option<String> {
        detect_files(files).primary().and_then(Project::test_line)
    }

    #[test]
    fn each_kind_of_project_has_its_test_command() {
        let cases: &[(Files<'_>, Option<&str>)] = &[
            (&[("Cargo.toml", "[package]\nname = \"x\"\n")], Some("cargo test --no-fail-fast")),
            (
                &[("Cargo.toml", "[workspace]\nmembers = [\"a\"]\n")],
                Some("cargo test --workspace --no-fail-fast"),
            ),
            (
                &[("Cargo.toml", "[package]\nname = \"x\"\n[workspace.dependencies]\n")],
                Some("cargo test --workspace --no-fail-fast"),
            ),
            (&[("go.mod", "module x\n")], Some("go test ./...")),
            (&[("pyproject.toml", ""), ("uv.lock", "")], Some("uv run pytest")),
            (&[("pyproject.toml", "[tool.poetry]\nname = \"x\"\n")], Some("poetry run pytest")),
            (&[("poetry.lock", "")], Some("poetry run pytest")),
            (&[("requirements-dev.txt", "pytest\n")], Some("python -m pytest")),
            (&[("setup.py", "")], Some("python -m pytest")),
            (&[("Makefile", "all:\n\techo\ntest: all\n\t./t.sh\n")], Some("make test")),
            (&[("Makefile", "build:\n\tcc x.c\n.PHONY: test\nTEST := test: x\n")], None),
            (&[("package.json", r#"{"scripts":{"test":"jest"}}"#)], Some("npm test")),
            (
                &[("package.json", r#"{"scripts":{"test":"jest"}}"#), ("pnpm-lock.yaml", "")],
                Some("pnpm test"),
            ),
            (
                &[("package.json", r#"{"scripts":{"test":"jest"}}"#), ("yarn.lock", "")],
                Some("yarn test"),
            ),
            (
                &[("package.json", r#"{"scripts":{"test":"jest"},"packageManager":"pnpm@9.1.0"}"#)],
                Some("pnpm test"),
            ),
            (
                &[(
                    "package.json",
                    r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
                )],
                None,
            ),
            (
                &[("package.json", r#"{"scripts":{"test":"jest"}}"#), ("bun.lockb", "")],
                Some("bun run test"),
            ),
            (
                &[("package.json", r#"{"scripts":{"test":"jest"}}"#), ("package-lock.json", "{}")],
                Some("npm test"),
            ),
            (&[("package.json", r#"{"scripts":{"build":"tsc"}}"#), ("yarn.lock", "")], None),
            (
                &[("Cargo.toml", "[package]\n"), ("Makefile", "build:\n\tcargo build\n")],
                Some("cargo test --no-fail-fast"),
            ),
            (&[("package.json", "not json")], None),
            (&[("README.md", "")], None),
        ];
        for (files, expected) in cases {
            assert_eq!(primary_test(files).as_deref(), *expected, "{files:?}");
        }
    }

    #[test]
    fn make_comes_first_and_the_others_are_kept_for_comments() {
        let detection = detect_files(&[
            ("Cargo.toml", "[package]\n"),
            ("Makefile", "test:\n\tcargo test --all-features\n"),
            ("package.json", "{}"),
        ]);
        assert_eq!(detection.primary().unwrap().name, "Make");
        let others: Vec<&str> = detection.others().map(|p| p.name).collect();
        assert_eq!(others, ["Rust (cargo)", "Node (npm)"]);
        // A Makefile without a test target does not hide the language's command.
        let detection = detect_files(&[("go.mod", ""), ("Makefile", "build:\n\tgo build\n")]);
        assert_eq!(detection.primary().unwrap().name, "Go");
        assert_eq!(detection.others().next().unwrap().why, "Makefile without a `test` target");
    }
}
