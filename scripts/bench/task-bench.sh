#!/usr/bin/env bash
# The engine's own time per task, beyond its roles' time: TASKS one-file tasks run one after
# another (one lane) on a FILES-file repository, then each task's way through the engine is
# read from the run's journal (millisecond timestamps) and split into steps:
#
#   dispatch  the previous task's landing (or the run's start) → this task starts (negative
#             when it starts while the one before is still landing: the landing queue)
#   lane      task started → its lane moved to it (worktree_created; setup when it runs)
#   work      lane ready → the attempt is recorded (worker call, commit of its files)
#   review    attempt → verdict (gates, checks, reviewer)
#   land      verdict → landed (merge in memory, verify, main moved, checkout updated)
#
# Roles' time (process_started → process_ended of shell roles) is taken out of work and
# review; the scripted roles run in process and take no measurable time. Prints the mean
# and median per step and the engine's total per task.
#
#   scripts/bench/task-bench.sh [FILES] [TASKS]        (default: 20000 files, 20 tasks)
#
# ROLES=scripted (default) or ROLES=shell (a shell worker and a shell reviewer, as in
# overhead-bench.sh). BREEZE=path uses that binary (default: release, in CARGO_TARGET_DIR).
# RUNS=n runs the same plan size n times on the same repository (lanes kept between runs);
# the first run creates the lane, later ones reuse it. BENCH_DIR keeps the work folder.
set -euo pipefail
files=${1:-20000}
tasks=${2:-20}
runs=${RUNS:-2}
roles=${ROLES:-scripted}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
breeze=${BREEZE:-${CARGO_TARGET_DIR:-$root/target}/release/breeze}
work=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/task-bench.XXXXXX")}
mkdir -p "$work"
# The lanes live outside the work folder (breeze's worktree root): `breeze clean` removes
# them with the repository.
cleanup() {
  [ -n "${BENCH_DIR:-}" ] && return
  [ -d "$work/repo/.git" ] && "$breeze" clean -C "$work/repo" --force >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

repo="$work/repo"
rm -rf "$repo"
"$here/git-gen-repo.sh" "$repo" "$files" >/dev/null

# The file task N edits: line (N * 997 mod FILES) + 1 of `git ls-files`, on both sides.
cat > "$work/worker.sh" <<WORKER
cat > /dev/null
path=\$(git ls-files | sed -n "\$(( BREEZE_TASK_ID * 997 % $files + 1 ))p")
printf 'task %s was here\\n' "\$BREEZE_TASK_ID" >> "\$path"
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"edited %s"}' "\$path" > "\$BREEZE_OUTPUT"
WORKER
cat > "$work/reviewer.sh" <<'REVIEWER'
cat > /dev/null
printf '{"schema_version":"review-result.v1","verdict":"APPROVE","checks":[],"gaps":[]}' > "$BREEZE_OUTPUT"
REVIEWER
if [ "$roles" = shell ]; then
  roles_config="[roles.worker]
backend = \"command\"
command = [\"sh\", \"$work/worker.sh\"]
[roles.reviewer]
backend = \"command\"
command = [\"sh\", \"$work/reviewer.sh\"]"
else
  roles_config='[roles.worker]
backend = "scripted"
[roles.reviewer]
backend = "scripted"'
fi
cat > "$repo/breeze.toml" <<CONFIG
[run]
max_workers = 1
$roles_config
[roles.advisor]
backend = "scripted"
CONFIG
printf 'breeze.toml\nplan-*.toml\n' >> "$repo/.git/info/exclude"

git -C "$repo" ls-files > "$work/files"
for run in $(seq 1 "$runs"); do
  plan="$repo/plan-$run.toml"
  : > "$plan"
  for i in $(seq 1 "$tasks"); do
    id=$(( (run - 1) * tasks + i ))
    path=$(sed -n "$(( id * 997 % files + 1 ))p" "$work/files")
    printf '[[task]]\nid = "%s"\ntitle = "task %s"\ndod = "one line added"\nwrites = ["%s"]\n\n' "$id" "$id" "$path" >> "$plan"
  done
  # What the runs before left for the disk (the first run's checkouts of every file, the
  # repository's creation) is written out first: each run is measured with its own writes.
  sync
  t0=$(date +%s.%N)
  (cd "$repo" && "$breeze" run "$plan" --skip-setup-check >/dev/null)
  t1=$(date +%s.%N)
  run_dir=$(ls -td "$repo"/.breeze/runs/*/ | head -1)
  echo "== run $run: $tasks tasks, $files files, $roles roles: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s wall =="
  python3 - "$run_dir/events.jsonl" <<'PY'
import json, sys, statistics
from datetime import datetime

def t(at):
    return datetime.strptime(at, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()

events = [json.loads(line) for line in open(sys.argv[1])]
steps = {"dispatch": [], "lane": [], "work": [], "review": [], "land": []}
engine = []
roles_busy = {}
open_procs = {}
mark = None
# By task: the next task starts while the one before is landing (the landing queue), so
# each task's marks are kept apart; `mark` is the previous landing (or the run's start).
seen = {}
for e in events:
    kind, at = e["event"]["kind"], t(e["at"])
    ev = e["event"]
    task = ev.get("task")
    if kind == "run_started":
        mark = at
    elif kind == "task_started":
        seen[task] = {"start": at}
        roles_busy[task] = {"work": 0.0, "review": 0.0}
    elif kind == "process_started":
        open_procs[ev["pid"]] = (at, ev["role"])
    elif kind == "process_ended" and ev["pid"] in open_procs:
        started, role = open_procs.pop(ev["pid"])
        roles_busy[ev["task"]]["work" if role == "worker" else "review"] += at - started
    elif kind == "worktree_created" and "lane" not in seen.get(task, {"lane": 0}):
        seen[task]["lane"] = at
    elif kind == "attempt" and "work" not in seen.get(task, {"work": 0}):
        seen[task]["work"] = at
    elif kind == "reviewed" and task in seen:
        seen[task]["review"] = at
    elif kind == "landed" and task in seen:
        marks = seen[task]
        busy = roles_busy.get(task, {"work": 0.0, "review": 0.0})
        # Negative when the task started before the one before it had landed.
        dispatch = marks["start"] - mark
        lane = marks["lane"] - marks["start"]
        work = marks["work"] - marks["lane"] - busy["work"]
        review = marks["review"] - marks["work"] - busy["review"]
        land = at - marks["review"]
        for name, value in (("dispatch", dispatch), ("lane", lane), ("work", work), ("review", review), ("land", land)):
            steps[name].append(value)
        # Landing to landing, less the roles' time: the steps above add up to it.
        engine.append(dispatch + lane + work + review + land)
        mark = at
ms = lambda xs: f"mean {1000 * statistics.mean(xs):7.1f} ms, median {1000 * statistics.median(xs):7.1f} ms"
for name, xs in steps.items():
    if xs:
        print(f"  {name:9} {ms(xs)}")
print(f"  engine    {ms(engine)} per task ({len(engine)} tasks landed)")
PY
done
