#!/usr/bin/env bash
# The landing queue on the commander.js-like case (issue 32): TASKS (5) trivial tasks on the
# scripted backend, three lanes, `land.verify` a command taking VERIFY_SECONDS (20) — a slow
# test suite — landed by `breeze run` with `land.queue_depth = 1` (one landing verified at
# a time) and with the default depth (3: side by side), ROUNDS times each, alternating; with
# BEFORE=path-to-an-older-breeze also by that binary (before the landing queue: landings
# verified serially from their lanes; no queue_depth key is written for it). Prints each
# run's seconds, each side's minimum and the ratios of the minimums.
#
#   scripts/bench/queue-bench.sh BREEZE [ROUNDS]
#
# Each run gets a fresh repository (TASKS files, one per task), its lanes removed at the end
# (`keep_lanes = false`), and is checked: every task landed once on main.
set -euo pipefail
breeze=$(realpath "${1:?usage: queue-bench.sh BREEZE [ROUNDS]}")
rounds=${2:-1}
tasks=${TASKS:-5}
seconds=${VERIFY_SECONDS:-20}
before=${BEFORE:+$(realpath "$BEFORE")}
work=$(mktemp -d "${TMPDIR:-/tmp}/queue-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

printf 'sleep %s\necho "1 passed"\n' "$seconds" > "$work/verify.sh"
for i in $(seq 1 "$tasks"); do
  printf '[[task]]\nid = "%s"\ntitle = "task %s"\ndod = "one file edited"\nwrites = ["src/t%s.txt"]\n\n' "$i" "$i" "$i"
done > "$work/plan.toml"

# One run: a fresh repository, `$2` run with queue_depth `$3` ("" writes no such key).
# Prints its seconds.
run_once() {
  local label=$1 binary=$2 depth=$3 repo
  repo="$work/repo-$label-$RANDOM"
  git init -q -b main "$repo"
  mkdir -p "$repo/src"
  for i in $(seq 1 "$tasks"); do echo "file $i" > "$repo/src/t$i.txt"; done
  echo readme > "$repo/README.md"
  git -C "$repo" add -A
  git -C "$repo" -c user.name=bench -c user.email=bench@example.com commit -qm init
  {
    printf '[run]\nmax_workers = 3\n'
    for role in worker reviewer advisor scaffolder; do
      printf '[roles.%s]\nbackend = "scripted"\n' "$role"
    done
    printf '[worktree]\nkeep_lanes = false\n'
    printf '[land]\nverify = ["sh", "%s"]\n' "$work/verify.sh"
    if [ -n "$depth" ]; then printf 'queue_depth = %s\n' "$depth"; fi
  } > "$repo/breeze.toml"
  printf 'breeze.toml\n' >> "$repo/.git/info/exclude"
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$repo" && "$binary" run "$work/plan.toml" > "$work/$label.out" 2>&1) || {
    echo "$label: breeze run failed:" >&2
    cat "$work/$label.out" >&2
    exit 1
  }
  t1=$(date +%s.%N)
  local landed
  landed=$(git -C "$repo" log --format='%(trailers:key=Breeze-Task,valueonly)' main | grep -c .)
  if [ "$landed" != "$tasks" ]; then
    echo "$label: $landed of $tasks tasks landed" >&2
    exit 1
  fi
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }'
}

declare -A times
sides=("depth-1" "depth-default")
if [ -n "$before" ]; then sides+=("before"); fi
for round in $(seq 1 "$rounds"); do
  for side in "${sides[@]}"; do
    case $side in
      depth-1) t=$(run_once "$side" "$breeze" 1) ;;
      depth-default) t=$(run_once "$side" "$breeze" "") ;;
      before) t=$(run_once "$side" "$before" "") ;;
    esac
    echo "round $round $side: ${t}s"
    times[$side]="${times[$side]:-} $t"
  done
done

minimum() { tr ' ' '\n' <<< "$1" | grep . | sort -n | head -1; }
d1=$(minimum "${times[depth-1]}")
dd=$(minimum "${times[depth-default]}")
echo "tasks $tasks, verify ${seconds}s, rounds $rounds (minimum of each side)"
echo "queue_depth = 1:         ${d1}s"
echo "queue_depth = 3 (default): ${dd}s   ratio to depth 1: $(awk -v a="$dd" -v b="$d1" 'BEGIN { printf "%.2f", a / b }')"
if [ -n "$before" ]; then
  b=$(minimum "${times[before]}")
  echo "before (serial, on lanes): ${b}s   default's ratio to before: $(awk -v a="$dd" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
fi
