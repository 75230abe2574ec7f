#!/usr/bin/env bash
# Measures what issue 25 budgets: the README's two commands and `.ci/run`, each
# on a fresh clone of this checkout's HEAD with an empty target/ (crates must
# already be downloaded: run `cargo fetch` once first).
#
#   bash scripts/measure-suite.sh [quickstart|test|ci ...]   (default: all three)
#
# For each command it prints the wall time, CPU time (user + sys) and peak RSS
# from `/usr/bin/time -v`, and `du -sh target` afterwards. The full output of
# each command is kept in $OUT (default /tmp/batchrules-measure).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
rev="$(git -C "$src" rev-parse --short HEAD)"
OUT="${OUT:-/tmp/batchrules-measure}"
mkdir -p "$OUT"
what=("$@")
[ ${#what[@]} -eq 0 ] && what=(quickstart test ci)

for w in "${what[@]}"; do
    case "$w" in
        quickstart) cmd=(cargo run --example quickstart) ;;
        test) cmd=(cargo test --workspace) ;;
        ci) cmd=(bash .ci/run) ;;
        *) echo "unknown step $w (quickstart, test or ci)" >&2; exit 2 ;;
    esac
    dir="$(mktemp -d /tmp/batchrules-clone.XXXXXX)"
    git clone -q "$src" "$dir"
    log="$OUT/$w-$rev.log"
    rc=0
    (cd "$dir" && /usr/bin/time -v -o "$OUT/$w-$rev.time" "${cmd[@]}" >"$log" 2>&1) || rc=$?
    t="$OUT/$w-$rev.time"
    wall=$(grep 'Elapsed (wall clock)' "$t" | awk '{print $NF}')
    user=$(grep 'User time' "$t" | awk '{print $NF}')
    sys=$(grep 'System time' "$t" | awk '{print $NF}')
    # (No target/ when a step failed before building anything.)
    disk=$(du -sh "$dir/target" 2>/dev/null | cut -f1 || true)
    printf '%-10s %s  rc=%s  wall %s  cpu %s + %s s  target/ %s  (log %s)\n' \
        "$w" "$rev" "$rc" "$wall" "$user" "$sys" "${disk:-none}" "$log"
    rm -rf "$dir"
done
