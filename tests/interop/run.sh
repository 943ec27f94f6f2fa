#!/usr/bin/env bash
# ctest's entry to the node-opcua suite: the given tests/interop/*.test.mjs
# files (default: all) with Node's test runner. Missing Node or packages fail the test with the way
# out instead of leaving the suite out of the run unnoticed.
set -uo pipefail
cd "$(dirname "$0")"
node=${NODE:-node}
if ! command -v "$node" >/dev/null; then
  echo "interop: node not found; run scripts/deps.sh (Node >= 20), or configure" \
       "with -DUA_INTEROP_TESTS=OFF to leave the node-opcua suite out" >&2
  exit 1
fi
if [ ! -d node_modules/node-opcua ]; then
  echo "interop: node-opcua is not installed in tests/interop; run scripts/deps.sh" \
       "(or: cd tests/interop && npm ci)" >&2
  exit 1
fi
shopt -s nullglob
if [ $# -gt 0 ]; then tests=("$@"); else tests=(*.test.mjs); fi
exec "$node" --test "${tests[@]}"
