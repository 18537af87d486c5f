#!/usr/bin/env bash
# End-to-end smoke test of `breeze run` on the REAL agent CLIs, offline.
#
#   npm install --prefix /tmp/clis @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0
#   scripts/agents-smoke.sh /tmp/clis/node_modules/.bin [claude|codex|both]   (default both)
#
# Not run by CI (CI has no npm CLIs). For each backend it builds breeze (release), makes a
# scratch git repository with a 2-task plan.toml and a breeze.toml whose worker, reviewer
# and advisor all use that backend, starts the scripted model server
# tests/fixtures/agents/capture/mock-model-server.py on 127.0.0.1 (no network model), and
# runs `breeze run`. The real CLI runs its real tools: the worker writes its file with
# claude's Write / codex's exec_command; the reviewer answers through claude --json-schema /
# codex --output-schema (which the server checks against OpenAI's strict-schema rules).
# Task 1 gets REQUEST_CHANGES in review round 1, so the worker's session is resumed for a
# fix round; task 2 is flagged needs-spike, so the Advisor is consulted before it starts.
# Credentials reach the CLIs the two ways breeze.toml allows: the claude run names
# ANTHROPIC_BASE_URL/ANTHROPIC_API_KEY/CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC in
# roles.<role>.env; the codex run sets pass_credentials (OPENAI_API_KEY) and points codex at
# the server with roles.<role>.args `-c model_providers.mock=...`.
# Checks, with git and `breeze status --json`: both tasks landed on main with their
# Breeze-Task / Breeze-Run / Breeze-Review trailers (task 1 approved in round 2, with the
# fix), the run succeeded, every task has non-zero token usage. Exit 0 when all hold.
# Keeps the scratch directory when a check fails (its path is printed); MOCK_PORT sets the
# server's port (default 18790), KEEP=1 keeps the directory anyway.
set -euo pipefail

bin=$(cd "${1:?usage: agents-smoke.sh <dir with claude and codex> [claude|codex|both]}" && pwd)
which_backends=${2:-both}
root=$(cd "$(dirname "$0")/.." && pwd)
port=${MOCK_PORT:-18790}
node_dir=$(dirname "$(command -v node)")
for cli in claude codex; do
    [ -x "$bin/$cli" ] || { echo "agents-smoke: $bin/$cli not found or not executable" >&2; exit 2; }
done

echo "== building breeze (release)"
(cd "$root" && cargo build --release -q -p breeze-cli)
breeze=$root/target/release/breeze

work=$(mktemp -d "${TMPDIR:-/tmp}/breeze-agents-smoke.XXXXXX")
server=""
failed=0
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
    if [ "$failed" = 0 ] && [ "${KEEP:-0}" != 1 ]; then rm -rf "$work"; else echo "scratch kept: $work"; fi
}
trap cleanup EXIT

MOCK_REQUEST_CHANGES=1 python3 "$root/tests/fixtures/agents/capture/mock-model-server.py" \
    "$port" "$work/requests.jsonl" 2>"$work/mock-server.log" &
server=$!
for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
    sleep 0.1
done

# The engine's environment: a fresh HOME (no stored login), the CLIs and node on PATH, the
# mock's address and keys. breeze itself decides which of these each role sees.
engine_env=(env -i "PATH=$bin:$node_dir:/usr/local/bin:/usr/bin:/bin" "HOME=$work/home"
    "LANG=C.UTF-8" "USER=${USER:-root}"
    "ANTHROPIC_BASE_URL=http://127.0.0.1:$port" ANTHROPIC_API_KEY=sk-mock-anthropic
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 OPENAI_API_KEY=sk-mock-openai)

role_config() { # backend → the [roles.*] tables
    local backend=$1 role
    for role in worker reviewer advisor; do
        echo "[roles.$role]"
        echo "backend = \"$backend\""
        echo 'timeout = "5m"'
        echo 'stall_timeout = "120s"'
        if [ "$backend" = claude ]; then
            echo 'env = ["ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"]'
        else
            echo 'pass_credentials = true'
            echo 'model = "mock-model"'
            echo "args = [\"-c\", \"model_provider=mock\", \"-c\", 'model_providers.mock={name=\"mock\",base_url=\"http://127.0.0.1:$port/v1\",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\",request_max_retries=1,stream_max_retries=1}']"
        fi
        echo
    done
}

check() { # description, command...
    local what=$1
    shift
    if "$@"; then echo "  ok   $what"; else echo "  FAIL $what"; failed=1; fi
}

smoke() {
    local backend=$1 repo=$work/$1/repo
    echo "== $backend: scratch repository $repo"
    mkdir -p "$repo" "$work/home"
    git -C "$repo" init -q -b main
    git -C "$repo" config user.name "Smoke User"
    git -C "$repo" config user.email "smoke@example.com"
    cat >"$repo/plan.toml" <<'EOF'
[[task]]
id = "1"
title = "Add the greeting"
dod = "src/greeting.txt names the task"
writes = ["src/greeting.txt"]

[[task]]
id = "2"
title = "Write the notes"
dod = "docs/notes.md exists"
writes = ["docs/notes.md"]
risk = ["needs-spike"]
EOF
    { printf '[run]\nmax_workers = 2\n\n'; role_config "$backend"; } >"$repo/breeze.toml"
    echo "# smoke" >"$repo/README.md"
    git -C "$repo" add -A && git -C "$repo" commit -q -m "initial"

    echo "== $backend: breeze run"
    local rc=0
    (cd "$repo" && "${engine_env[@]}" "$breeze" run) >"$work/$backend/run.out" 2>&1 || rc=$?
    sed 's/^/  | /' "$work/$backend/run.out" | tail -n 40
    echo "== $backend: checks"
    check "breeze run exited 0 (was $rc)" test "$rc" = 0
    local log
    log=$(git -C "$repo" log main --format='%H%n%B%n--END--')
    for task in 1 2; do
        check "task $task landed on main with its Breeze-Task trailer" \
            grep -q "^Breeze-Task: $task$" <<<"$log"
    done
    check "every landing has a Breeze-Run trailer" test "$(grep -c '^Breeze-Run: ' <<<"$log")" = 2
    check "task 1 approved in round 2 (after REQUEST_CHANGES)" \
        grep -q '^Breeze-Review: APPROVE (round 2)$' <<<"$log"
    check "task 2 approved in round 1" grep -q '^Breeze-Review: APPROVE (round 1)$' <<<"$log"
    check "task 1's fix round is on main" \
        sh -c "git -C '$repo' show main:src/greeting.txt | grep -q 'Fixed the findings of review round 1'"
    check "task 2's file is on main" git -C "$repo" cat-file -e main:docs/notes.md
    (cd "$repo" && "${engine_env[@]}" "$breeze" status --json) >"$work/$backend/status.json" 2>&1 || true
    check "breeze status --json: succeeded, tasks landed, usage counted" python3 - "$work/$backend/status.json" "$backend" <<'EOF'
import json, sys
status = json.load(open(sys.argv[1]))
backend = sys.argv[2]
problems = []
if status.get("state") != "succeeded":
    problems.append(f"run state {status.get('state')!r}")
usage = status.get("usage") or {}
print(f"       run usage: {json.dumps(usage)}")
for name in ("input_tokens", "output_tokens"):
    if not usage.get(name):
        problems.append(f"run usage {name} is {usage.get(name)!r}")
for task in status.get("tasks", []):
    u = task.get("usage") or {}
    print(f"       task {task['id']}: {task['state']}, attempts {task.get('attempts')}, rounds {task.get('rounds')}, "
          f"advisor {task.get('advisor_consults')}, usage {json.dumps(u)}")
    if task.get("state") != "landed":
        problems.append(f"task {task['id']} is {task.get('state')}: {task.get('reason')}")
    if not u.get("input_tokens") or not u.get("output_tokens"):
        problems.append(f"task {task['id']} has no token usage")
    if task["id"] == "2" and task.get("advisor_consults") != 1:
        problems.append(f"task 2 had {task.get('advisor_consults')} advisor consults, expected 1")
if backend == "claude" and not usage.get("cost_usd"):
    problems.append("claude reported no cost")
for p in problems:
    print("       " + p)
sys.exit(1 if problems else 0)
EOF
}

case $which_backends in
    both) smoke claude; smoke codex ;;
    claude | codex) smoke "$which_backends" ;;
    *) echo "agents-smoke: the second argument is claude, codex or both" >&2; exit 2 ;;
esac
if [ -s "$work/mock-server.log" ]; then
    echo "== mock server complaints"
    sed 's/^/  | /' "$work/mock-server.log"
fi
if [ "$failed" = 0 ]; then echo "agents-smoke: all checks passed"; else echo "agents-smoke: FAILED"; exit 1; fi
