#!/usr/bin/env bash
# RSS of a uaserver before, during and after hostile clients, for each way
# of giving memory back (memory_trim 0: none, 1: pools trimmed to their
# recent peak, 2: malloc_trim, 3: both). Each attack runs against a fresh
# server (policy None, 2 loops). The attacks are benchmarks/attack_rss.py;
# docs/Benchmarks.md ("Memory under attack") has the results.
# Usage: benchmarks/attack_rss.sh [BUILD_DIR] [ROUNDS] [TRIM_MODES]
# Markdown rows on stdout: mode, attack, round, RSS before/peak/during/after
# (MiB) and after - before.
set -euo pipefail
build=${1:-build/rel}
rounds=${2:-3}
modes=${3:-"0 1 2 3"}
server=$build/server/uaserver
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$server" ] || { echo "no $server: build Release first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT

# attack name, extra attack options, extra [transport] settings
attacks=(
  "never-read|--conns 50 --hold 4|"
  "connect|--conns 1000 --hold 3|"
  "chunks|--conns 40 --hold 3|memory_budget = 268435456"
)

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

echo "| memory_trim | attack | round | before | peak | during | after | after - before | detail |"
echo "|---|---|---|---|---|---|---|---|---|"
for mode in $modes; do
  for spec in "${attacks[@]}"; do
    IFS='|' read -r name opts extra <<<"$spec"
    for round in $(seq 1 "$rounds"); do
      printf '[server]\nlog_level = error\n[transport]\nmemory_trim = %s\n%s\n' \
        "$mode" "$extra" >"$tmp/server.ini"
      "$server" --config "$tmp/server.ini" --port 0 --threads 2 --security None \
        --bind 127.0.0.1 --log-level info >"$tmp/server.log" 2>&1 &
      pid=$!
      port=""
      for _ in $(seq 100); do
        port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$tmp/server.log" | head -1)
        [ -n "$port" ] && break
        sleep 0.1
      done
      [ -n "$port" ] || { echo "the server did not start" >&2; cat "$tmp/server.log" >&2; exit 1; }
      # shellcheck disable=SC2086
      read -r _ before peak during after detail < <(python3 "$here/attack_rss.py" "$name" \
        --pid "$pid" --port "$port" $opts)
      kill "$pid"
      wait "$pid" 2>/dev/null || true
      pid=""
      echo "| $mode | $name | $round | $(mib "$before") | $(mib "$peak") | $(mib "$during") |" \
        "$(mib "$after") | $(mib $((after - before))) | $detail |"
    done
  done
done
