#!/usr/bin/env bash
# The command-line guide's block (docs/guide/cli.md), in order, on TPC-H lineitem at a small scale, then the demo.
# Run from a checkout after the README's install command:
#   examples/readme-walkthrough.sh [WORKDIR] [SCALE]
set -euo pipefail
W=${1:-$(mktemp -d)}
SCALE=${2:-0.05}
export PATH="$(cd "$(dirname "$0")/.." && pwd)/.venv/bin:$PATH"
lakesieve --version
tpchgen-cli parquet -s "$SCALE" --tables lineitem --output-dir "$W/src"
SRC=$(ls -d "$W"/src/lineitem* | head -1)
T=$W/lineitem
time lakesieve write "$T" --format hudi --from "$SRC" \
    --record-key l_orderkey,l_linenumber --mode bulk_insert --file-groups 64
time lakesieve index build "$T" --column l_orderkey --type sieve
lakesieve index list "$T"
lakesieve index describe "$T" l_orderkey_sieve
time lakesieve explain "$T" --where "l_orderkey BETWEEN 100 AND 200" --json
lakesieve query "$T" --where "l_orderkey = 32" --output "$W/rows"
lakesieve query "$T" --where "l_orderkey >= 0" --engine spark | tail -2
lakesieve query "$T" --where "l_orderkey = 32" --engine arrow
time lakesieve index refresh "$T"
time lakesieve index compact "$T"
lakesieve index vacuum "$T"
lakesieve index check "$T"
lakesieve index repair "$T"
time lakesieve compare "$T" --column l_orderkey --html "$W/report.html" --json > "$W/cmp.json"
lakesieve advise --from-json "$W/cmp.json" --workload point=0.7,range_0.1pct=0.3 --toml
time lakesieve demo
echo "walk-through done; data in $W"
