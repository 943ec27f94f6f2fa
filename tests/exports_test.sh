#!/usr/bin/env bash
# Symbol visibility (ua/export.h): every symbol a shared library exports
# (nm -D) is a uas_* name, and in the static libraries' objects an
# internal function is hidden while a public one is default.
# Usage: exports_test.sh LIBUASERVER_A SHARED_LIB...
set -uo pipefail
static=$1; shift
failed=0
for lib in "$@"; do
  bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^uas_' || true)
  n=$(nm -D --defined-only "$lib" | wc -l)
  if [ -n "$bad" ] || [ "$n" -eq 0 ]; then
    echo "FAIL: $lib exports $n symbols, not uas_*: $bad"; failed=1
  fi
done
vis() { readelf -sW "$static" | awk -v n="$1" '$8 == n && $7 != "UND" {print $6; exit}'; }
[ "$(vis uas_server_new)" = DEFAULT ] || { echo "FAIL: uas_server_new is $(vis uas_server_new)"; failed=1; }
[ "$(vis uas_dispatch_accept)" = HIDDEN ] || {
  echo "FAIL: the internal uas_dispatch_accept is $(vis uas_dispatch_accept)"; failed=1; }
[ "$failed" -eq 0 ] && echo "1 passed, 0 failed"
exit $failed
