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
# CLI=0 leaves out the git CLI side (a round of it takes 5–15 minutes at 100,000 files here):
# the table then has no git CLI column values and no tree comparison with it.
# BEFORE=path adds an older breeze as one more side (its first run and later runs, in the
# same alternating rounds, and its traced runs), for a before/after table.
# At the end, one markdown table puts side by side, for each size: the git CLI's, the first
# run's and the later runs' minimum times, and the traced counts — breeze's own stat calls per
# task in a first run, and a later run's stat calls, getdents64, openat and
# inotify_add_watch (one per folder its lane watches).
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
before=${BEFORE:-}
# Each side's lanes live in a data folder of its own (XDG_DATA_HOME), emptied with its
# repository: a new copy at the same path must not find the last round's lanes there.
run_breeze() { # REPO FIRST_TASK [false [BINARY]]: one `breeze run` of $tasks tasks from
  # FIRST_TASK; its time (the run alone, not the writing of its plan) in $work/run-time
  XDG_DATA_HOME="$1.data" ROLES=shell FIRST_TASK="$2" KEEP_LANES="${3:-}" RUN_TIME_FILE="$work/run-time" \
    "$here/land-breeze-run.sh" "${4:-$breeze}" "$1" "$tasks"
}
later_runs_of() { # SIDE BINARY: the later runs on the side's repository, timed into later_<side>
  local before_count later
  for later in $(seq 1 "$later_runs"); do
    before_count=$(git -C "$work/$1" rev-list --count main); sync
    run_breeze "$work/$1" $((later * tasks + 1)) "" "$2"
    eval "later_$1+=(\"\$(cat \"\$work/run-time\")\")"
    if [ "$(git -C "$work/$1" rev-list --count main)" != $((before_count + tasks)) ]; then
      echo "overhead-bench: later run $later ($1) did not land $tasks tasks" >&2; exit 1
    fi
    check "$work/$1" kept
  done
}
table=("| files | breeze | git CLI, min (s) | first run, min (s) | later run, min (s) | later / git CLI | first run: breeze's stat calls per task | later run: breeze's stat calls | getdents64 | openat | inotify_add_watch |"
       "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")

summary=()
for files in "${sizes[@]}"; do
  echo "== $tasks one-file tasks on $files files, $rounds alternating rounds ($work) =="
  rm -rf "$work/gen"
  "$here/git-gen-repo.sh" "$work/gen" "$files" >/dev/null
  cli_times=(); breeze_times=(); later_times=(); nokeep_times=(); before_times=()
  later_breeze=(); later_before=()
  sides=(breeze); [ "${CLI:-1}" = 0 ] || sides=(cli breeze)
  [ -n "$before" ] && sides+=(before); [ "$nokeep" = 1 ] && sides+=(nokeep)
  cli_times=(); cli_tree=$(git -C "$work/gen" rev-parse 'main^{tree}')
  for round in $(seq 1 "$rounds"); do
    order=("${sides[@]}")
    if [ $((round % 2)) = 0 ]; then order=(); for side in "${sides[@]}"; do order=("$side" "${order[@]}"); done; fi
    for side in "${order[@]}"; do
      rm -rf "$work/$side" "$work/$side.data"; cp -a "$work/gen" "$work/$side"; sync
      t0=$(now)
      case $side in
        cli) "$here/land-cli.sh" "$work/cli" "$tasks" ;;
        breeze) run_breeze "$work/breeze" 1 ;;
        before) run_breeze "$work/before" 1 "" "$before" ;;
        nokeep) run_breeze "$work/nokeep" 1 false ;;
      esac
      t1=$(now)
      s=$(elapsed "$t0" "$t1")
      [ "$side" = cli ] || s=$(cat "$work/run-time")
      case $side in
        cli) cli_times+=("$s") ;;
        breeze) breeze_times+=("$s") ;;
        before) before_times+=("$s") ;;
        nokeep) nokeep_times+=("$s") ;;
      esac
      tree=$(git -C "$work/$side" rev-parse 'main^{tree}')
      case $side in
        cli) cli_tree=$tree; check "$work/cli" ;;
        nokeep) nokeep_tree=$tree; check "$work/nokeep" ;;
        *)
          eval "${side}_tree=\$tree"
          check "$work/$side" kept
          binary=$breeze; [ "$side" = before ] && binary=$before
          later_runs_of "$side" "$binary"
          ;;
      esac
      # A side's copy goes once measured: at 100,000 files a copy with its lanes is 2 GB.
      rm -rf "$work/$side" "$work/$side.data"
    done
    if [ "${CLI:-1}" = 0 ]; then
      # Without the git CLI side the sides are compared with each other.
      cli_tree=$breeze_tree; cli_times=("–")
    fi
    if [ "$cli_tree" != "$breeze_tree" ]; then
      echo "overhead-bench: different trees on main ($cli_tree, $breeze_tree)" >&2; exit 1
    fi
    if [ -n "$before" ] && [ "$before_tree" != "$cli_tree" ]; then
      echo "overhead-bench: different trees on main (before)" >&2; exit 1
    fi
    later_times=("${later_breeze[@]}")
    line="round $round: git CLI ${cli_times[-1]} s, breeze ${breeze_times[-1]} s"
    [ "$later_runs" -gt 0 ] && line+=", later runs ${later_times[*]: -$later_runs} s"
    [ -n "$before" ] && line+=", before: first run ${before_times[-1]} s, later runs ${later_before[*]: -$later_runs} s"
    if [ "$nokeep" = 1 ]; then
      if [ "$nokeep_tree" != "$cli_tree" ]; then
        echo "overhead-bench: different trees on main (keep_lanes = false)" >&2; exit 1
      fi
      line+=", keep_lanes = false ${nokeep_times[-1]} s"
    fi
    echo "$line"
  done
  ratio() { awk -v b="$1" -v c="$2" 'BEGIN { if (c + 0 == 0 || b + 0 == 0) print "–"; else printf "%.3f", b / c }'; }
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
  traced_counts=()
  if [ "${STRACE:-1}" != 0 ] && command -v strace >/dev/null; then
    traced() { # NAME FIRST_TASK [false [BINARY]]: one traced run in $work/traced
      local binary=${4:-$breeze}
      strace -f -qq -Y -o "$work/trace.txt" \
        -e trace=newfstatat,statx,lstat,stat,fstat,getdents64,openat,inotify_add_watch,execve,clone,clone3,vfork \
        env XDG_DATA_HOME="$work/traced.data" ROLES=shell FIRST_TASK="$2" KEEP_LANES="${3:-}" "$here/land-breeze-run.sh" "$binary" "$work/traced" "$tasks"
      echo "-- file-system calls of one breeze run (strace -f), $files files, $1 --"
      python3 "$here/strace-summary.py" "$work/trace.txt" "$tasks" "$(basename "$binary")" "$work/traced" | tee "$work/strace-$files-$1.txt"
      summary+=("$(grep '^breeze per task' "$work/strace-$files-$1.txt" | sed "s/^/$files files, $1: /")")
      summary+=("$(grep '^breeze-git' "$work/strace-$files-$1.txt" | sed "s/^/$files files, $1: /")")
      rm -f "$work/trace.txt"
    }
    counts_of() { # NAME: "stat getdents64 openat inotify_add_watch" of breeze's own process
      awk '/^breeze  / { w = 0; if (match($0, /inotify_add_watch [0-9]+/)) { split(substr($0, RSTART, RLENGTH), a, " "); w = a[2] }
                         print $4, $6, $8, w }' "$work/strace-$files-$1.txt"
    }
    for binary in "$breeze" ${before:+"$before"}; do
      tag=""; [ "$binary" = "$breeze" ] || tag=" (before)"
      rm -rf "$work/traced" "$work/traced.data"; cp -a "$work/gen" "$work/traced"; sync
      traced "first run$tag" 1 "" "$binary"
      if [ "$later_runs" -gt 0 ]; then sync; traced "second run$tag" $((tasks + 1)) "" "$binary"; fi
      read -r first_stat _ < <(counts_of "first run$tag")
      read -r l_stat l_dents l_open l_watch < <(counts_of "second run$tag")
      traced_counts+=("$((first_stat / tasks)) | $l_stat | $l_dents | $l_open | $l_watch")
    done
    if [ "$nokeep" = 1 ]; then
      rm -rf "$work/traced" "$work/traced.data"; cp -a "$work/gen" "$work/traced"; sync
      traced "keep_lanes = false" 1 false
    fi
  fi
  row() { # LABEL FIRST_TIMES LATER_TIMES COUNTS
    local first_min later_min
    first_min=$(min $2); later_min=$(min $3)
    table+=("| $files | $1 | $cli_min | $first_min | $later_min | $(ratio "$later_min" "$cli_min")× | ${4:-– | – | – | – | –} |")
  }
  row "$(basename "$breeze")" "${breeze_times[*]}" "${later_breeze[*]}" "${traced_counts[0]:-}"
  if [ -n "$before" ]; then
    row "before: $(basename "$before")" "${before_times[*]}" "${later_before[*]}" "${traced_counts[1]:-}"
  fi
  rm -rf "$work/cli" "$work/breeze" "$work/before" "$work/nokeep" "$work/traced" "$work/gen" "$work"/*.data
  echo
done
echo "== summary =="
printf '%s\n' "${summary[@]}"
echo
echo "== table ($rounds alternating rounds, minimum of each side; counts from one traced run each) =="
printf '%s\n' "${table[@]}"
