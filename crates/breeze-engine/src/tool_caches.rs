//! What the tools a lane runs share with other lanes and the person — their caches and
//! build folders — made safe to share.
//!
//! - **Caches** are shared: a download is made once for every lane. What a tool needs
//!   writable to use its cache safely is granted with it: cargo keeps its package-cache
//!   locks (`.package-cache`, `.package-cache-mutate`) beside `registry/` and `git/`, in
//!   `$CARGO_HOME` itself; without them two lanes unpack the same crate at once ("failed to
//!   unpack package … .cargo-ok … File exists"). npm's, pip's, uv's and go's caches lock or
//!   write atomically inside the folder granted.
//! - **Build folders** are not shared: two lanes building different trees into one
//!   `CARGO_TARGET_DIR` overwrite each other's artifacts (and a folder outside the checkout
//!   is not writable to a confined command). A variable pointing a tool's output elsewhere
//!   is dropped from the environment of breeze's processes, so each checkout builds in its
//!   own `target/`; the run start says so.
//! - **A cache variable** (`PIP_CACHE_DIR`, `UV_CACHE_DIR`, `npm_config_cache`, `GOMODCACHE`,
//!   …) naming a folder that confined commands may not write is said by the preflight
//!   (a warning: a project that downloads nothing still runs), with the `sandbox.writable`
//!   line that fixes it.

use std::path::{Path, PathBuf};

/// Variables that point a tool's build output somewhere: dropped for breeze's processes.
pub const OUTPUT_DIR_VARS: [&str; 2] = ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"];

/// Variables naming a tool's cache: the folder under it the tool writes (`""`: the folder
/// itself), and the files at a checkout's root that say the project uses the tool.
pub const CACHE_DIR_VARS: [(&str, &str, &[&str]); 9] = [
    ("CARGO_HOME", "registry", &["Cargo.toml"]),
    ("PIP_CACHE_DIR", "", PYTHON),
    ("UV_CACHE_DIR", "", PYTHON),
    ("npm_config_cache", "", &["package.json"]),
    ("NPM_CONFIG_CACHE", "", &["package.json"]),
    ("YARN_CACHE_FOLDER", "", &["package.json"]),
    ("GOMODCACHE", "", &["go.mod"]),
    ("GOCACHE", "", &["go.mod"]),
    ("GOPATH", "pkg/mod", &["go.mod"]),
];

/// The files that say a project is Python's.
const PYTHON: &[&str] = &["pyproject.toml", "setup.py", "setup.cfg", "requirements.txt"];

/// cargo's package-cache locks, kept in `$CARGO_HOME` beside `registry/` and `git/`.
const CARGO_LOCK_FILES: [&str; 2] = [".package-cache", ".package-cache-mutate"];

/// The single files a tool needs writable besides the folders of `writable` (the
/// `sandbox.writable` folders): cargo's package-cache locks in the `$CARGO_HOME` whose
/// `registry` or `git` folder is granted.
pub fn lock_files(writable: &[PathBuf]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    for folder in writable {
        let cargo_home = match folder.file_name().and_then(|name| name.to_str()) {
            Some("registry" | "git") => folder.parent(),
            _ => None,
        };
        let Some(home) = cargo_home.filter(|home| looks_like_cargo_home(home)) else { continue };
        for name in CARGO_LOCK_FILES {
            let file = home.join(name);
            if !files.contains(&file) {
                files.push(file);
            }
        }
    }
    files
}

/// A `$CARGO_HOME`: named `.cargo`, or holding cargo's own files.
fn looks_like_cargo_home(dir: &Path) -> bool {
    dir.file_name().is_some_and(|name| name == ".cargo")
        || ["config.toml", "bin", ".package-cache", ".crates.toml"]
            .iter()
            .any(|entry| dir.join(entry).exists())
}

/// The lock files of [`lock_files`] that exist or could be made (a rule needs an existing
/// file): created empty where missing, as cargo itself would.
pub fn existing_lock_files(writable: &[PathBuf]) -> Vec<PathBuf> {
    lock_files(writable)
        .into_iter()
        .filter(|file| {
            if file.is_file() {
                return true;
            }
            std::fs::OpenOptions::new().append(true).create(true).open(file).is_ok()
        })
        .collect()
}

/// `env` without the variables of [`OUTPUT_DIR_VARS`]; the names dropped.
pub fn without_output_dirs(env: &mut Vec<(String, String)>) -> Vec<String> {
    let dropped: Vec<String> = env
        .iter()
        .filter(|(name, _)| OUTPUT_DIR_VARS.contains(&name.as_str()))
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    env.retain(|(name, _)| !OUTPUT_DIR_VARS.contains(&name.as_str()));
    dropped
}

/// A cache variable of `env` whose folder confined commands may not write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnwritableCache {
    /// The variable.
    pub name: &'static str,
    /// The folder the tool would write.
    pub folder: PathBuf,
}

/// The cache variables of `env`, of the tools the project at `checkout` uses, naming a
/// folder outside `checkout` that none of `writable` covers (what a confined command may
/// write beyond its checkout).
pub fn unwritable_caches(
    env: &[(String, String)],
    checkout: &Path,
    writable: &[PathBuf],
) -> Vec<UnwritableCache> {
    CACHE_DIR_VARS
        .iter()
        .filter(|(_, _, markers)| markers.iter().any(|file| checkout.join(file).is_file()))
        .filter_map(|(name, under, _)| {
            let (_, value) = env.iter().find(|(key, value)| key == name && !value.is_empty())?;
            let folder = Path::new(value).join(under);
            let covered = folder.starts_with(checkout)
                || writable.iter().any(|granted| folder.starts_with(granted));
            (folder.is_absolute() && !covered).then_some(UnwritableCache { name, folder })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_granted_cargo_registry_brings_its_package_cache_locks() {
        let home = tempfile::tempdir().unwrap();
        let cargo = home.path().join(".cargo");
        let granted = vec![cargo.join("registry"), cargo.join("git"), home.path().join(".npm")];
        assert_eq!(
            lock_files(&granted),
            [cargo.join(".package-cache"), cargo.join(".package-cache-mutate")]
        );
        // A folder merely named `registry` elsewhere brings nothing.
        assert!(lock_files(&[home.path().join("data/registry")]).is_empty());
        // Missing lock files are made, so that a rule can name them.
        std::fs::create_dir_all(&cargo).unwrap();
        assert_eq!(existing_lock_files(&granted).len(), 2);
        assert!(cargo.join(".package-cache").is_file());
    }

    #[test]
    fn output_folders_are_dropped_and_caches_outside_what_is_writable_are_named() {
        let mut env = vec![
            ("CARGO_TARGET_DIR".to_string(), "/shared/target".to_string()),
            ("PATH".to_string(), "/bin".to_string()),
            ("PIP_CACHE_DIR".to_string(), "/var/cache/pip".to_string()),
            ("GOMODCACHE".to_string(), "/home/u/repo/.gomod".to_string()),
            ("CARGO_HOME".to_string(), "/home/u/.cargo".to_string()),
        ];
        assert_eq!(without_output_dirs(&mut env), ["CARGO_TARGET_DIR=/shared/target"]);
        assert_eq!(env.len(), 4);
        let writable = vec![PathBuf::from("/home/u/.cargo/registry")];
        let repo = tempfile::tempdir().unwrap();
        // Only the caches of the tools the project uses are looked at.
        assert!(unwritable_caches(&env, repo.path(), &writable).is_empty());
        std::fs::write(repo.path().join("pyproject.toml"), "").unwrap();
        std::fs::write(repo.path().join("Cargo.toml"), "").unwrap();
        let found = unwritable_caches(&env, repo.path(), &writable);
        assert_eq!(
            found,
            [UnwritableCache { name: "PIP_CACHE_DIR", folder: "/var/cache/pip".into() }]
        );
    }
}
