//! Where the project keeps its code and its tests, read from what is there, for the example
//! rows of the starter `Plans.md` (`templates/Plans.md`: `{{first}}` a source file, `{{test}}`
//! a test file) — so that the template speaks the project's language — and what its build
//! writes that git should ignore.
//!
//! | project | source file | test file |
//! |---|---|---|
//! | Node | `lib/` or `src/` (else the folder of `main`, else `lib/`; `src/` with TypeScript), `.js` or `.ts` as the files there are (else `.ts` with TypeScript) | `test/`, `tests/` or `__tests__/` (else `test/`), `first.test.js` (`.ts` as the tests there are) |
//! | Python | `src/<pkg>/`, else `<pkg>/` (the folder with an `__init__.py`, or the project's name) | `tests/test_first.py` |
//! | Go | the root package when `*.go` files are at the root, else `internal/first/` (or `pkg/first/`) | `first_test.go` beside it |
//! | Rust | `src/first.rs` of the package (the first workspace member without a root package) | `tests/first.rs` |
//! | anything else | `src/` | `tests/` |

use std::path::Path;

use super::detect::Detection;

/// The example rows' paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// A source file (or folder) the first task writes.
    pub first: String,
    /// Its test.
    pub test: String,
}

/// The project's language, by the first project detection found that has one.
fn language(detection: &Detection) -> Option<&'static str> {
    let primary = detection.primary().into_iter();
    primary.chain(detection.others()).find_map(|project| {
        ["Node", "Python", "Go", "Rust"].into_iter().find(|lang| project.name.starts_with(lang))
    })
}

/// The layout of the project at `root`.
pub fn layout(root: &Path, detection: &Detection) -> Layout {
    match language(detection) {
        Some("Node") => node(root),
        Some("Python") => python(root),
        Some("Go") => go(root),
        Some("Rust") => rust(root),
        _ => Layout { first: "src/".into(), test: "tests/".into() },
    }
}

/// What git should ignore in this project: what its install or build writes into every lane.
pub fn ignored_outputs(detection: &Detection) -> Vec<&'static str> {
    match language(detection) {
        Some("Node") => vec!["node_modules/"],
        Some("Python") => vec!["__pycache__/", ".venv/"],
        Some("Rust") => vec!["target/"],
        _ => Vec::new(),
    }
}

fn is_dir(root: &Path, name: &str) -> bool {
    root.join(name).is_dir()
}

fn read(root: &Path, name: &str) -> String {
    std::fs::read_to_string(root.join(name)).unwrap_or_default()
}

fn node(root: &Path) -> Layout {
    let manifest: serde_json::Value =
        serde_json::from_str(&read(root, "package.json")).unwrap_or_default();
    let typescript = root.join("tsconfig.json").is_file()
        || !manifest["devDependencies"]["typescript"].is_null()
        || !manifest["dependencies"]["typescript"].is_null();
    let main_dir = manifest["main"]
        .as_str()
        .map(|main| main.trim_start_matches("./"))
        .and_then(|main| main.rsplit_once('/').map(|(dir, _)| dir.to_string()))
        .filter(|dir| !dir.is_empty() && !dir.starts_with("dist") && !dir.starts_with("build"));
    let source = if is_dir(root, "lib") {
        "lib".to_string()
    } else if is_dir(root, "src") {
        "src".to_string()
    } else if let Some(dir) = main_dir {
        dir
    } else if typescript {
        "src".to_string()
    } else {
        "lib".to_string()
    };
    let tests =
        ["test", "tests", "__tests__"].into_iter().find(|dir| is_dir(root, dir)).unwrap_or("test");
    // The language the files are written in: a JavaScript project may well have
    // TypeScript among its tools (typings, type tests: commander.js).
    let hinted = if typescript { "ts" } else { "js" };
    let ext = script_language(&root.join(&source)).unwrap_or(hinted);
    let test_ext = script_language(&root.join(tests)).unwrap_or(ext);
    Layout {
        first: format!("{source}/first.{ext}"),
        test: format!("{tests}/first.test.{test_ext}"),
    }
}

/// Most files of a folder looked at for its language.
const LANGUAGE_SAMPLE: usize = 500;

/// `ts` or `js`: what most script files under `dir` are (`.ts`/`.tsx`/`.mts`, type
/// declarations `.d.ts` and type tests `.test-d.ts` left out, against `.js`/`.jsx`/`.mjs`/
/// `.cjs`), two levels deep; `None` without any.
fn script_language(dir: &Path) -> Option<&'static str> {
    let (mut ts, mut js, mut seen) = (0usize, 0usize, 0usize);
    let mut folders = vec![(dir.to_path_buf(), 0)];
    while let Some((folder, depth)) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > LANGUAGE_SAMPLE {
                break;
            }
            let name = entry.file_name().to_string_lossy().to_lowercase();
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                if depth < 2 && name != "node_modules" {
                    folders.push((entry.path(), depth + 1));
                }
                continue;
            }
            if name.ends_with(".d.ts") || name.contains(".test-d.") {
                continue;
            }
            match name.rsplit_once('.').map(|(_, ext)| ext) {
                Some("ts" | "tsx" | "mts" | "cts") => ts += 1,
                Some("js" | "jsx" | "mjs" | "cjs") => js += 1,
                _ => {}
            }
        }
    }
    match ts.cmp(&js) {
        std::cmp::Ordering::Greater => Some("ts"),
        std::cmp::Ordering::Less => Some("js"),
        std::cmp::Ordering::Equal => None,
    }
}

/// `[project] name = "my-pkg"` (or poetry's) as an importable name: `my_pkg`.
fn python_name(pyproject: &str) -> Option<String> {
    let mut table = "";
    for line in pyproject.lines().map(str::trim) {
        if line.starts_with('[') {
            table = line;
            continue;
        }
        if (table == "[project]" || table == "[tool.poetry]")
            && let Some(value) = line.strip_prefix("name").map(str::trim_start)
            && let Some(value) = value.strip_prefix('=')
        {
            let name =
                value.trim().trim_matches(['"', '\'']).replace(['-', '.'], "_").to_lowercase();
            if !name.is_empty() {
                return Some(name);
            }
        }
    }
    None
}

/// Folders under `dir` (relative to `root`) holding an `__init__.py`, sorted.
fn packages_in(root: &Path, dir: &str) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(root.join(dir))
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.path().join("__init__.py").is_file())
                .filter_map(|entry| entry.file_name().into_string().ok())
                .filter(|name| !matches!(name.as_str(), "tests" | "test" | "docs"))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

fn python(root: &Path) -> Layout {
    let name = python_name(&read(root, "pyproject.toml"));
    let test = "tests/test_first.py".to_string();
    let package = match &name {
        Some(name) if is_dir(root, &format!("src/{name}")) => Some(format!("src/{name}")),
        Some(name) if is_dir(root, name) => Some(name.clone()),
        _ => None,
    };
    let package = package
        .or_else(|| packages_in(root, "src").first().map(|pkg| format!("src/{pkg}")))
        .or_else(|| packages_in(root, ".").first().cloned())
        .or_else(|| name.map(|name| format!("src/{name}")));
    match package {
        Some(package) => Layout { first: format!("{package}/first.py"), test },
        None => Layout { first: "first.py".into(), test },
    }
}

fn go(root: &Path) -> Layout {
    let root_package = std::fs::read_dir(root).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|entry| entry.file_name().to_str().is_some_and(|name| name.ends_with(".go")))
    });
    let dir = if root_package {
        String::new()
    } else if is_dir(root, "internal") {
        "internal/first/".into()
    } else if is_dir(root, "pkg") {
        "pkg/first/".into()
    } else {
        String::new()
    };
    Layout { first: format!("{dir}first.go"), test: format!("{dir}first_test.go") }
}

fn rust(root: &Path) -> Layout {
    let manifest = read(root, "Cargo.toml");
    let has_package = manifest.lines().any(|line| line.trim() == "[package]");
    let crate_dir = if has_package || is_dir(root, "src") {
        String::new()
    } else {
        first_member(root, &manifest).map(|dir| format!("{dir}/")).unwrap_or_default()
    };
    Layout { first: format!("{crate_dir}src/first.rs"), test: format!("{crate_dir}tests/first.rs") }
}

/// The first workspace member that exists: `members = ["crates/a", "tools/*"]`.
fn first_member(root: &Path, manifest: &str) -> Option<String> {
    let start = manifest.find("members")?;
    let list = &manifest[start..];
    let list = &list[list.find('[')? + 1..list.find(']')?];
    for member in list.split(',').map(|m| m.trim().trim_matches(['"', '\''])) {
        if let Some(parent) = member.strip_suffix("/*") {
            let mut dirs: Vec<String> = std::fs::read_dir(root.join(parent))
                .map(|entries| {
                    entries
                        .flatten()
                        .filter(|entry| entry.path().join("Cargo.toml").is_file())
                        .filter_map(|entry| entry.file_name().into_string().ok())
                        .collect()
                })
                .unwrap_or_default();
            dirs.sort();
            if let Some(first) = dirs.first() {
                return Some(format!("{parent}/{first}"));
            }
        } else if !member.is_empty() && is_dir(root, member) {
            return Some(member.to_string());
        }
    }
    None
}

/// The starter `Plans.md`: the template with the project's paths.
pub fn render_plan(template: &str, layout: &Layout) -> String {
    template.replace("{{first}}", &layout.first).replace("{{test}}", &layout.test)
}

#[cfg(test)]
mod tests {
    use super::super::detect::detect;
    use super::*;

    /// The layout of a folder holding `files` (a path ending in `/` is a folder).
    fn layout_of(files: &[(&str, &str)]) -> Layout {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            if path.to_string_lossy().ends_with('/') {
                std::fs::create_dir_all(&path).unwrap();
                continue;
            }
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        layout(dir.path(), &detect(dir.path()))
    }

    fn paths(layout: Layout) -> (String, String) {
        (layout.first, layout.test)
    }

    /// Files by path and text, and the paths expected.
    type Case<'a> = (&'a [(&'a str, &'a str)], (&'a str, &'a str));

    #[test]
    fn each_ecosystem_gets_its_own_paths() {
        let npm = r#"{"scripts":{"test":"node --test"}}"#;
        let cases: &[Case<'_>] = &[
            (&[("package.json", npm)], ("lib/first.js", "test/first.test.js")),
            (
                &[("package.json", npm), ("src/index.js", "")],
                ("src/first.js", "test/first.test.js"),
            ),
            (
                &[("package.json", npm), ("tsconfig.json", "{}"), ("__tests__/a.ts", "")],
                ("src/first.ts", "__tests__/first.test.ts"),
            ),
            (
                &[("package.json", r#"{"main":"server/index.js"}"#), ("tests/", "")],
                ("server/first.js", "tests/first.test.js"),
            ),
            // commander.js: JavaScript, with TypeScript for its typings and type tests.
            (
                &[
                    (
                        "package.json",
                        r#"{"main":"./index.js","devDependencies":{"typescript":"^5"}}"#,
                    ),
                    ("tsconfig.json", "{}"),
                    ("lib/command.js", ""),
                    ("lib/option.js", ""),
                    ("typings/index.d.ts", ""),
                    ("tests/command.test.js", ""),
                    ("tests/index.test-d.ts", ""),
                ],
                ("lib/first.js", "tests/first.test.js"),
            ),
            (
                &[("package.json", npm), ("src/app.ts", ""), ("test/app.test.ts", "")],
                ("src/first.ts", "test/first.test.ts"),
            ),
            (
                &[
                    ("pyproject.toml", "[project]\nname = \"my-tool\"\n"),
                    ("src/my_tool/__init__.py", ""),
                ],
                ("src/my_tool/first.py", "tests/test_first.py"),
            ),
            (
                &[
                    ("requirements.txt", "pytest\n"),
                    ("app/__init__.py", ""),
                    ("tests/__init__.py", ""),
                ],
                ("app/first.py", "tests/test_first.py"),
            ),
            (
                &[("pyproject.toml", "[project]\nname = \"fresh\"\n")],
                ("src/fresh/first.py", "tests/test_first.py"),
            ),
            (
                &[("go.mod", "module x\n"), ("main.go", "package main\n")],
                ("first.go", "first_test.go"),
            ),
            (
                &[("go.mod", "module x\n"), ("internal/", "")],
                ("internal/first/first.go", "internal/first/first_test.go"),
            ),
            (&[("Cargo.toml", "[package]\nname = \"x\"\n")], ("src/first.rs", "tests/first.rs")),
            (
                &[
                    ("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n"),
                    ("crates/core/Cargo.toml", ""),
                ],
                ("crates/core/src/first.rs", "crates/core/tests/first.rs"),
            ),
            (&[("README.md", "")], ("src/", "tests/")),
        ];
        for (files, (first, test)) in cases {
            assert_eq!(paths(layout_of(files)), (first.to_string(), test.to_string()), "{files:?}");
        }
    }

    #[test]
    fn the_plan_gets_the_paths_and_ignores_follow_the_language() {
        let layout = Layout { first: "lib/first.js".into(), test: "test/first.test.js".into() };
        let plan = render_plan(crate::commands::init::PLANS_TEMPLATE, &layout);
        assert!(plan.contains("| `lib/first.js` | - |"), "{plan}");
        assert!(plan.contains("`lib/first.js`, `test/first.test.js`"), "{plan}");
        assert!(!plan.contains("{{"), "{plan}");
        assert!(breeze_engine::preflight::template::template_marker(&plan).is_some());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("package.json"), "{}").unwrap();
        assert_eq!(ignored_outputs(&detect(dir.path())), ["node_modules/"]);
    }
}
