#!/usr/bin/env bash
# The original harness's landing procedure with the git CLI, for TASKS one-file tasks (default 12):
# per task, `git worktree add -b task/N` from one base, write one file, `git commit` in the
# worktree, then on main (checked out in REPO) `git cherry-pick --no-commit` + `git commit`,
# `git worktree remove`, `git branch -D`.
#
#   scripts/bench/land-cli.sh REPO [TASKS]
set -euo pipefail
repo=${1:?usage: land-cli.sh REPO [TASKS]}
tasks=${2:-12}
cd "$repo"
base=$(git rev-parse main)
mkdir -p .harness-worktrees
for i in $(seq 1 "$tasks"); do
  wt=".harness-worktrees/task-$i"
  git worktree add -q -b "task/$i" "$wt" "$base"
  # One file per task, spread over the tree (same paths as the breeze example).
  path=$(git -C "$wt" ls-files | sed -n "$(( i * 997 ))p")
  printf 'task %s was here\n' "$i" >> "$wt/$path"
  git -C "$wt" add -A
  git -C "$wt" commit -q -m "task $i"
  commit=$(git -C "$wt" rev-parse HEAD)
  git cherry-pick --no-commit "$commit"
  git commit -q -m "feat: task $i"
  git worktree remove "$wt"
  git branch -q -D "task/$i"
done
