#!/usr/bin/env bash
# What uaserver tells an operator: the URL it really listens on (it printed
# 127.0.0.1 whatever --bind said), configuration errors named by line and
# cause, and --print-config refusing what the server would refuse. And what
# uacli shows of it: an enumeration by name (ServerState Running, not 0).
set -uo pipefail
uaserver=$1 uacli=$2
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 failed=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

# The first stdout line names the bound address.
"$uaserver" --contract --port 0 --bind 127.0.0.2 --threads 1 --security None,Basic256Sha256:Sign \
  >"$tmp/out" 2>/dev/null &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$tmp/out" && break; sleep 0.1; done
if grep -Eq '^uaserver listening on opc\.tcp://127\.0\.0\.2:[0-9]+$' "$tmp/out"; then ok; else
  bad "listening line: $(head -1 "$tmp/out")"; fi
if grep -Eq '^uaserver endpoint URL \(advertised to clients\): opc\.tcp://[^ ]+:[0-9]+$' "$tmp/out"; then ok; else
  bad "endpoint line: $(cat "$tmp/out")"; fi
url=$(sed -n 's/^uaserver listening on //p' "$tmp/out")
if "$uacli" read "$url" i=2259 2>/dev/null | grep -Eq '^Value: +Running \(0\)$'; then ok; else
  bad "ServerState by name: $("$uacli" read "$url" i=2259 2>&1)"; fi
if "$uacli" read "$url" 'ns=1;i=1001' 2>/dev/null | grep -Eq '^Value: +0$'; then ok; else
  bad "a plain Int32 stays a number"; fi
# A second uaserver on a port this one serves refuses to start (it shared
# the port through SO_REUSEPORT, and clients alternated between the two).
port=${url##*:}
err=$(timeout 10 "$uaserver" --contract --port "$port" --bind 127.0.0.2 --threads 1 2>&1 >/dev/null); rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "Address already in use" <<<"$err"; then ok; else
  bad "second server on port $port (exit $rc): $err"; fi

# discover: the server, then each endpoint with its certificate (once).
out=$("$uacli" discover "$url" 2>&1)
if grep -q '^Server 1: ' <<<"$out" && grep -Eq '^  Certificate: +[0-9A-F]{40}$' <<<"$out" &&
  grep -Eq '^    ApplicationUri: urn:o6:benchmark:server$' <<<"$out" &&
  grep -Eq '^  Certificate: +[0-9A-F]{40} \(as above\)$' <<<"$out"; then ok; else bad "discover: $out"; fi

# --output json: documents a script can load.
json_check() { # name, python expression over d, uacli args...
  local name=$1 expr=$2; shift 2
  if "$uacli" --output json "$@" 2>/dev/null |
    python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if ($expr) else 1)"; then ok; else
    bad "json $name: $("$uacli" --output json "$@" 2>&1 | head -c 600)"; fi
}
json_check read "d['EnumName'] == 'Running' and d['DataValue']['Value'] == {'Type': 'Int32', 'Body': 0}" \
  read "$url" i=2259
json_check browse "any(r['NodeId'] == 'i=2258' and r['Depth'] == 1 for r in d)" --depth 2 browse "$url" i=2253
json_check translate "d['Result']['Targets'][0]['TargetId'] == 'i=2253'" translate "$url" /Objects/Server
json_check discover "d['Servers'][0]['ApplicationUri'] == 'urn:o6:benchmark:server' and len(d['Endpoints']) >= 2" \
  discover "$url"
json_check write "d['Status'] == 'Good'" write "$url" 'ns=1;i=1002' int32 7

# A recursive browse indents each level and stops at --depth.
out=$("$uacli" --depth 2 browse "$url" i=2253 2>&1)
if grep -Eq '^\| ServerStatus +\| i=2256 ' <<<"$out" && grep -Eq '^\|   CurrentTime +\| i=2258 ' <<<"$out" &&
  ! grep -Eq '^\|     ' <<<"$out"; then ok; else bad "browse --depth 2: $out"; fi
if "$uacli" --depth 0 browse "$url" >/dev/null 2>&1; [ $? -eq 2 ]; then ok; else bad "--depth 0 refused"; fi
kill "$pid"; wait "$pid" 2>/dev/null; pid=

config_error() { # name, file content, expected stderr pattern
  printf '%b' "$2" >"$tmp/c.ini"
  local err rc
  err=$("$uaserver" --config "$tmp/c.ini" --print-config 2>&1 >/dev/null); rc=$?
  if [ "$rc" -eq 2 ] && grep -q -- "$3" <<<"$err"; then ok; else bad "$1 (exit $rc): $err"; fi
}
config_error "unclosed section" '[server\nport = 4841\n' "line 1: section header without a closing ']'"
config_error "line without =" '[server]\nport = 4841\nwhat\n' "line 3: expected 'key = value'"
config_error "first error wins" '[server]\nport = 99999\nbogus = 1\n' "line 2: server.port must be"
config_error "unknown policy" '[security]\nsecurity = Bogus:Sign\n' "unknown security policy 'Bogus'"
config_error "anonymous endpoint not offered" \
  '[security]\nsecurity = Basic256Sha256:Sign\nanonymous_endpoints = None\n' "is not an endpoint"
printf '[server]\nport = 4841\n' >"$tmp/good.ini"
if "$uaserver" --config "$tmp/good.ini" --print-config 2>/dev/null | grep -q '^port = 4841$'; then ok; else
  bad "a valid file is printed"; fi
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
