#!/usr/bin/env bash
# The same team run as land-cli.sh, through the whole engine: `breeze run` with a plan of
# TASKS one-file tasks (each task's write set is the file it edits), a shell worker that
# makes the same edit as land-cli.sh, and the built-in scripted reviewer. Covers what the
# library benchmark does not: planning, contracts, the journal (fsync per event), role
# processes, gates, reviews, landings and the user's checkout. With ROLES=shell the reviewer
# is a shell role too (it approves), so every role is a supervised process, as in a real run.
#
#   scripts/bench/land-breeze-run.sh BREEZE REPO [TASKS]
#
# FIRST_TASK=n numbers the tasks n, n+1, … (default 1): a later run on the same repository
# needs new ids (a task whose id is already on main is not run again). Task N edits line
# ((N * 997 - 1) mod FILES) + 1 of `git ls-files` — line N * 997, as in land-cli.sh, while that
# fits. KEEP_LANES=false writes `[worktree] keep_lanes = false` (lanes removed at the end of
# the run, as before issue 24); by default the configuration's default (lanes kept).
# RUN_TIME_FILE=path writes there the seconds of the `breeze run` alone: the plan and the
# configuration are written before it (one `git ls-files`), and are not breeze's work.
set -euo pipefail
breeze=${1:?usage: land-breeze-run.sh BREEZE REPO [TASKS]}
repo=${2:?usage: land-breeze-run.sh BREEZE REPO [TASKS]}
tasks=${3:-12}
first=${FIRST_TASK:-1}
side=$(mktemp -d "${TMPDIR:-/tmp}/land-breeze-run.XXXXXX")
trap 'rm -rf "$side"' EXIT
git -C "$repo" ls-files > "$side/files"
files=$(wc -l < "$side/files")

cat > "$side/worker.sh" <<WORKER
cat > /dev/null
path=\$(git ls-files | sed -n "\$(( (BREEZE_TASK_ID * 997 - 1) % $files + 1 ))p")
printf 'task %s was here\\n' "\$BREEZE_TASK_ID" >> "\$path"
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"edited %s"}' "\$path" > "\$BREEZE_OUTPUT"
WORKER
cat > "$side/reviewer.sh" <<'REVIEWER'
cat > /dev/null
printf '{"schema_version":"review-result.v1","verdict":"APPROVE","checks":[],"gaps":[]}' > "$BREEZE_OUTPUT"
REVIEWER
if [ "${ROLES:-}" = shell ]; then
  reviewer="backend = \"command\"
command = [\"sh\", \"$side/reviewer.sh\"]"
else
  reviewer='backend = "scripted"'
fi

{
  for i in $(seq "$first" $((first + tasks - 1))); do
    path=$(sed -n "$(( (i * 997 - 1) % files + 1 ))p" "$side/files")
    printf '[[task]]\nid = "%s"\ntitle = "task %s"\ndod = "one line added"\nwrites = ["%s"]\n\n' "$i" "$i" "$path"
  done
} > "$side/plan.toml"

# breeze.toml must sit at the repository root; it stays untracked in the user's checkout.
cat > "$repo/breeze.toml" <<CONFIG
[run]
max_workers = 3
[roles.worker]
backend = "command"
command = ["sh", "$side/worker.sh"]
[roles.reviewer]
$reviewer
[roles.advisor]
backend = "scripted"
CONFIG
if [ "${KEEP_LANES:-}" = false ]; then
  printf '[worktree]\nkeep_lanes = false\n' >> "$repo/breeze.toml"
fi
printf 'breeze.toml\n' >> "$repo/.git/info/exclude"

t0=$(date +%s.%N)
(cd "$repo" && "$breeze" run "$side/plan.toml" >/dev/null)
t1=$(date +%s.%N)
if [ -n "${RUN_TIME_FILE:-}" ]; then
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' > "$RUN_TIME_FILE"
fi
