#!/usr/bin/env bash
# uacli subscribe against uaserver: a line per value change (a write shows
# up), a line per event of the Server object with --events, a clear error
# for a node that cannot be monitored.
set -uo pipefail
uaserver=$1 uacli=$2
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
"$uaserver" --contract --port 0 --bind 127.0.0.1 --threads 1 --event-rate 20 >"$tmp/out" 2>/dev/null &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$tmp/out" && break; sleep 0.1; done
url=$(sed -n 's/^uaserver listening on //p' "$tmp/out")
pass=0 failed=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
[ -n "$url" ] || { echo "server did not start"; exit 1; }

# The initial value, then the written one.
timeout 20 "$uacli" --interval 100 --count 2 subscribe "$url" 'ns=1;i=1001' >"$tmp/sub" 2>&1 &
sub=$!
for _ in $(seq 50); do grep -q "ns=1;i=1001 = " "$tmp/sub" && break; sleep 0.1; done
"$uacli" write "$url" 'ns=1;i=1001' int32 42 >/dev/null
wait $sub; rc=$?
if [ "$rc" -eq 0 ] && grep -Eq ' ns=1;i=1001 = 42$' "$tmp/sub"; then ok; else
  bad "value change (exit $rc): $(cat "$tmp/sub")"; fi

out=$(timeout 20 "$uacli" --interval 100 --count 2 --events subscribe "$url" i=2253 2>&1); rc=$?
if [ "$rc" -eq 0 ] && [ "$(grep -c '^event from i=2253: .*SourceName="uastack.EventSource"' <<<"$out")" -eq 2 ]; then
  ok; else bad "events (exit $rc): $out"; fi

out=$(timeout 20 "$uacli" --duration 1 subscribe "$url" 'ns=1;i=999999' 2>&1); rc=$?
if [ "$rc" -eq 1 ] && grep -q "monitoring ns=1;i=999999 failed: BadNodeIdUnknown" <<<"$out"; then ok; else
  bad "unknown node (exit $rc): $out"; fi

out=$(timeout 20 "$uacli" --count 0 subscribe "$url" i=2258 2>&1); rc=$?
if [ "$rc" -eq 2 ]; then ok; else bad "--count 0 is a usage error (exit $rc)"; fi
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
