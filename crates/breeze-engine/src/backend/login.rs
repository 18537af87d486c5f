//! Whether an agent CLI is logged in, as its description tells it: from files and
//! variables only — no network, no run of the CLI.

use std::path::Path;

/// What the files say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    /// Logged in: how.
    Yes(String),
    /// Certainly not: what was looked for.
    No(String),
    /// Cannot be told cheaply: why.
    Unknown(String),
}

/// What a login check looks at.
#[derive(Debug, Clone, Copy)]
pub struct LoginQuestion<'a> {
    /// The environment the role will get.
    pub role_env: &'a [(String, String)],
    /// The person's own state folder of the CLI, which every role's home is filled from.
    pub state_dir: &'a Path,
    /// The person's account file beside it, where the CLI has one.
    pub account: Option<&'a Path>,
    /// The role's CLI arguments (`roles.<role>.args`).
    pub args: &'a [String],
}

impl LoginQuestion<'_> {
    /// The value of `name` the role gets, unless it is empty.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.role_env
            .iter()
            .find(|(key, value)| key == name && !value.is_empty())
            .map(|(_, value)| value.as_str())
    }
}

/// Whether the file at `path` (at most 1 MiB read) contains `needle`.
pub(super) fn file_mentions(path: &Path, needle: &str) -> bool {
    use std::io::Read as _;
    let Ok(file) = std::fs::File::open(path) else { return false };
    let mut text = String::new();
    file.take(1 << 20).read_to_string(&mut text).is_ok() && text.contains(needle)
}
