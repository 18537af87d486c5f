#!/usr/bin/env bash
# Team-run landing benchmark: breeze-git against the original harness's git-CLI procedure.
#
#   scripts/bench/land-bench.sh [FILES] [TASKS]      (defaults: 20000 files, 12 tasks)
#
# Generates a FILES-file repository (scripts/bench/git-gen-repo.sh), copies it twice and
# times, in one run:
#   (a) scripts/bench/land-cli.sh: per task `git worktree add -b task/N … BASE`, edit one
#       file, `git commit`, on main `git cherry-pick --no-commit` + `git commit`,
#       `git worktree remove`, `git branch -D`;
#   (b) the `team_land` example: the same tasks through breeze-git with at most 3 lane
#       worktrees moved between tasks (create/move_worktree, commit_worktree, merge_task,
#       write_landing_commit, advance_main, remove_worktree at the end);
#   (c) scripts/bench/land-breeze-run.sh: the same tasks through the whole engine,
#       `breeze run` with a shell worker and the scripted reviewer.
# All three must end with the same tree on main (checked). Prints both wall times and the
# ratio, then one fresh create_worktree against one move_worktree on the same repository.
# RUNS=n repeats (a)/(b) alternately and reports medians; BENCH_DIR picks the directory
# (default: a new temp dir, removed afterwards).
set -euo pipefail
files=${1:-20000}
tasks=${2:-12}
runs=${RUNS:-1}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

echo "building the team_land example and breeze (release)..."
(cd "$root" && cargo build --release --quiet -p breeze-git --example team_land && cargo build --release --quiet -p breeze-cli)
team_land="$root/target/release/examples/team_land"
breeze="$root/target/release/breeze"

work=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/land-bench.XXXXXX")}
mkdir -p "$work"
cleanup() { [ -n "${BENCH_DIR:-}" ] || rm -rf "$work"; }
trap cleanup EXIT

echo "generating a $files-file repository in $work ..."
rm -rf "$work/gen"
"$here/git-gen-repo.sh" "$work/gen" "$files" >/dev/null

now() { date +%s.%N; }
cli_times=()
breeze_times=()
run_times=()
for run in $(seq 1 "$runs"); do
  rm -rf "$work/cli" "$work/breeze" "$work/run"
  cp -a "$work/gen" "$work/cli"
  cp -a "$work/gen" "$work/breeze"
  cp -a "$work/gen" "$work/run"
  sync

  t0=$(now)
  "$here/land-cli.sh" "$work/cli" "$tasks"
  t1=$(now)
  "$team_land" "$work/breeze" --tasks "$tasks" >/dev/null
  t2=$(now)
  "$here/land-breeze-run.sh" "$breeze" "$work/run" "$tasks"
  t3=$(now)

  cli_tree=$(git -C "$work/cli" rev-parse 'main^{tree}')
  breeze_tree=$(git -C "$work/breeze" rev-parse 'main^{tree}')
  run_tree=$(git -C "$work/run" rev-parse 'main^{tree}')
  if [ "$cli_tree" != "$breeze_tree" ] || [ "$cli_tree" != "$run_tree" ]; then
    echo "land-bench: the runs ended with different trees ($cli_tree, $breeze_tree, $run_tree)" >&2
    exit 1
  fi
  for dir in "$work/cli" "$work/breeze" "$work/run"; do
    if [ -n "$(git -C "$dir" status --porcelain)" ]; then
      echo "land-bench: $dir is not clean after the run" >&2; exit 1
    fi
    if [ "$(git -C "$dir" worktree list | wc -l)" != 1 ]; then
      echo "land-bench: worktrees left in $dir" >&2; exit 1
    fi
  done
  git -C "$work/breeze" fsck --no-progress --strict >/dev/null

  cli_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  breeze_s=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.3f", b - a }')
  run_s=$(awk -v a="$t2" -v b="$t3" 'BEGIN { printf "%.3f", b - a }')
  echo "run $run: git CLI $cli_s s, breeze-git $breeze_s s, breeze run $run_s s"
  cli_times+=("$cli_s")
  breeze_times+=("$breeze_s")
  run_times+=("$run_s")
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cli_m=$(median "${cli_times[@]}")
breeze_m=$(median "${breeze_times[@]}")
echo
echo "== $tasks one-file tasks on $files files (median of $runs run(s)) =="
echo "git CLI (original procedure):  $cli_m s"
echo "breeze-git (3 lanes):        $breeze_m s"
run_m=$(median "${run_times[@]}")
echo "breeze run (whole engine):   $run_m s"
awk -v b="$breeze_m" -v c="$cli_m" 'BEGIN { printf "ratio breeze-git / git CLI:  %.2fx\n", b / c }'
awk -v b="$run_m" -v c="$cli_m" 'BEGIN { printf "ratio breeze run / git CLI: %.2fx\n", b / c }'

echo
echo "== one fresh worktree vs one lane move on $files files =="
rm -rf "$work/cvm" && cp -a "$work/gen" "$work/cvm"
"$team_land" "$work/cvm" --create-vs-move
