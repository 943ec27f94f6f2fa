#!/usr/bin/env bash
# Produces the measurements of docs/Benchmarks.md from a Release build:
# the codec and secure channel micro-benchmarks and the --self-load request
# scenarios, each over several rounds (median and range). Markdown on stdout,
# progress on stderr.
# Usage: benchmarks/run.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build/release}
rounds=${2:-5}
server=$build/server/uaserver
[ -x "$server" ] || { echo "no $server: build Release first" >&2; exit 2; }
echo "## Codec micro-benchmark"
echo
"$build/benchmarks/codec_bench" --rounds "$rounds"
echo
echo "## Secure channel micro-benchmark"
echo
"$build/benchmarks/secure_bench" --rounds "$rounds"
echo
# Every --self-load table (request throughput none vs encrypted, publish and
# event delivery, session scalability, capability matrix); the result block
# of each row goes to capacity-blocks.md. A failed verdict exits 1 but its
# row still belongs in the report.
echo "self-load capacity (about 20 minutes)" >&2
{ "$server" --self-load capacity --rounds "$rounds" --out capacity-blocks.md || true; } | \
  sed 's/^#/##/'

# The same client against node-opcua's server (the pinned peer of
# tests/interop), for a side-by-side row; its CPU comes from its /proc.
if [ -d tests/interop/node_modules ]; then
  port=48500
  node tests/interop/lib/contract_server.mjs $port >/tmp/uastack-bench-peer.log 2>&1 &
  peer=$!
  trap 'kill $peer 2>/dev/null' EXIT
  for _ in $(seq 100); do grep -q listening /tmp/uastack-bench-peer.log && break; sleep 0.2; done
  echo "self-load read --target node-opcua" >&2
  "$server" --self-load read --target opc.tcp://127.0.0.1:$port --target-pid $peer \
    --sessions 10 --inflight 10 --duration 10 --warmup 3 --rounds "$rounds" | \
    awk '/^### Summary/{p=1} p'
fi
