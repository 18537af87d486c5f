#!/usr/bin/env python3
"""Summarizes an `strace -f -qq -Y -e trace=<fs calls>,execve,clone,clone3,vfork -o FILE` trace
of `breeze run` by who made each call:

  breeze      the breeze process itself (all its threads)
  breeze-git  `git` commands breeze runs (`git worktree add` of a new lane, filters)
  roles       the role processes (shell workers and reviewers) and everything they start
  other       the benchmark's own shell around it

    strace-summary.py TRACE TASKS [BREEZE_BINARY_NAME]

Prints one line per group and file-system call, and per task for the breeze process.
"""
import re
import sys
from collections import Counter, defaultdict

trace, tasks = sys.argv[1], int(sys.argv[2])
binary = sys.argv[3] if len(sys.argv) > 3 else "breeze"
FS = {"newfstatat", "statx", "lstat", "stat", "fstat", "getdents64", "openat", "readlinkat",
      "access", "faccessat", "faccessat2"}
STATS = {"newfstatat", "statx", "lstat", "stat", "fstat"}
line_re = re.compile(r"^(\d+)<([^>]*)> (?:<\.\.\. )?([a-z_0-9]+)[( ]")
clone_re = re.compile(r"^(\d+)<[^>]*> (?:<\.\.\. )?(?:clone3?|vfork|fork)\b.*= (\d+)")
exec_re = re.compile(r'^(\d+)<[^>]*> execve\("([^"]*)", \[([^\]]*)\]')

parent = {}
exe = {}
counts = defaultdict(Counter)  # pid -> Counter(syscall)
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
        m = line_re.match(line)
        if m and m.group(3) in FS and "resumed>" not in line:
            counts[int(m.group(1))][m.group(3)] += 1

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
for pid, c in counts.items():
    totals[classify(pid)].update(c)

for g in ("breeze", "breeze-git", "roles", "other"):
    c = totals.get(g, Counter())
    stats = sum(v for k, v in c.items() if k in STATS)
    detail = ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1]))
    print(f"{g:11s} stat calls {stats:8d}  getdents64 {c['getdents64']:6d}  openat {c['openat']:7d}   ({detail})")
c = totals.get("breeze", Counter())
stats = sum(v for k, v in c.items() if k in STATS)
print(f"breeze per task ({tasks} tasks): {stats / tasks:.0f} stat calls, {c['getdents64'] / tasks:.0f} getdents64, {c['openat'] / tasks:.0f} openat")
