#!/usr/bin/env bash
# Soak of uaserver: 100,000 orderly client lives (connect, CreateSession,
# ActivateSession, Read, close) and 100,000 cut short at random points,
# with the server's RSS sampled; Markdown on stdout (docs/Benchmarks.md,
# "Soak"), progress on stderr; exits 1 when RSS is not flat within 8 MiB
# after the warm-up. Needs a Release build with benchmarks:
#   cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DUA_BUILD_BENCHMARKS=ON
#   cmake --build build/release --target uaserver soak
# Usage: benchmarks/soak.sh [BUILD_DIR] [soak options, e.g. --cycles 20000]
set -euo pipefail
build=${1:-build/release}
shift || true
for f in "$build/server/uaserver" "$build/benchmarks/soak"; do
  [ -x "$f" ] || { echo "no $f: build the uaserver and soak targets first" >&2; exit 2; }
done
dir=$(mktemp -d /tmp/uas-soak.XXXXXX)
trap 'rm -rf "$dir"' EXIT
echo "soak: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" >&2
"$build/benchmarks/soak" --server "$build/server/uaserver" --dir "$dir" "$@"
