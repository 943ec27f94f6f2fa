#!/usr/bin/env bash
# The hostile clients of issue 12 against uaserver in its default
# configuration (plus --security None and a temporary PKI): each scenario
# gets a fresh server; the table shows the server's RSS (MiB, from
# /proc/PID/statm) before the client, at its peak, when it is gone, 5 s
# later, and whether a normal client (session + Read) was served after it.
# Markdown on stdout, the server logs in $TMPDIR/uastack-hostile-*.log.
# Usage: benchmarks/hostile.sh [BUILD_DIR] [threads]
set -euo pipefail
build=${1:-build/release}
threads=${2:-2}
server=$build/server/uaserver
bench=$build/benchmarks/hostile_bench
for x in "$server" "$bench"; do
  [ -x "$x" ] || { echo "no $x: build Release with UA_BUILD_BENCHMARKS=ON" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
pid=
echo "| client | before | peak | gone | 5 s later | normal client served |"
echo "|---|--:|--:|--:|--:|---|"
for scenario in "orphans 1000 9 10" "refresh 60000" "call 60000"; do
  log=${TMPDIR:-/tmp}/uastack-hostile-${scenario%% *}.log
  "$server" --port 0 --threads "$threads" --security None --pki "$tmp/pki" \
    --log-level warn >"$log" 2>&1 &
  pid=$!
  url=
  for _ in $(seq 50); do
    url=$(sed -n 's/^uaserver listening on //p' "$log")
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || { echo "server did not start: $log" >&2; exit 1; }
  # shellcheck disable=SC2086
  "$bench" "$url" $pid $scenario | grep '^|' || true
  kill $pid; wait $pid 2>/dev/null || true
done
echo
echo "Run record: $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores," \
  "$(uname -sr), server --threads $threads"
