#!/usr/bin/env bash
# The minimal profile (UA_MINIMAL) in use: its embed_example serves Read,
# Write, Call and data-change subscriptions to uacli (of this build or of
# the full build), refuses event monitoring with a clear status, and links
# neither OpenSSL, libsodium nor inih. UAS_RUNNER runs a cross-built
# example, e.g. UAS_RUNNER="qemu-arm-static -L /".
set -uo pipefail
example=$1 uacli=$2
out=$(mktemp)
# shellcheck disable=SC2086
${UAS_RUNNER:-} "$example" --port 0 --exit-after 60000 >"$out" 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 200); do grep -q "listening on" "$out" && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(opc.tcp:[^ ]*\).*/\1/p' "$out")
[ -n "$url" ] || { echo "example did not start"; exit 1; }
pass=0 failed=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

# readelf, not ldd: it reads a cross-built program too.
if readelf -d "$example" | grep NEEDED | grep -E 'libcrypto|libssl|libsodium|libinih'; then
  bad "a crypto or INI library is linked"; else ok; fi
o=$(timeout 10 "$uacli" read "$url" 'ns=2;s=Sensor.Temperature' 2>&1)
if grep -q 'Type: *Double' <<<"$o"; then ok; else bad "read: $o"; fi
if timeout 10 "$uacli" write "$url" 'ns=2;s=Sensor.SetPoint' double 50 >/dev/null 2>&1; then
  bad "out-of-range write accepted"; else ok; fi
timeout 10 "$uacli" write "$url" 'ns=2;s=Sensor.SetPoint' double 25 >/dev/null 2>&1 || bad "write 25"
o=$(timeout 10 "$uacli" read "$url" 'ns=2;s=Sensor.SetPoint' 2>&1)
if grep -q 'Value: *25' <<<"$o"; then ok; else bad "read back 25: $o"; fi
timeout 10 "$uacli" call "$url" 'ns=2;s=Sensor' 'ns=2;s=Sensor.Reset' >/dev/null 2>&1 || bad "reset"
o=$(timeout 10 "$uacli" read "$url" 'ns=2;s=Sensor.SetPoint' 2>&1)
if grep -q 'Value: *21.5' <<<"$o"; then ok; else bad "reset value: $o"; fi
# A subscription: the first value, then the write that follows.
timeout 20 "$uacli" --interval 100 --count 2 subscribe "$url" 'ns=2;s=Sensor.SetPoint' >"$out.sub" 2>&1 &
sub=$!
for _ in $(seq 50); do grep -q "Sensor.SetPoint = " "$out.sub" && break; sleep 0.1; done
timeout 10 "$uacli" write "$url" 'ns=2;s=Sensor.SetPoint' double 31 >/dev/null 2>&1
wait $sub; rc=$?
if [ "$rc" -eq 0 ] && grep -q 'Sensor.SetPoint = 31$' "$out.sub"; then ok; else
  bad "subscription (exit $rc): $(cat "$out.sub")"; fi
rm -f "$out.sub"
# Events are not in the profile: the monitored item is refused, clearly.
o=$(timeout 10 "$uacli" --duration 1 --events subscribe "$url" i=2253 2>&1)
# (a uacli of the minimal profile itself names the code by value)
if grep -Eq 'BadMonitoredItemFilterUnsupported|0x80440000' <<<"$o"; then ok; else bad "event item: $o"; fi
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
