#!/usr/bin/env bash
# Installs what uastack needs to build and test on Debian 12, then the pinned
# node-opcua peer used by the interop tests. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=(build-essential cmake pkg-config python3 clang clang-format
      libssl-dev libev-dev libsodium-dev libcriterion-dev libinih-dev
      libexpat1-dev liburing-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
command -v node >/dev/null 2>&1 || missing+=(nodejs npm)
# The armhf cross build of the minimal profile (scripts/test.sh): Debian's
# cross compiler, qemu-user, and libev from the armhf multiarch.
cross=(gcc-arm-linux-gnueabihf qemu-user-static)
for p in "${cross[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ! dpkg -s libev-dev:armhf >/dev/null 2>&1; then
  dpkg --print-foreign-architectures | grep -qx armhf || $SUDO dpkg --add-architecture armhf
  missing+=(libev-dev:armhf)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# node-opcua (the interop peer) needs Node.js 20 or newer; Debian 12's own
# nodejs is 18, under which it cannot load. Stop here with the way out
# rather than fail later inside the test suite.
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  cat >&2 <<MSG
deps: Node.js $(node --version 2>/dev/null || echo "(none)") found; the interop tests need Node.js >= 20.
      Debian 12 ships Node.js 18. Install Node.js 20 from the npm registry with
      Debian's npm, then run this script again:
        ${SUDO:+$SUDO }npm install -g node@20 && hash -r && node --version
MSG
  exit 1
fi
if [ -f tests/interop/package-lock.json ] && [ ! -d tests/interop/node_modules ]; then
  echo "deps: npm ci (tests/interop)" >&2
  (cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "deps: ok" >&2
