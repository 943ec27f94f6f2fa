#!/usr/bin/env bash
# uacli tells apart a malformed URL, an unknown host and a refused
# connection (all three were BadTcpEndpointUrlInvalid), exiting 1 for each.
set -uo pipefail
uacli=$1
pass=0 failed=0
check() { # name, stderr pattern, url
  local name=$1 pattern=$2 url=$3 err rc
  err=$(timeout 30 "$uacli" --timeout 3000 read "$url" i=2258 2>&1 >/dev/null); rc=$?
  if [ "$rc" -eq 1 ] && grep -Eq -- "$pattern" <<<"$err"; then
    pass=$((pass + 1))
  else
    echo "FAIL: $name (exit $rc): $err"
    failed=$((failed + 1))
  fi
}
# A uacli of the minimal profile (UA_MINIMAL) names codes by value.
check "malformed URL" "(BadTcpEndpointUrlInvalid|0x80830000) \(not an endpoint URL" "http://127.0.0.1:4840"
check "port out of range" "(BadTcpEndpointUrlInvalid|0x80830000)" "opc.tcp://127.0.0.1:70000"
# Without a resolver the lookup may time out instead of failing: both say so.
check "unknown host" "((BadNotFound|0x803E0000) \(unknown host name|BadTimeout|0x800A0000)" \
      "opc.tcp://no-such-host.invalid:4840"
check "refused" "(BadConnectionRejected|0x80AC0000) \(connection refused" "opc.tcp://127.0.0.1:1"
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
