#!/usr/bin/env bash
# Runs one of two breeze binaries by the plan it is given, so that task-bench.sh compares
# them side by side on the same repository and kept lanes: `plan-N.toml` with N odd runs
# $BEFORE_BIN, with N even $AFTER_BIN; anything else (no plan) runs $AFTER_BIN.
#
#   BEFORE_BIN=/path/old AFTER_BIN=/path/new BREEZE=$PWD/scripts/bench/alternate.sh RUNS=7 \
#     scripts/bench/task-bench.sh 100000
set -euo pipefail
: "${BEFORE_BIN:?the binary for odd plans}" "${AFTER_BIN:?the binary for even plans}"
for arg in "$@"; do
  case "$arg" in
    *plan-*.toml)
      n=${arg##*plan-}
      n=${n%.toml}
      if [[ "$n" =~ ^[0-9]+$ ]] && (( n % 2 == 1 )); then exec "$BEFORE_BIN" "$@"; fi
      ;;
  esac
done
exec "$AFTER_BIN" "$@"
