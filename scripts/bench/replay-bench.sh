#!/usr/bin/env bash
# The replay benchmark (issues 20 and 23): the last N first-parent changes of a real
# repository replayed as a breeze run — one task per change, a shell worker applying exactly
# that change after a fixed work time, breeze's scripted reviewer — with makespan, lanes
# used, the list-scheduling bound, verify time per landing, random kills, and the check that
# main ends equal to upstream. See scripts/bench/README.md.
#
#   scripts/bench/replay-bench.sh CLONE [--changes 30] [--worker-seconds 2] [--lanes 3]
#       [--rev HEAD] [--verify CMD] [--kills K] [--repeat R] [--seed S] [--work DIR] [--json]
#
# CLONE is a local clone of the repository to replay; it is only read, and nothing of it
# belongs in this source tree. BREEZE=path/to/breeze uses that binary instead of building.
set -euo pipefail
clone=${1:?usage: replay-bench.sh CLONE [options]  (see scripts/bench/README.md)}
shift
clone=$(realpath "$clone")
cd "$(dirname "$0")/../.."
if [ -z "${BREEZE:-}" ]; then
  cargo build --quiet --release --locked -p breeze-cli
  BREEZE=${CARGO_TARGET_DIR:-target}/release/breeze
fi
exec cargo run --quiet --release --locked -p breeze-test-support --example replay_bench -- \
  --breeze "$(realpath "$BREEZE")" --upstream "$clone" "$@"
