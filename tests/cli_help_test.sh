#!/usr/bin/env bash
# The programs' help: printed on stdout with exit 0, listing what exists, and
# never starting a server. Bad values are refused with exit 2.
set -uo pipefail
uaserver=$1 example=$2
pass=0 failed=0
check() { # name, command..., expected exit, stdout pattern
  local name=$1 want=$2 pattern=$3; shift 3
  local out rc
  out=$(timeout 10 "$@" 2>/dev/null); rc=$?
  if [ "$rc" -eq "$want" ] && grep -q -- "$pattern" <<<"$out"; then
    pass=$((pass + 1))
  else
    echo "FAIL: $name (exit $rc, want $want; stdout must match '$pattern')"
    failed=$((failed + 1))
  fi
}
check "uaserver --help lists capacity" 0 "--self-load capacity" "$uaserver" --help
check "uaserver --help lists the scenarios" 0 "read|write|browse|sub|sessions|counters|events" "$uaserver" --help
check "--self-load --help on stdout" 0 "uaserver --self-load capacity" "$uaserver" --self-load --help
check "--self-load capacity --help" 0 "usage: uaserver --self-load capacity" "$uaserver" --self-load capacity --help
check "embed_example --help" 0 "usage: embed_example" "$example" --help
check "embed_example bad port" 2 "" "$example" --port abc
check "embed_example unknown option" 2 "" "$example" --bogus
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
