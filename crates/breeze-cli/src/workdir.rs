//! The directory breeze works in: the process's current directory, where `-C DIR` moved it
//! before any command ran. Commands look for the repository from here.

/// The directory breeze works in, absolute so messages name it plainly.
pub(crate) fn here() -> std::path::PathBuf {
    std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."))
}
