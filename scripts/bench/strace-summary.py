#!/usr/bin/env python3
"""Summarizes an `strace -f -qq -Y -e trace=<fs calls>,execve,clone,clone3,vfork -o FILE` trace
of `breeze run` by who made each call:

  breeze      the breeze process itself (all its threads)
  breeze-git  `git` commands breeze runs (`git worktree add` of a new lane, filters)
  roles       the role processes (shell workers and reviewers) and everything they start
  other       the benchmark's own shell around it

    strace-summary.py TRACE TASKS [BREEZE_BINARY_NAME [REPO_DIR]]

Prints one line per group and file-system call, and per task for the breeze process; with
REPO_DIR, breeze's stat calls are split into those on the repository (its checkouts, the
lanes and `.git`) and the rest (`/proc` scans for stray role processes, git configuration
in the home folder, the run's own files), found through the path or, for a call on a
descriptor, the path the same thread opened it with.
"""
import re
import sys
from collections import Counter, defaultdict

trace, tasks = sys.argv[1], int(sys.argv[2])
binary = sys.argv[3] if len(sys.argv) > 3 else "breeze"
repo_dir = sys.argv[4].rstrip("/") + "/" if len(sys.argv) > 4 else None
FS = {"newfstatat", "statx", "lstat", "stat", "fstat", "getdents64", "openat", "readlinkat",
      "access", "faccessat", "faccessat2", "inotify_add_watch"}
STATS = {"newfstatat", "statx", "lstat", "stat", "fstat"}
line_re = re.compile(r"^(\d+)<([^>]*)> (?:<\.\.\. )?([a-z_0-9]+)[( ]")
clone_re = re.compile(r"^(\d+)<[^>]*> (?:<\.\.\. )?(?:clone3?|vfork|fork)\b.*= (\d+)")
exec_re = re.compile(r'^(\d+)<[^>]*> execve\("([^"]*)", \[([^\]]*)\]')
open_re = re.compile(r'^(\d+)<[^>]*> openat\([^,]*, "([^"]*)".*= (\d+)')
path_arg = re.compile(r'^\d+<[^>]*> [a-z0-9]+\((?:AT_FDCWD|\d+(?:<([^>]*)>)?), "([^"]*)"')

parent = {}
exe = {}
counts = defaultdict(Counter)  # pid -> Counter(syscall)
where = defaultdict(Counter)  # pid -> Counter("repo"/"elsewhere") of stat calls
fds = {}  # (pid, fd) -> path, from openat in the same thread
pending_open = {}  # pid -> path of an unfinished openat
unfinished_open = re.compile(r'^(\d+)<[^>]*> openat\([^,]*, "([^"]*)".*<unfinished \.\.\.>')
resumed_open = re.compile(r'^(\d+)<[^>]*> <\.\.\. openat resumed>.*= (\d+)')
with open(trace, errors="replace") as f:
    for line in f:
        m = clone_re.match(line)
        if m:
            parent[int(m.group(2))] = int(m.group(1))
            continue
        m = exec_re.match(line)
        if m:
            exe[int(m.group(1))] = (m.group(2).rsplit("/", 1)[-1], m.group(3))
            continue
        m = open_re.match(line)
        if m:
            fds[(int(m.group(1)), m.group(3))] = m.group(2)
        m = unfinished_open.match(line)
        if m:
            pending_open[int(m.group(1))] = m.group(2)
        m = resumed_open.match(line)
        if m and int(m.group(1)) in pending_open:
            fds[(int(m.group(1)), m.group(2))] = pending_open.pop(int(m.group(1)))
        m = line_re.match(line)
        if m and m.group(3) in FS and "resumed>" not in line:
            pid = int(m.group(1))
            counts[pid][m.group(3)] += 1
            if repo_dir and m.group(3) in STATS:
                a = path_arg.match(line)
                path = None
                if a:
                    path = a.group(2)
                    fd = re.match(r'^\d+<[^>]*> [a-z0-9]+\((\d+)', line)
                    if fd and not path.startswith("/"):
                        # Relative to a descriptor (a listed folder, or the file itself).
                        base = a.group(1) or fds.get((pid, fd.group(1)))
                        path = None if base is None else (base + "/" + path if path else base)
                if path is None:
                    where[pid]["unresolved"] += 1
                else:
                    inside = (path + "/").startswith(repo_dir)
                    where[pid]["repo" if inside else "elsewhere"] += 1

def chain(pid):
    seen = []
    while pid is not None and pid not in seen:
        seen.append(pid)
        pid = parent.get(pid)
    return seen

breeze_pids = {p for p, (name, _) in exe.items() if name == binary}

# Threads share the process: a thread's "parent" is its creator thread, so `chain` reaches
# the breeze pid without passing an exec'd pid for threads, and through one for processes.
def classify(pid):
    path = chain(pid)
    execd = [p for p in path if p in exe]
    if not execd:
        return "other"
    first = execd[0]
    if first in breeze_pids:
        return "breeze"
    # the closest exec'd ancestor that is a direct exec'd child of breeze decides
    for i, p in enumerate(execd):
        if i + 1 < len(execd) and execd[i + 1] in breeze_pids:
            return "breeze-git" if exe[p][0] == "git" else "roles"
    return "other"

totals = defaultdict(Counter)
places = Counter()
for pid, c in counts.items():
    group = classify(pid)
    totals[group].update(c)
    if group == "breeze":
        places.update(where[pid])

for g in ("breeze", "breeze-git", "roles", "other"):
    c = totals.get(g, Counter())
    stats = sum(v for k, v in c.items() if k in STATS)
    detail = ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1]))
    print(f"{g:11s} stat calls {stats:8d}  getdents64 {c['getdents64']:6d}  openat {c['openat']:7d}   ({detail})")
c = totals.get("breeze", Counter())
stats = sum(v for k, v in c.items() if k in STATS)
line = f"breeze per task ({tasks} tasks): {stats / tasks:.0f} stat calls, {c['getdents64'] / tasks:.0f} getdents64, {c['openat'] / tasks:.0f} openat"
if repo_dir:
    line += (f"; stat calls on the repository {places['repo'] / tasks:.0f}, elsewhere "
             f"{places['elsewhere'] / tasks:.0f}, descriptor not resolved {places['unresolved'] / tasks:.0f}")
print(line)
