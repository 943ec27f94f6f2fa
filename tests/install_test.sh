#!/usr/bin/env bash
# Installs a configured and built uastack tree into a temporary prefix and
# builds the consumer of tests/consumer against it through find_package and
# through pkg-config, then runs both (a server on port 0 and a client
# session to it). Also checks that the shared libraries export only their
# headers' names. Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
p=$tmp/prefix
for f in include/ua/server.h include/ua/client.h include/ua/types_gen.h include/ua/nodeids.h \
         lib/libuastack.so.0 lib/libuaserver.so.0 lib/libuaclient.so.0 lib/libuastack.a \
         lib/cmake/uastack/uastackConfig.cmake lib/cmake/uastack/uastackConfigVersion.cmake \
         lib/pkgconfig/uastack-server.pc lib/pkgconfig/uastack-client.pc bin/uaserver bin/uacli; do
  [ -e "$p/$f" ] || fail "$f not installed"
done
[ ! -e "$p/etc" ] || fail "a plain install wrote etc/ (the service files are cpack's only)"
soname=$(objdump -p "$p/lib/libuaserver.so" | awk '/SONAME/ {print $2}')
[ "$soname" = libuaserver.so.0 ] || fail "SONAME of libuaserver.so is '$soname'"
# Internal functions stay hidden; the public ones are exported.
syms=$(nm -D --defined-only "$p/lib/libuaserver.so")
grep -q ' uas_server_new$' <<<"$syms" || fail "uas_server_new not exported"
if grep -q ' uas_server_security_init$' <<<"$syms"; then
  fail "internal uas_server_security_init exported"
fi

export LD_LIBRARY_PATH=$p/lib
cmake -S "$src/tests/consumer" -B "$tmp/pkg" -DUAS_CONSUMER_USE=package \
      -DCMAKE_PREFIX_PATH="$p" >/dev/null
cmake --build "$tmp/pkg" >/dev/null
libs=$(ldd "$tmp/pkg/consumer")
grep -q "libuaserver.so.0 => $p/lib" <<<"$libs" || fail "find_package consumer not linked to the installed libuaserver"
out=$("$tmp/pkg/consumer") || fail "find_package consumer run"
echo "find_package: $out"

PKG_CONFIG_PATH=$p/lib/pkgconfig cmake -S "$src/tests/consumer" -B "$tmp/pc" \
      -DUAS_CONSUMER_USE=pkgconfig >/dev/null
PKG_CONFIG_PATH=$p/lib/pkgconfig cmake --build "$tmp/pc" >/dev/null
out=$("$tmp/pc/consumer") || fail "pkg-config consumer run"
echo "pkg-config (CMake): $out"
# And by hand, as a Makefile would (the flags are meant to split).
# shellcheck disable=SC2046
PKG_CONFIG_PATH=$p/lib/pkgconfig cc -o "$tmp/cc-consumer" "$src/tests/consumer/consumer.c" \
      $(PKG_CONFIG_PATH=$p/lib/pkgconfig pkg-config --cflags --libs uastack-server uastack-client)
out=$("$tmp/cc-consumer") || fail "cc + pkg-config consumer run"
echo "pkg-config (cc): $out"
echo "install test passed: $p (find_package, pkg-config)"
