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
#               shell worker and a shell reviewer (process agents, as in every real run).
# Every round must end with the same tree on main on both sides and nothing left behind.
# Reports the minimum of each side and their ratio (single timings on a shared machine say
# little), then one traced breeze run: `strace -f` counts of file-system calls, split into
# breeze's own process, the git commands breeze runs, and the role processes.
#
# BREEZE=path uses that binary instead of building one (release, in CARGO_TARGET_DIR);
# BENCH_DIR picks the directory (default: a temp dir under TMPDIR, removed afterwards);
# STRACE=0 skips the traced run.
set -euo pipefail
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(20000 100000)
rounds=${ROUNDS:-3}
tasks=${TASKS:-12}
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

check() { # DIR: clean, no worktree left
  if [ -n "$(git -C "$1" status --porcelain)" ]; then echo "overhead-bench: $1 is not clean" >&2; exit 1; fi
  if [ "$(git -C "$1" worktree list | wc -l)" != 1 ]; then echo "overhead-bench: worktrees left in $1" >&2; exit 1; fi
}

summary=()
for files in "${sizes[@]}"; do
  echo "== $tasks one-file tasks on $files files, $rounds alternating rounds ($work) =="
  rm -rf "$work/gen"
  "$here/git-gen-repo.sh" "$work/gen" "$files" >/dev/null
  cli_times=(); breeze_times=()
  for round in $(seq 1 "$rounds"); do
    order=(cli breeze); [ $((round % 2)) = 0 ] && order=(breeze cli)
    for side in "${order[@]}"; do
      rm -rf "$work/$side"; cp -a "$work/gen" "$work/$side"; sync
      t0=$(now)
      if [ "$side" = cli ]; then
        "$here/land-cli.sh" "$work/cli" "$tasks"
      else
        ROLES=shell "$here/land-breeze-run.sh" "$breeze" "$work/breeze" "$tasks"
      fi
      t1=$(now)
      s=$(elapsed "$t0" "$t1")
      if [ "$side" = cli ]; then cli_times+=("$s"); else breeze_times+=("$s"); fi
    done
    cli_tree=$(git -C "$work/cli" rev-parse 'main^{tree}')
    breeze_tree=$(git -C "$work/breeze" rev-parse 'main^{tree}')
    if [ "$cli_tree" != "$breeze_tree" ]; then
      echo "overhead-bench: different trees on main ($cli_tree, $breeze_tree)" >&2; exit 1
    fi
    check "$work/cli"; check "$work/breeze"
    echo "round $round: git CLI ${cli_times[-1]} s, breeze ${breeze_times[-1]} s"
  done
  cli_min=$(min "${cli_times[@]}"); breeze_min=$(min "${breeze_times[@]}")
  ratio=$(awk -v b="$breeze_min" -v c="$cli_min" 'BEGIN { printf "%.3f", b / c }')
  line="$files files: git CLI min $cli_min s (${cli_times[*]}), breeze min $breeze_min s (${breeze_times[*]}), ratio ${ratio}x"
  echo "$line"
  summary+=("$line")
  if [ "${STRACE:-1}" != 0 ] && command -v strace >/dev/null; then
    rm -rf "$work/traced"; cp -a "$work/gen" "$work/traced"
    strace -f -qq -Y -o "$work/trace.txt" \
      -e trace=newfstatat,statx,lstat,stat,fstat,getdents64,openat,execve,clone,clone3,vfork \
      env ROLES=shell "$here/land-breeze-run.sh" "$breeze" "$work/traced" "$tasks"
    echo "-- file-system calls of one breeze run (strace -f), $files files --"
    python3 "$here/strace-summary.py" "$work/trace.txt" "$tasks" "$(basename "$breeze")" "$work/traced" | tee "$work/strace-$files.txt"
    summary+=("$(grep '^breeze per task' "$work/strace-$files.txt" | sed "s/^/$files files: /")")
    rm -f "$work/trace.txt"
  fi
  rm -rf "$work/cli" "$work/breeze" "$work/traced" "$work/gen"
  echo
done
echo "== summary =="
printf '%s\n' "${summary[@]}"
