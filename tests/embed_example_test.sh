#!/usr/bin/env bash
# Runs the program of docs/Embedding.md and uses its nodes over the network
# with uacli: the data source, the write callback's veto, the method.
set -euo pipefail
example=$1 uacli=$2
out=$(mktemp)
"$example" --port 0 --exit-after 20000 >"$out" 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$out" && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(opc.tcp:[^ ]*\).*/\1/p' "$out")
[ -n "$url" ] || { echo "example did not start"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
"$uacli" read "$url" 'ns=2;s=Sensor.Temperature' | grep -q Double || fail "temperature read"
"$uacli" write "$url" 'ns=2;s=Sensor.SetPoint' double 50 && fail "out-of-range write accepted"
"$uacli" write "$url" 'ns=2;s=Sensor.SetPoint' double 25 >/dev/null || fail "write 25"
"$uacli" read "$url" 'ns=2;s=Sensor.SetPoint' | grep -q 25 || fail "read back 25"
"$uacli" call "$url" 'ns=2;s=Sensor' 'ns=2;s=Sensor.Reset' >/dev/null || fail "reset"
"$uacli" read "$url" 'ns=2;s=Sensor.SetPoint' | grep -q 21.5 || fail "reset value"
echo "1 passed, 0 failed"
