//! `breeze-fake-role` — a **test-only** scriptable role process.
//!
//! It misbehaves on demand so the supervisor and the engine can be tested against real
//! processes: stalling, ignoring SIGTERM, leaking a grandchild that holds stdout, flooding
//! output, writing files outside a write set, printing malformed JSON. It is not part of
//! breeze's user-facing tooling.
//!
//! Usage: `breeze-fake-role ACTION...` — actions run in order, then the process exits 0.
//! Each action is one argument, `name` or `name=value`:
//!
//! | action | effect |
//! |---|---|
//! | `print=TEXT` / `eprint=TEXT` | TEXT and a newline to stdout / stderr |
//! | `print-pretty=JSON` | JSON re-printed pretty (over several lines) to stdout |
//! | `print-malformed` | a truncated JSON object (no closing quote or brace) to stdout |
//! | `output=JSON` | JSON written to the file named by `$BREEZE_OUTPUT` |
//! | `write=PATH=TEXT` | TEXT written to PATH (relative to the cwd; parents created) |
//! | `touch-every=MS:COUNT:PATH` | rewrite PATH every MS milliseconds, COUNT times, silently |
//! | `tick-every=MS:COUNT` | print `tick N` every MS milliseconds, COUNT times |
//! | `sleep=MS` | sleep MS milliseconds |
//! | `stall` | sleep forever, silently |
//! | `ignore-term` | block SIGTERM from now on (only SIGKILL ends the process) |
//! | `grandchild=MS` | start a copy of itself that prints `grandchild-pid=PID`, keeps stdout and stderr open and sleeps MS ms |
//! | `grandchild-quiet=MS` | the same with its output on /dev/null (alive in the group, holding no pipe) |
//! | `flood=N` | N bytes to stdout in 64-byte lines (`x`×63 + newline; the last line may be short) |
//! | `flood-line=N` | N bytes of `y` to stdout with no newline at all |
//! | `stdin-info` | print `stdin=TARGET` (what fd 0 points to, e.g. `/dev/null` or `pipe:[..]`) |
//! | `count-stdin` | read stdin to EOF, print `stdin-bytes=N` |
//! | `cat-stdin` | copy stdin to stdout |
//! | `env=NAME` | print `NAME=VALUE` or `NAME is unset` |
//! | `env-all` | print every environment variable as `NAME=VALUE`, sorted |
//! | `pid` | print `pid=PID pgid=PGID` (as the process sees them: in a PID namespace of its own, that namespace's pid and pgid 0) |
//! | `exit=CODE` | exit at once with CODE |
//! | `raise=SIGNAL` | send itself a signal by number (e.g. `raise=9`) |
//!
//! An unknown action prints a message to stderr and exits with code 2.

use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::thread::sleep;
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal, raise};

fn main() -> ExitCode {
    let actions: Vec<String> = std::env::args().skip(1).collect();
    for action in &actions {
        let (name, value) = action.split_once('=').unwrap_or((action.as_str(), ""));
        match run(name, value) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Exit(code)) => return ExitCode::from(code),
            Err(message) => {
                eprintln!("breeze-fake-role: {action}: {message}");
                return ExitCode::from(2);
            }
        }
        // Output must reach the supervisor as soon as each action is done.
        if io::stdout().flush().is_err() {
            return ExitCode::from(3);
        }
    }
    ExitCode::SUCCESS
}

enum Flow {
    Continue,
    Exit(u8),
}

/// Runs one action. Each arm is one line; the longer actions are named steps below.
fn run(name: &str, value: &str) -> Result<Flow, String> {
    let mut out = io::stdout().lock();
    match name {
        "print" => writeln!(out, "{value}").map_err(err)?,
        "eprint" => eprintln!("{value}"),
        "print-pretty" => print_pretty(&mut out, value)?,
        "print-malformed" => {
            writeln!(out, "{{\"status\": \"completed\", \"summary\": \"cut off in the mid")
                .map_err(err)?;
        }
        "output" => write_output(value)?,
        "write" => {
            let (path, text) = value.split_once('=').ok_or("expected write=PATH=TEXT")?;
            write_file(Path::new(path), text)?;
        }
        "touch-every" => touch_every(value)?,
        "tick-every" => tick_every(&mut out, value)?,
        "sleep" => sleep(Duration::from_millis(number(Some(value))?)),
        "stall" => stall(),
        "ignore-term" => ignore_term()?,
        "grandchild" => start_grandchild(&mut out, value, Pipes::Inherited)?,
        "grandchild-quiet" => start_grandchild(&mut out, value, Pipes::DevNull)?,
        "flood" => {
            let mut line = [b'x'; 64];
            line[63] = b'\n';
            write_repeated(&mut out, &line.repeat(1024), number(Some(value))?)?;
        }
        "flood-line" => write_repeated(&mut out, &[b'y'; 64 * 1024], number(Some(value))?)?,
        "stdin-info" => {
            let target = std::fs::read_link("/proc/self/fd/0").map_err(err)?;
            writeln!(out, "stdin={}", target.display()).map_err(err)?;
        }
        "count-stdin" => {
            let mut data = Vec::new();
            io::stdin().read_to_end(&mut data).map_err(err)?;
            writeln!(out, "stdin-bytes={}", data.len()).map_err(err)?;
        }
        "cat-stdin" => {
            io::copy(&mut io::stdin(), &mut out).map_err(err)?;
        }
        "env" => print_env(&mut out, value)?,
        "env-all" => print_env_all(&mut out)?,
        "pid" => {
            let pgid = nix::unistd::getpgrp();
            writeln!(out, "pid={} pgid={pgid}", std::process::id()).map_err(err)?;
        }
        "exit" => {
            let code: u8 = value.parse().map_err(|_| format!("not an exit code: {value:?}"))?;
            return Ok(Flow::Exit(code));
        }
        "raise" => raise_signal(&mut out, value)?,
        _ => return Err("unknown action (see the table at the top of breeze-fake-role.rs)".into()),
    }
    Ok(Flow::Continue)
}

fn print_pretty(out: &mut impl Write, value: &str) -> Result<(), String> {
    let json: serde_json::Value = serde_json::from_str(value).map_err(err)?;
    writeln!(out, "{}", serde_json::to_string_pretty(&json).map_err(err)?).map_err(err)
}

fn write_output(value: &str) -> Result<(), String> {
    let path = std::env::var("BREEZE_OUTPUT").map_err(|_| "BREEZE_OUTPUT is not set")?;
    std::fs::write(&path, value).map_err(|e| format!("{path}: {e}"))
}

/// Activity without output: rewrites a file periodically, printing nothing.
fn touch_every(value: &str) -> Result<(), String> {
    let mut parts = value.splitn(3, ':');
    let (ms, count, path) = (number(parts.next())?, number(parts.next())?, parts.next());
    let path = Path::new(path.ok_or("expected touch-every=MS:COUNT:PATH")?);
    for i in 0..count {
        write_file(path, &format!("touch {i}\n"))?;
        sleep(Duration::from_millis(ms));
    }
    Ok(())
}

fn tick_every(out: &mut impl Write, value: &str) -> Result<(), String> {
    let mut parts = value.splitn(2, ':');
    let (ms, count) = (number(parts.next())?, number(parts.next())?);
    for i in 0..count {
        writeln!(out, "tick {i}").map_err(err)?;
        out.flush().map_err(err)?;
        sleep(Duration::from_millis(ms));
    }
    Ok(())
}

fn stall() -> ! {
    loop {
        sleep(Duration::from_secs(3600));
    }
}

fn ignore_term() -> Result<(), String> {
    // Blocked, SIGTERM stays pending forever. This process is single-threaded, so
    // blocking it on this thread blocks it for the process.
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    set.thread_block().map_err(err)
}

/// Where a grandchild's stdout and stderr go.
#[derive(PartialEq, Eq)]
enum Pipes {
    /// Ours: the supervisor's pipes stay open while the grandchild lives.
    Inherited,
    /// `/dev/null`: alive in the group, holding no pipe.
    DevNull,
}

fn start_grandchild(out: &mut impl Write, value: &str, pipes: Pipes) -> Result<(), String> {
    let ms = number(Some(value))?;
    let me = std::env::current_exe().map_err(err)?;
    let mut command = Command::new(me);
    command.args(["pid", &format!("sleep={ms}")]).stdin(Stdio::null());
    if pipes == Pipes::DevNull {
        command.stdout(Stdio::null()).stderr(Stdio::null());
    }
    let mut grandchild = command.spawn().map_err(err)?;
    writeln!(out, "grandchild-pid={}", grandchild.id()).map_err(err)?;
    // Not waited for: it outlives us on purpose. Dropping the handle does not kill it.
    let _ = grandchild.try_wait();
    Ok(())
}

/// Writes `total` bytes of `block` repeated from its start (the last copy may be short).
fn write_repeated(out: &mut impl Write, block: &[u8], total: u64) -> Result<(), String> {
    let mut left = total as usize;
    while left > 0 {
        let n = left.min(block.len());
        out.write_all(&block[..n]).map_err(err)?;
        left -= n;
    }
    Ok(())
}

fn print_env(out: &mut impl Write, name: &str) -> Result<(), String> {
    match std::env::var(name) {
        Ok(v) => writeln!(out, "{name}={v}").map_err(err),
        Err(_) => writeln!(out, "{name} is unset").map_err(err),
    }
}

fn print_env_all(out: &mut impl Write) -> Result<(), String> {
    let mut vars: Vec<(String, String)> = std::env::vars().collect();
    vars.sort();
    for (k, v) in vars {
        writeln!(out, "{k}={v}").map_err(err)?;
    }
    Ok(())
}

fn raise_signal(out: &mut impl Write, value: &str) -> Result<(), String> {
    let number: i32 = value.parse().map_err(|_| format!("not a signal: {value:?}"))?;
    let signal = Signal::try_from(number).map_err(err)?;
    // What was printed before must not die with the process.
    out.flush().map_err(err)?;
    raise(signal).map_err(err)
}

fn number(text: Option<&str>) -> Result<u64, String> {
    let text = text.unwrap_or_default();
    text.parse().map_err(|_| format!("not a number: {text:?}"))
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}
