#!/usr/bin/env bash
# Heap held by the embedding example for one client: one session with one
# subscription of 10 monitored items (docs/Benchmarks.md, "Embedded
# footprint"). The stack's allocation counters (uas_mem_get_stats, with
# libev's allocations routed through them) are printed by embed_example on
# SIGUSR1: idle after listen; after a first client's Read (its connection
# leaves pooled buffers and the loop's grown arena behind, reused by later
# clients); while uacli holds the session and the subscription; after it
# has gone.
# Usage: benchmarks/embed_heap.sh EMBED_EXAMPLE UACLI
set -euo pipefail
example=$1 uacli=$2
out=$(mktemp)
"$example" --port 0 --exit-after 60000 >"$out" 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$out" && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(opc.tcp:[^ ]*\).*/\1/p' "$out")
report() { # the next "heap:" line after SIGUSR1
  local n; n=$(grep -c '^heap:' "$out" || true)
  kill -USR1 $pid
  for _ in $(seq 50); do [ "$(grep -c '^heap:' "$out" || true)" -gt "$n" ] && break; sleep 0.1; done
  grep "^heap:" "$out" | tail -n 1 | awk "{print \$2}"; grep "^heap:" "$out" | tail -n 1 >&2
}
idle=$(report)
"$uacli" read "$url" 'ns=2;s=Sensor.Temperature' >/dev/null
warm=$(report)
nodes=('ns=2;s=Sensor.Temperature' 'ns=2;s=Sensor.SetPoint' i=2254 i=2255 i=2256 i=2257 i=2258
       i=2259 i=2260 i=2267)
"$uacli" --interval 100 --duration 4 subscribe "$url" "${nodes[@]}" >"$out.sub" 2>&1 &
sub=$!
for _ in $(seq 50); do [ "$(grep -c ' = ' "$out.sub" || true)" -ge 10 ] && break; sleep 0.1; done
sleep 1
held=$(report)
wait $sub || { echo "uacli subscribe failed: $(cat "$out.sub")" >&2; exit 1; }
items=$(grep -o ' [^ ]* = ' "$out.sub" | sort -u | wc -l)
rm -f "$out.sub"
sleep 0.5
after=$(report)
echo "embed_example: $example"
echo "monitored items seen: $items"
echo "heap held idle (listening):                   $idle bytes"
echo "after a first client (pools, arena):          $warm bytes (+$((warm - idle)))"
echo "heap held with 1 session, 1 subscription x10: $held bytes"
echo "one session + subscription x10 + connection:  $((held - warm)) bytes"
echo "heap held after the client left:              $after bytes"
