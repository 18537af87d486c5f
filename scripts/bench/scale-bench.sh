#!/usr/bin/env bash
# Whether a task costs the same in a plan of 3,000 as in a plan of 300 (issue 37): one
# `breeze run` per plan size, the built-in scripted roles on three lanes, one file per task,
# tasks independent, on a repository of as many files as tasks. Prints per size the wall
# time, the time per task, the peak RSS (`/usr/bin/time -v`) and the time each hundred
# landings took across the run (from the journal's `landed` events).
#
#   scripts/bench/scale-bench.sh [SIZES...]        (default: 300 1000 3000 10000)
#
# REPO_FILES=n gives every plan size a repository of n files (default: as many files as
# tasks): what a landing costs grows with the repository (each index write hashes the
# whole index), so a fixed size measures the plan's own share.
# BREEZE=path uses that binary (default: release, in CARGO_TARGET_DIR). BENCH_DIR keeps
# the work folder. PERF=1 records a CPU profile of each run (`perf record -g`, or the
# options in PERF_ARGS, e.g. "-F 99 --call-graph dwarf") into BENCH_DIR/perf-N.data and
# prints its top symbols.
set -euo pipefail
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(300 1000 3000 10000)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
breeze=${BREEZE:-${CARGO_TARGET_DIR:-$root/target}/release/breeze}
work=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/scale-bench.XXXXXX")}
mkdir -p "$work"
cleanup() { [ -n "${BENCH_DIR:-}" ] || rm -rf "$work"; }
trap cleanup EXIT

printf '%-7s %9s %12s %10s %14s  %s\n' tasks "wall (s)" "per task ms" "RSS (MB)" "RSS/task (KB)" "per hundred landings (s)"
for n in "${sizes[@]}"; do
  repo="$work/repo-$n"
  rm -rf "$repo"
  "$here/git-gen-repo.sh" "$repo" "${REPO_FILES:-$n}" >/dev/null
  cat > "$repo/breeze.toml" <<'CONFIG'
[run]
max_workers = 3
[roles.worker]
backend = "scripted"
[roles.reviewer]
backend = "scripted"
[roles.advisor]
backend = "scripted"
CONFIG
  printf 'breeze.toml\nplan.toml\n' >> "$repo/.git/info/exclude"
  git -C "$repo" ls-files | awk -v n="$n" 'NR > n { next } {
    printf "[[task]]\nid = \"%d\"\ntitle = \"task %d\"\ndod = \"one line added\"\nwrites = [\"%s\"]\n\n", NR, NR, $0
  }' > "$repo/plan.toml"
  profile=()
  # shellcheck disable=SC2206 # PERF_ARGS is a list of perf options
  [ "${PERF:-0}" = 1 ] && profile=(perf record ${PERF_ARGS:--g} -o "$work/perf-$n.data" --)
  t0=$(date +%s.%N)
  (cd "$repo" && /usr/bin/time -v -o "$work/time-$n.txt" "${profile[@]}" "$breeze" run plan.toml --skip-setup-check >/dev/null 2>"$work/stderr-$n.txt")
  t1=$(date +%s.%N)
  rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time-$n.txt")
  run_dir=$(ls -td "$repo"/.breeze/runs/*/ | head -1)
  python3 - "$run_dir/events.jsonl" "$n" "$t0" "$t1" "$rss" <<'PY'
import json, sys
from datetime import datetime
path, n, t0, t1, rss = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
def t(at):
    return datetime.strptime(at, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
start, landed = None, []
for line in open(path):
    e = json.loads(line)
    kind = e["event"]["kind"]
    if kind == "run_started" and start is None:
        start = t(e["at"])
    elif kind == "task_state" and e["event"]["state"] == "landed":
        landed.append(t(e["at"]))
assert len(landed) == n, f"{len(landed)} of {n} tasks landed"
marks = [start] + landed[99::100]
hundreds = [b - a for a, b in zip(marks, marks[1:])]
wall = t1 - t0
shown = hundreds if len(hundreds) <= 12 else hundreds[:4] + ["…"] + hundreds[len(hundreds) // 2 - 1:len(hundreds) // 2 + 1] + ["…"] + hundreds[-4:]
text = " ".join(h if isinstance(h, str) else f"{h:.2f}" for h in shown)
print(f"{n:<7} {wall:9.1f} {1000 * wall / n:12.1f} {rss / 1024:10.1f} {rss / n:14.1f}  {text}")
PY
  # The lanes and checkouts go with the round: the next round of this size makes its
  # repository again at the same path.
  (cd "$repo" && "$breeze" clean --force >/dev/null 2>&1) || echo "scale-bench: breeze clean failed in $repo" >&2
  if [ "${PERF:-0}" = 1 ]; then
    perf report -i "$work/perf-$n.data" --no-children --sort symbol --stdio 2>/dev/null | grep -v '^#' | grep '%' | head -25
  fi
done
