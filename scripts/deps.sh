#!/usr/bin/env bash
# Installs what uastack needs to build and test on Debian 12, then the pinned
# node-opcua peer used by the interop tests. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=(build-essential cmake pkg-config python3 clang clang-format
      libssl-dev libev-dev libsodium-dev libcriterion-dev libinih-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
command -v node >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ -f tests/interop/package-lock.json ] && [ ! -d tests/interop/node_modules ]; then
  echo "deps: npm ci (tests/interop)" >&2
  (cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "deps: ok" >&2
