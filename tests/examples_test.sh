#!/usr/bin/env bash
# Runs an example of examples/ (a program driving the server from its own
# poll() or libev loop) and uses it with uacli: a Read, a second Read that
# shows the program's own timer ran between the server's work, and a
# subscription that receives the program's changes. UAS_RUNNER runs a
# cross-built example (qemu-user).
set -euo pipefail
example=$1 uacli=$2
out=$(mktemp)
# shellcheck disable=SC2086
${UAS_RUNNER:-} "$example" --port 0 --exit-after 60000 >"$out" 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 200); do grep -q "listening on" "$out" && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(opc.tcp:[^ ]*\).*/\1/p' "$out")
[ -n "$url" ] || { echo "example did not start"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
value() { timeout 10 "$uacli" read "$url" 'ns=2;s=Counter' | sed -n 's/^Value: *//p'; }
a=$(value) || fail "read"
[ -n "$a" ] || fail "no value"
sleep 0.5
b=$(value) || fail "second read"
[ "$b" -gt "$a" ] || fail "the program's timer did not run: $a then $b"
sub=$(timeout 10 "$uacli" --interval 100 --count 3 subscribe "$url" 'ns=2;s=Counter') ||
  fail "subscribe: $sub"
[ "$(grep -c 'ns=2;s=Counter = ' <<<"$sub")" -eq 3 ] || fail "3 changes expected: $sub"
# A clean stop: the program deletes the server and exits 0.
kill -TERM $pid
wait $pid || fail "exit status $?"
trap 'rm -f "$out"' EXIT
echo "1 passed, 0 failed"
