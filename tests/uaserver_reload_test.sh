#!/usr/bin/env bash
# SIGHUP: uaserver reads its configuration again (the log level changes at
# once, a key that needs a restart is named, an invalid file keeps the
# running configuration) and reads the users file again even when it was
# rewritten in place with its old size and time, which the file watch
# cannot see.
set -uo pipefail
uaserver=$1 uacli=$2 uapki=$3
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 failed=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
# Waits up to 5 s for a pattern in the server's log.
wait_log() {
  for _ in $(seq 50); do grep -q -- "$1" "$tmp/err" && return 0; sleep 0.1; done
  return 1
}
login() { # password; succeeds when a UserName session reads the ServerState
  UASTACK_PASSWORD=$1 "$uacli" --user alice --security Basic256Sha256:SignAndEncrypt \
    --pki "$tmp/cli" --accept-server-cert read "$url" i=2259 >/dev/null 2>&1
}

pki=$tmp/pki
printf 'pw-one\n' | "$uapki" --store "$pki" user add alice --password-stdin >/dev/null 2>&1
cp -p "$pki/users" "$tmp/users.one"
printf 'pw-two\n' | "$uapki" --store "$pki" --users "$tmp/users.two" user add alice \
  --password-stdin >/dev/null 2>&1
printf '[server]\nlog_level = warn\n[transport]\nmax_connections = 100\n' >"$tmp/a.ini"
"$uaserver" --config "$tmp/a.ini" --port 0 --bind 127.0.0.1 --threads 1 --pki "$pki" \
  --auto-accept >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$tmp/out" && break; sleep 0.1; done
url=$(sed -n 's/^uaserver listening on //p' "$tmp/out")
[ -n "$url" ] || { echo "FAIL: server did not start: $(cat "$tmp/err")"; exit 1; }

# The log level and a key that needs a restart.
printf '[server]\nlog_level = debug\n[transport]\nmax_connections = 50\n' >"$tmp/a.ini"
kill -HUP "$pid"
if wait_log "reload: configuration read again (log level debug)"; then ok; else
  bad "reload line: $(tail -3 "$tmp/err")"; fi
if grep -q "reload: \[transport\] max_connections changed; it takes effect at the next start" \
  "$tmp/err"; then ok; else bad "restart key named: $(tail -5 "$tmp/err")"; fi
"$uacli" read "$url" i=2259 >/dev/null 2>&1
if wait_log "DEBUG"; then ok; else bad "debug lines after the reload"; fi

# An invalid file: an error, the server keeps its configuration and serves.
printf '[server]\nlog_level = loud\n' >"$tmp/a.ini"
kill -HUP "$pid"
if wait_log "reload: the configuration is not valid"; then ok; else
  bad "invalid file: $(tail -3 "$tmp/err")"; fi
if "$uacli" read "$url" i=2259 2>/dev/null | grep -q Running; then ok; else
  bad "serves after a refused reload"; fi
if kill -0 "$pid" 2>/dev/null; then ok; else bad "the server is gone"; fi

# The users file rewritten in place with the same size and time.
if login pw-one; then ok; else bad "login with the first password"; fi
if [ "$(stat -c %s "$pki/users")" = "$(stat -c %s "$tmp/users.two")" ]; then
  cat "$tmp/users.two" >"$pki/users"
  touch -r "$tmp/users.one" "$pki/users"
  if ! login pw-two; then ok; else bad "the unchanged-looking file was read without SIGHUP"; fi
  kill -HUP "$pid"
  wait_log "users file read again" >/dev/null
  sleep 0.2
  if login pw-two; then ok; else bad "the new password after SIGHUP: $(tail -3 "$tmp/err")"; fi
  if ! login pw-one; then ok; else bad "the old password after SIGHUP"; fi
else
  bad "the two users files differ in size; the in-place case cannot be built"
fi

kill "$pid"; wait "$pid" 2>/dev/null; rc=$?; pid=
if [ "$rc" -eq 0 ]; then ok; else bad "exit status after SIGTERM: $rc"; fi
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
