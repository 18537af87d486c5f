#!/usr/bin/env bash
# Benchmark of the breeze planner: parse + conflict analysis + JSON for generated plans
# of 1k and 10k tasks, against the naive all-pairs check.
# Usage: scripts/bench/plan-bench.sh [TASKS...] [--shape mixed|shared-files] [--format md|toml]
#                                    [--runs N] [--naive-full N] [--naive-sample PAIRS]
#   --shape mixed         files, module directories and globs over a crate tree (default)
#   --shape shared-files  task i writes pkg{i%500}/mod{i}/** and pkg{i%500}/lib{i%7}.rs
#   --format md|toml      write the plan as a Plans.md (default) or a plan.toml
set -euo pipefail
cd "$(dirname "$0")/../.."
exec cargo run --quiet --release -p breeze-plan --example plan_bench -- "$@"
