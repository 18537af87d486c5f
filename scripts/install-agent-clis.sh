#!/usr/bin/env bash
# Installs the agent CLIs breeze is tested against — Claude Code and Codex, at pinned
# versions, from the npm registry — into a cache folder outside the source tree, and prints
# the folder that holds the `claude` and `codex` commands. A second call with the versions
# already there installs nothing.
#
#   bin=$(scripts/install-agent-clis.sh)          # then: BREEZE_AGENT_CLIS=$bin cargo test ...
#
# BREEZE_AGENT_CLIS_DIR moves the cache (default: ${XDG_CACHE_HOME:-~/.cache}/breeze/agent-clis).
# Needs Node.js with npm. Claude Code declares Node 22 but ships a native binary that runs
# on Node 20's npm as well.
set -euo pipefail

CLAUDE_VERSION=2.1.332
CODEX_VERSION=0.171.0

dir=${BREEZE_AGENT_CLIS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/breeze/agent-clis}
bin=$dir/node_modules/.bin

installed() {
    [ -x "$bin/claude" ] && [ -x "$bin/codex" ] &&
        "$bin/claude" --version 2>/dev/null | grep -q "^$CLAUDE_VERSION " &&
        "$bin/codex" --version 2>/dev/null | grep -q " $CODEX_VERSION\$"
}

if ! installed; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "install-agent-clis: npm is required (install Node.js 20 or later)" >&2
        exit 1
    fi
    mkdir -p "$dir"
    echo "install-agent-clis: installing claude-code $CLAUDE_VERSION and codex $CODEX_VERSION into $dir" >&2
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
        "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" >&2
    if ! installed; then
        echo "install-agent-clis: the installed CLIs do not report the pinned versions:" >&2
        "$bin/claude" --version >&2 || true
        "$bin/codex" --version >&2 || true
        exit 1
    fi
fi
echo "$bin"
