#!/usr/bin/env bash
# Checks the Debian package made by `cpack -G DEB` without installing it:
# its control data and contents, the unit file (systemd-analyze verify when
# there), the default configuration accepted by uaserver, and the extracted
# uaserver run with the unit's ExecStart arguments (temporary paths, port
# 0), as an unprivileged user when run as root, read with the extracted
# uacli. Usage: package_test.sh PACKAGE.deb
set -euo pipefail
deb=$1
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

info=$(dpkg-deb -I "$deb")
for dep in libssl3 libev4 libsodium23 libinih1; do
  grep -q "^ Depends:.*$dep" <<<"$info" || fail "Depends lacks $dep"
done
contents=$(dpkg-deb -c "$deb")
for f in usr/bin/uaserver usr/bin/uacli usr/bin/uapki usr/lib/systemd/system/uaserver.service \
         usr/lib/sysusers.d/uastack.conf etc/uastack/uaserver.conf usr/include/ua/server.h \
         usr/include/ua/types_gen.h usr/lib/libuaserver.so.0 usr/lib/libuastack.a \
         usr/lib/cmake/uastack/uastackConfig.cmake usr/lib/pkgconfig/uastack-server.pc; do
  grep -q " \./$f\( \|$\)" <<<"$contents" || fail "$f not in the package"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/uastack/uaserver.conf \
  || fail "uaserver.conf is not a conffile"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst | grep -q "uastack" || fail "postinst makes no user"

root=$tmp/root
dpkg-deb -x "$deb" "$root"
unit=$root/usr/lib/systemd/system/uaserver.service
for line in "User=uastack" "StateDirectory=uastack" "ConfigurationDirectory=uastack" \
            "ProtectSystem=strict" "ProtectHome=yes" "NoNewPrivileges=yes" "PrivateTmp=yes" \
            "CapabilityBoundingSet=" "AmbientCapabilities=" \
            "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX" "LockPersonality=yes" \
            "MemoryDenyWriteExecute=yes" "SystemCallFilter=@system-service" "Restart=on-failure"; do
  grep -qx "$line" "$unit" || fail "unit lacks $line"
done
grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' "$unit" || fail "unit lacks ExecReload (SIGHUP)"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[ "$exec_start" = "/usr/bin/uaserver --config /etc/uastack/uaserver.conf --pki /var/lib/uastack/pki" ] \
  || fail "unexpected ExecStart: $exec_start"
if command -v systemd-analyze >/dev/null; then
  # Verified with ExecStart pointing at the extracted binary (the real
  # path is not installed here).
  sed "s|^ExecStart=/usr/bin/uaserver|ExecStart=$root/usr/bin/uaserver|" "$unit" >"$tmp/uaserver.service"
  # Unknown keys are only warnings there: any message fails the test.
  msg=$(systemd-analyze verify "$tmp/uaserver.service" 2>&1) || fail "systemd-analyze verify: $msg"
  [ -z "$msg" ] || fail "systemd-analyze verify: $msg"
else
  echo "systemd-analyze not found: unit verification skipped"
fi

conf=$root/etc/uastack/uaserver.conf
"$root/usr/bin/uaserver" --config "$conf" --print-config >/dev/null \
  || fail "uaserver refuses the packaged uaserver.conf"

# The service's command line, with the state folder in $tmp and port 0, as
# user nobody when root (as the unit's dedicated user would).
state=$tmp/state
mkdir -p "$state"
chmod 755 "$tmp"
run=()
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  chown nobody "$state"
  run=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups --no-new-privs)
fi
"${run[@]}" "$root/usr/bin/uaserver" --config "$conf" --pki "$state/pki" --port 0 \
  >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$tmp/out" && break; sleep 0.1; done
url=$(sed -n 's/^uaserver listening on \(opc.tcp:[^ ]*\).*/\1/p' "$tmp/out")
[ -n "$url" ] || { cat "$tmp/err" >&2; fail "the extracted uaserver did not start"; }
[ -d "$state/pki/own" ] || fail "no PKI made in the state folder"
if [ ${#run[@]} -gt 0 ]; then
  owner=$(stat -c %U "$state/pki")
  [ "$owner" = nobody ] || fail "PKI owned by $owner, not the service user"
fi
HOME=$tmp "$root/usr/bin/uacli" read "$url" i=2258 >"$tmp/read" || fail "uacli read failed"
grep -q "Status: *Good" "$tmp/read" || fail "uacli read: $(cat "$tmp/read")"
# systemctl reload: the packaged configuration read again, still serving.
kill -HUP $pid
for _ in $(seq 50); do grep -q "reload: configuration read again" "$tmp/err" && break; sleep 0.1; done
grep -q "reload: configuration read again" "$tmp/err" || fail "no reload on SIGHUP: $(tail -3 "$tmp/err")"
HOME=$tmp "$root/usr/bin/uacli" read "$url" i=2258 >/dev/null || fail "uacli read after the reload"
kill $pid
wait $pid || true
pid=
echo "package test passed: $deb"
