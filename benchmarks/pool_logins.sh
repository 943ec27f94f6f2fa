#!/bin/bash
# Issue 11, part 2: what logins cost the other clients, before and after the
# worker pool. Two uaserver builds (BEFORE, AFTER) are started the same way
# as external targets and measured by AFTER's load generator, alternated
# round by round:
#   reads   10 sessions x 10 Reads in flight (None), quiet and beside one
#           login loop (--logins 0,1: new SignAndEncrypt channel +
#           CreateSession + ActivateSession with a user name, again and
#           again), on --threads 1 and 2;
#   setups  encrypted session set-ups per second: 4 login loops (anonymous;
#           also with a user name when NAME_SETUPS is set) beside a single
#           Read session, --threads 1 and 2.
# Usage: benchmarks/pool_logins.sh BEFORE_UASERVER AFTER_UASERVER UAPKI OUT_DIR [ROUNDS]
set -eu
BEFORE=$1 AFTER=$2 UAPKI=$3 OUT=$4 ROUNDS=${5:-3}
DUR=${DUR:-8} WARM=${WARM:-2}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/uas-poolbench-XXXXXX)
trap 'kill $SPID 2>/dev/null || true; rm -rf "$WORK"' EXIT
echo selfload-password | "$UAPKI" --users "$WORK/users" user add selfload --password-stdin >/dev/null
PORT=${PORT:-48500}
SPID=

start_server() { # bin threads label
    PORT=$((PORT + 1))
    "$1" --contract --port $PORT --bind 127.0.0.1 --threads "$2" \
        --security "None, Basic256Sha256:Sign, Basic256Sha256:SignAndEncrypt" \
        --users "$WORK/users" --pki "$WORK/pki-$3" \
        --auto-accept --log-level error >/dev/null 2>&1 &
    SPID=$!
    for _ in $(seq 600); do # the first start makes an RSA key
        if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "server $1 did not start" >&2
    exit 1
}

run() { # name build bin threads args...
    name=$1 build=$2 bin=$3 threads=$4
    shift 4
    start_server "$bin" "$threads" "$build"
    "$AFTER" --self-load read --target opc.tcp://127.0.0.1:$PORT --target-pid $SPID \
        --duration "$DUR" --warmup "$WARM" "$@" >>"$OUT/$name.md" 2>>"$OUT/stderr.log" || true
    kill $SPID
    wait $SPID 2>/dev/null || true
}

for r in $(seq "$ROUNDS"); do
    for t in 1 2; do
        for b in before after; do
            bin=$BEFORE
            [ $b = after ] && bin=$AFTER
            run "reads-$b-t$t" $b "$bin" "$t" --logins 0,1
            run "setups-anon-$b-t$t" $b "$bin" "$t" --sessions 1 --inflight 1 --logins 4 \
                --login-identity anonymous
            if [ -n "${NAME_SETUPS:-}" ]; then
                run "setups-name-$b-t$t" $b "$bin" "$t" --sessions 1 --inflight 1 --logins 4
            fi
        done
    done
done
