#!/usr/bin/env bash
# Overhead of a team run against the original harness's git-CLI procedure, side by side.
#
#   scripts/bench/overhead-bench.sh [FILES...]         (default: 20000 100000)
#
# For each size, generates a FILES-file repository (git-gen-repo.sh), then runs ROUNDS
# alternating rounds (default 3; odd rounds start with the git CLI, even ones with breeze)
# of the same TASKS one-file tasks (default 12):
#   - git CLI:  land-cli.sh (per task `git worktree add`, edit, commit, cherry-pick onto the
#               checked-out main, `git worktree remove`, `git branch -D`);
#   - breeze:   land-breeze-run.sh with ROLES=shell (the default here): `breeze run` with a
#               shell worker and a shell reviewer (process agents, as in every real run);
#               the time of the `breeze run` command alone, not of writing its plan.
#   - breeze, later runs: LATER_RUNS (default 1) more `breeze run`s of TASKS new one-file
#               tasks on the breeze side's repository right after its first run, reusing the
#               lanes that run kept (issue 24: lanes outlive a run);
#   - breeze, keep_lanes = false (NOKEEP=1, the default; NOKEEP=0 skips it): the first run
#               on a fresh copy with the lanes removed at its end, as before issue 24.
# Every round must end with the same tree on main on every side after the first runs, each
# later run must land its TASKS commits, and nothing may be left behind: no worktree on the
# git CLI and keep_lanes = false sides; on the breeze side only its kept lanes, clean at
# main's tip. Reports the minimum of each side and the ratios (single timings on a shared
# machine say little), then traced breeze runs: `strace -f` counts of file-system calls,
# split into breeze's own process, the git commands breeze runs, and the role processes —
# a first run, a later run on the same repository (kept lanes), and (NOKEEP=1) a first run
# with keep_lanes = false.
#
# BREEZE=path uses that binary instead of building one (release, in CARGO_TARGET_DIR);
# BENCH_DIR picks the directory (default: a temp dir under TMPDIR, removed afterwards);
# STRACE=0 skips the traced runs.
set -euo pipefail
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(20000 100000)
rounds=${ROUNDS:-3}
tasks=${TASKS:-12}
later_runs=${LATER_RUNS:-1}
nokeep=${NOKEEP:-1}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}

breeze=${BREEZE:-}
if [ -z "$breeze" ]; then
  echo "building breeze (release)..."
  (cd "$root" && cargo build --release --quiet -p breeze-cli)
  breeze="$target/release/breeze"
fi

work=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/overhead-bench.XXXXXX")}
mkdir -p "$work"
cleanup() { [ -n "${BENCH_DIR:-}" ] || rm -rf "$work"; }
trap cleanup EXIT
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
min() { printf '%s\n' "$@" | sort -g | head -1; }

check() { # DIR [kept]: clean, no worktree left (kept: only lanes, clean at main's tip)
  if [ -n "$(git -C "$1" status --porcelain)" ]; then echo "overhead-bench: $1 is not clean" >&2; exit 1; fi
  if [ "${2:-}" != kept ]; then
    if [ "$(git -C "$1" worktree list | wc -l)" != 1 ]; then echo "overhead-bench: worktrees left in $1" >&2; exit 1; fi
    return
  fi
  local tip lane
  tip=$(git -C "$1" rev-parse main)
  git -C "$1" worktree list --porcelain | awk '/^worktree /{print substr($0, 10)}' | tail -n +2 |
    while read -r lane; do
      if [ "$(git -C "$lane" rev-parse HEAD)" != "$tip" ] || [ -n "$(git -C "$lane" status --porcelain)" ]; then
        echo "overhead-bench: kept lane $lane is not clean at main's tip" >&2; exit 1
      fi
    done
}
run_breeze() { # REPO FIRST_TASK [false]: one `breeze run` of $tasks tasks from FIRST_TASK;
  # its time (the run alone, not the writing of its plan) in $work/run-time
  ROLES=shell FIRST_TASK="$2" KEEP_LANES="${3:-}" RUN_TIME_FILE="$work/run-time" \
    "$here/land-breeze-run.sh" "$breeze" "$1" "$tasks"
}

summary=()
for files in "${sizes[@]}"; do
  echo "== $tasks one-file tasks on $files files, $rounds alternating rounds ($work) =="
  rm -rf "$work/gen"
  "$here/git-gen-repo.sh" "$work/gen" "$files" >/dev/null
  cli_times=(); breeze_times=(); later_times=(); nokeep_times=()
  sides=(cli breeze); [ "$nokeep" = 1 ] && sides+=(nokeep)
  for round in $(seq 1 "$rounds"); do
    order=("${sides[@]}")
    if [ $((round % 2)) = 0 ]; then order=(); for side in "${sides[@]}"; do order=("$side" "${order[@]}"); done; fi
    for side in "${order[@]}"; do
      rm -rf "$work/$side"; cp -a "$work/gen" "$work/$side"; sync
      t0=$(now)
      case $side in
        cli) "$here/land-cli.sh" "$work/cli" "$tasks" ;;
        breeze) run_breeze "$work/breeze" 1 ;;
        nokeep) run_breeze "$work/nokeep" 1 false ;;
      esac
      t1=$(now)
      s=$(elapsed "$t0" "$t1")
      [ "$side" = cli ] || s=$(cat "$work/run-time")
      case $side in
        cli) cli_times+=("$s") ;;
        breeze) breeze_times+=("$s") ;;
        nokeep) nokeep_times+=("$s") ;;
      esac
      if [ "$side" = breeze ]; then
        breeze_tree=$(git -C "$work/breeze" rev-parse 'main^{tree}')
        check "$work/breeze" kept
        for later in $(seq 1 "$later_runs"); do
          before=$(git -C "$work/breeze" rev-list --count main); sync
          run_breeze "$work/breeze" $((later * tasks + 1))
          later_times+=("$(cat "$work/run-time")")
          if [ "$(git -C "$work/breeze" rev-list --count main)" != $((before + tasks)) ]; then
            echo "overhead-bench: later run $later did not land $tasks tasks" >&2; exit 1
          fi
          check "$work/breeze" kept
        done
      fi
    done
    cli_tree=$(git -C "$work/cli" rev-parse 'main^{tree}')
    if [ "$cli_tree" != "$breeze_tree" ]; then
      echo "overhead-bench: different trees on main ($cli_tree, $breeze_tree)" >&2; exit 1
    fi
    check "$work/cli"
    line="round $round: git CLI ${cli_times[-1]} s, breeze ${breeze_times[-1]} s"
    [ "$later_runs" -gt 0 ] && line+=", later runs ${later_times[*]: -$later_runs} s"
    if [ "$nokeep" = 1 ]; then
      if [ "$(git -C "$work/nokeep" rev-parse 'main^{tree}')" != "$cli_tree" ]; then
        echo "overhead-bench: different trees on main (keep_lanes = false)" >&2; exit 1
      fi
      check "$work/nokeep"
      line+=", keep_lanes = false ${nokeep_times[-1]} s"
    fi
    echo "$line"
  done
  ratio() { awk -v b="$1" -v c="$2" 'BEGIN { printf "%.3f", b / c }'; }
  cli_min=$(min "${cli_times[@]}"); breeze_min=$(min "${breeze_times[@]}")
  line="$files files: git CLI min $cli_min s (${cli_times[*]}), breeze first run min $breeze_min s (${breeze_times[*]}), ratio $(ratio "$breeze_min" "$cli_min")x"
  if [ "$later_runs" -gt 0 ]; then
    later_min=$(min "${later_times[@]}")
    line+="; later runs min $later_min s (${later_times[*]}), ratio to git CLI $(ratio "$later_min" "$cli_min")x, to breeze's first run $(ratio "$later_min" "$breeze_min")x"
  fi
  if [ "$nokeep" = 1 ]; then
    nokeep_min=$(min "${nokeep_times[@]}")
    line+="; keep_lanes = false min $nokeep_min s (${nokeep_times[*]}), ratio $(ratio "$nokeep_min" "$cli_min")x"
  fi
  echo "$line"
  summary+=("$line")
  if [ "${STRACE:-1}" != 0 ] && command -v strace >/dev/null; then
    traced() { # NAME FIRST_TASK [false]: one traced run in $work/traced
      strace -f -qq -Y -o "$work/trace.txt" \
        -e trace=newfstatat,statx,lstat,stat,fstat,getdents64,openat,execve,clone,clone3,vfork \
        env ROLES=shell FIRST_TASK="$2" KEEP_LANES="${3:-}" "$here/land-breeze-run.sh" "$breeze" "$work/traced" "$tasks"
      echo "-- file-system calls of one breeze run (strace -f), $files files, $1 --"
      python3 "$here/strace-summary.py" "$work/trace.txt" "$tasks" "$(basename "$breeze")" "$work/traced" | tee "$work/strace-$files-$1.txt"
      summary+=("$(grep '^breeze per task' "$work/strace-$files-$1.txt" | sed "s/^/$files files, $1: /")")
      summary+=("$(grep '^breeze-git' "$work/strace-$files-$1.txt" | sed "s/^/$files files, $1: /")")
      rm -f "$work/trace.txt"
    }
    rm -rf "$work/traced"; cp -a "$work/gen" "$work/traced"; sync
    traced "first run" 1
    if [ "$later_runs" -gt 0 ]; then sync; traced "second run" $((tasks + 1)); fi
    if [ "$nokeep" = 1 ]; then
      rm -rf "$work/traced"; cp -a "$work/gen" "$work/traced"; sync
      traced "keep_lanes = false" 1 false
    fi
  fi
  rm -rf "$work/cli" "$work/breeze" "$work/nokeep" "$work/traced" "$work/gen"
  echo
done
echo "== summary =="
printf '%s\n' "${summary[@]}"
