//! What a confined process may read, as Landlock can say it: an allow-list of paths that
//! together cover everything but a few hidden folders (a person's home and what else holds
//! their secrets), with chosen paths inside those readable again.

use std::path::{Path, PathBuf};

/// The paths whose read rules, together, make everything on the machine readable except
/// what is beneath `hidden` — of which only `allowed` (and what is beneath those) stays
/// readable. Landlock has no "deny": a hidden folder's ancestors are replaced by their
/// other entries, one level at a time, so the list grows with the entries along the way
/// (a few hundred for a home in `/home` or `/root`). Entries made after the list (a new
/// file in `/tmp`) are not readable; symbolic links are followed only where they do not
/// lead into a hidden folder. Paths that do not exist are left out.
pub fn readable_except(hidden: &[PathBuf], allowed: &[PathBuf]) -> Vec<PathBuf> {
    let hidden: Vec<PathBuf> = hidden.iter().filter_map(|path| path.canonicalize().ok()).collect();
    let mut readable = Vec::new();
    cover(Path::new("/"), &hidden, &mut readable);
    for path in allowed {
        let Ok(path) = path.canonicalize() else { continue };
        let inside_hidden = hidden.iter().any(|h| path.starts_with(h));
        let covered = readable.iter().any(|r: &PathBuf| path.starts_with(r));
        if inside_hidden && !covered {
            readable.push(path);
        }
    }
    readable
}

/// Adds rules covering `path` but what is hidden beneath it.
fn cover(path: &Path, hidden: &[PathBuf], readable: &mut Vec<PathBuf>) {
    if hidden.iter().any(|h| h == path) {
        return;
    }
    if !hidden.iter().any(|h| h.starts_with(path)) {
        if leads_into(path, hidden) {
            return;
        }
        readable.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else { return };
    let mut children: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
    children.sort();
    for child in children {
        cover(&child, hidden, readable);
    }
}

/// Whether `path` is a symbolic link into (or above) a hidden folder.
fn leads_into(path: &Path, hidden: &[PathBuf]) -> bool {
    let is_link = path.symlink_metadata().is_ok_and(|meta| meta.file_type().is_symlink());
    if !is_link {
        return false;
    }
    match path.canonicalize() {
        Ok(target) => hidden.iter().any(|h| target.starts_with(h) || h.starts_with(&target)),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_folder_is_left_out_and_its_allowed_paths_put_back() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let home = root.join("home");
        for dir in ["home/.ssh", "home/.cargo", "home/src/other", "sibling"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::os::unix::fs::symlink(home.join(".ssh"), root.join("link-to-keys")).unwrap();
        let readable = readable_except(std::slice::from_ref(&home), &[home.join(".cargo")]);
        assert!(readable.contains(&root.join("sibling")));
        assert!(readable.contains(&home.join(".cargo")));
        assert!(
            !readable
                .iter()
                .any(|p| p.starts_with(home.join(".ssh")) || home.join(".ssh").starts_with(p))
        );
        assert!(!readable.contains(&root.join("link-to-keys")), "a link into the hidden folder");
        assert!(!readable.contains(&PathBuf::from("/")));
        assert!(readable.contains(&PathBuf::from("/usr")));
    }
}
