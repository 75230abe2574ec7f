#!/usr/bin/env bash
# Runs criterion benchmark binaries in turn, round after round, in one
# sitting, and prints a table of their medians side by side (the machines
# are shared and noisy: interleaving puts the same noise on every column).
#
#   scripts/bench-rounds.sh ROUNDS OUTDIR LABEL=BINARY [LABEL=BINARY ...] -- CRITERION-ARGS
#
# Each BINARY is a built benchmark (`cargo bench --features bench --bench
# workloads --no-run` prints its path; copy it aside before building the
# other side). Example, one core, two rounds, before against after:
#
#   taskset -c 0 scripts/bench-rounds.sh 2 /tmp/rounds before=/tmp/w-before after=/tmp/w-after \
#       -- 'W1_|W8_|W12_' --warm-up-time 1 --measurement-time 3
#
# Prefix the command with `taskset -c 0` for one-core figures: the
# binaries inherit the affinity, and rayon sizes its pool from it.
set -euo pipefail
rounds=$1 out=$2
shift 2
sides=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    sides+=("$1")
    shift
done
[ "${1:-}" = "--" ] && shift
mkdir -p "$out"
for side in "${sides[@]}"; do echo "${side%%=*}"; done > "$out/labels"
for round in $(seq 1 "$rounds"); do
    for side in "${sides[@]}"; do
        label=${side%%=*} bin=${side#*=}
        echo "== round $round: $label ($(date -u +%H:%M:%S))" >&2
        "$bin" --bench "$@" > "$out/$label-$round.txt" 2>&1
    done
done
python3 "$(dirname "$0")/bench-table.py" "$out"
