//! Real git remotes for tests: a bare repository on the local file system, the same served
//! over HTTP by git's own smart-HTTP backend (`git http-backend`, run as a CGI program by a
//! small server started here), and a second clone to play "someone else" — a teammate who
//! pushes, a merge queue that merges pull-request branches.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::git::{empty_home, git, git_line};

/// A bare repository in a temporary folder, every ref update logged (its reflog shows
/// whether anything was ever forced over).
pub struct BareRemote {
    _temp: tempfile::TempDir,
    /// The folder that holds the bare repository (and room for clones next to it).
    pub root: PathBuf,
    /// The bare repository (`<root>/remote.git`).
    pub path: PathBuf,
}

impl BareRemote {
    /// An empty bare repository whose default branch is `main`.
    pub fn new() -> BareRemote {
        let temp = tempfile::tempdir().expect("a temporary folder");
        let root = temp.path().to_path_buf();
        let path = root.join("remote.git");
        git(&root, &["init", "-q", "--bare", "-b", "main", path.to_str().unwrap()]);
        git(&path, &["config", "core.logAllRefUpdates", "always"]);
        BareRemote { _temp: temp, root, path }
    }

    /// Adds the remote to `repo` as `name` and pushes its `main` there.
    pub fn add_to(&self, repo: &Path, name: &str, url: &str) {
        git(repo, &["remote", "add", name, url]);
        git(repo, &["push", "-q", name, "main"]);
        git(repo, &["fetch", "-q", name]);
    }

    /// The tip of `branch` on the remote (`None`: no such branch).
    pub fn tip(&self, branch: &str) -> Option<String> {
        let output = crate::git::git_output(
            &self.path,
            &["rev-parse", "--verify", "-q", &format!("refs/heads/{branch}")],
        );
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    }

    /// A clone of the remote in `<root>/<name>` with a teammate's identity, on `main`.
    pub fn clone_as(&self, name: &str) -> PathBuf {
        let dir = self.root.join(name);
        git(&self.root, &["clone", "-q", self.path.to_str().unwrap(), name]);
        git(&dir, &["config", "user.name", "Teammate"]);
        git(&dir, &["config", "user.email", "teammate@example.com"]);
        dir
    }

    /// Every value `refs/heads/<branch>` ever had on the remote, oldest first, from its
    /// reflog: `(old, new)` pairs.
    pub fn ref_history(&self, branch: &str) -> Vec<(String, String)> {
        let log = self.path.join("logs/refs/heads").join(branch);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .filter_map(|line| {
                let mut fields = line.split(' ');
                Some((fields.next()?.to_string(), fields.next()?.to_string()))
            })
            .collect()
    }

    /// Whether every update of `branch` on the remote was a fast-forward: nothing anyone
    /// pushed was ever overwritten.
    pub fn only_fast_forwards(&self, branch: &str) -> bool {
        self.ref_history(branch).iter().all(|(old, new)| {
            old.chars().all(|c| c == '0')
                || crate::git::git_output(&self.path, &["merge-base", "--is-ancestor", old, new])
                    .status
                    .success()
        })
    }
}

impl Default for BareRemote {
    fn default() -> Self {
        BareRemote::new()
    }
}

/// Commits `files` in `clone` on its current branch and pushes it (a teammate's work).
pub fn push_work(clone: &Path, files: &[(&str, &str)], message: &str) -> String {
    git(clone, &["pull", "-q", "--ff-only"]);
    for (path, text) in files {
        crate::write(clone, path, text);
    }
    git(clone, &["add", "-A"]);
    git(clone, &["commit", "-q", "-m", message]);
    git(clone, &["push", "-q", "origin", "HEAD"]);
    git_line(clone, &["rev-parse", "HEAD"])
}

/// How a merge queue merges a pull-request branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeStyle {
    /// A merge commit (`git merge --no-ff`).
    Merge,
    /// One new commit with the branch's change (`git merge --squash`), its own message.
    Squash,
    /// The branch's commits replayed on main (`git rebase`), their messages kept.
    Rebase,
}

/// Merges `branch` of the remote into `main` in `clone` the way `style` says, and pushes.
pub fn merge_branch(clone: &Path, branch: &str, style: MergeStyle) -> String {
    git(clone, &["checkout", "-q", "main"]);
    git(clone, &["pull", "-q", "--ff-only", "origin", "main"]);
    git(clone, &["fetch", "-q", "origin", branch]);
    match style {
        MergeStyle::Merge => {
            let message = format!("Merge pull request from {branch}");
            git(clone, &["merge", "-q", "--no-ff", "-m", &message, "FETCH_HEAD"]);
        }
        MergeStyle::Squash => {
            git(clone, &["merge", "-q", "--squash", "FETCH_HEAD"]);
            // A forge's squash message: the pull request's title, no trailers.
            git(clone, &["commit", "-q", "-m", &format!("Squashed {branch}")]);
        }
        MergeStyle::Rebase => {
            git(clone, &["checkout", "-q", "-B", "replay", "FETCH_HEAD"]);
            git(clone, &["rebase", "-q", "main"]);
            git(clone, &["checkout", "-q", "main"]);
            git(clone, &["merge", "-q", "--ff-only", "replay"]);
            git(clone, &["branch", "-q", "-D", "replay"]);
        }
    }
    git(clone, &["push", "-q", "origin", "main"]);
    git_line(clone, &["rev-parse", "HEAD"])
}

/// git's smart-HTTP backend behind a small HTTP/1.1 server on a free local port, serving
/// every repository under `root`; pushing is allowed. Optionally it asks for a user and
/// password (HTTP basic authentication), as hosted remotes do. Stops when dropped.
pub struct HttpRemote {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpRemote {
    /// Serves the repositories under `root`; with `credentials` (`user:password`), only to
    /// a client that sends them.
    pub fn serve(root: &Path, credentials: Option<&str>) -> HttpRemote {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free local port");
        let port = listener.local_addr().expect("the port").port();
        let stop = Arc::new(AtomicBool::new(false));
        let (root, stop_flag) = (root.to_path_buf(), stop.clone());
        let expected = credentials.map(basic_auth);
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop_flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (root, expected) = (root.clone(), expected.clone());
                std::thread::spawn(move || {
                    let _ = serve_one(stream, &root, expected.as_deref());
                });
            }
        });
        HttpRemote { port, stop, thread: Some(thread) }
    }

    /// The URL of repository `name` (e.g. `remote.git`) under the served root.
    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for HttpRemote {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread up.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `Basic <base64(user:password)>`.
fn basic_auth(credentials: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = credentials.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n =
            chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    format!("Basic {out}")
}

/// Answers one request (the connection closes after it) by running `git http-backend`.
fn serve_one(stream: TcpStream, root: &Path, expected_auth: Option<&str>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or("GET"), parts.next().unwrap_or("/"));
    let mut headers: Vec<(String, String)> = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let mut stream = stream;
    if let Some(expected) = expected_auth
        && header("authorization").as_deref() != Some(expected)
    {
        let body = "authentication required\n";
        write!(
            stream,
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"test\"\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        return Ok(());
    }
    let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        read_chunked(&mut reader)?
    } else {
        let length: usize = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        body
    };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut command = Command::new("git");
    command
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", empty_home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REMOTE_USER", "tester")
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("REQUEST_METHOD", method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_LENGTH", body.len().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (name, variable) in [
        ("content-type", "CONTENT_TYPE"),
        ("content-encoding", "HTTP_CONTENT_ENCODING"),
        ("git-protocol", "GIT_PROTOCOL"),
    ] {
        if let Some(value) = header(name) {
            command.env(variable, value);
        }
    }
    let mut child = command.spawn()?;
    let mut stdin = child.stdin.take().expect("piped");
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let output = child.wait_with_output()?;
    let _ = feeder.join();
    let out = output.stdout;
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let (head, content) = match split {
        Some((i, skip)) => (String::from_utf8_lossy(&out[..i]).into_owned(), &out[i + skip..]),
        None => (String::new(), &out[..]),
    };
    let mut status = "200 OK".to_string();
    let mut response_headers = String::new();
    for line in head.lines() {
        let line = line.trim_end();
        match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("status") => {
                status = value.trim().to_string();
            }
            Some(_) => {
                response_headers.push_str(line);
                response_headers.push_str("\r\n");
            }
            None => {}
        }
    }
    write!(
        stream,
        "HTTP/1.1 {status}\r\n{response_headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        content.len()
    )?;
    stream.write_all(content)?;
    stream.flush()
}

/// A chunked request body, decoded.
fn read_chunked(reader: &mut impl std::io::BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line)?;
        let size = usize::from_str_radix(size_line.trim().split(';').next().unwrap_or("0"), 16)
            .unwrap_or(0);
        if size == 0 {
            // The trailer section ends with an empty line.
            let mut line = String::new();
            while reader.read_line(&mut line)? > 0 && !line.trim().is_empty() {
                line.clear();
            }
            return Ok(body);
        }
        let mut chunk = vec![0; size];
        reader.read_exact(&mut chunk)?;
        body.extend_from_slice(&chunk);
        let mut end = String::new();
        reader.read_line(&mut end)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_is_base64() {
        assert_eq!(basic_auth("tester:secret"), "Basic dGVzdGVyOnNlY3JldA==");
        assert_eq!(basic_auth("ab"), "Basic YWI=");
    }
}
