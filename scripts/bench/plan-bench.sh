#!/usr/bin/env bash
# Benchmark of the breeze planner: parse + conflict analysis + JSON for generated plans
# of 1k and 10k tasks, against the naive all-pairs check.
# Usage: scripts/bench/plan-bench.sh [TASKS...] [--runs N] [--naive-full N] [--naive-sample PAIRS]
set -euo pipefail
cd "$(dirname "$0")/../.."
exec cargo run --quiet --release -p breeze-plan --example plan_bench -- "$@"
