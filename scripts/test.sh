#!/usr/bin/env bash
# The whole test suite: the Release build and the ASan+UBSan Debug build, each
# with every Criterion test (ctest), the regeneration checks (types from the
# schema, golden vectors from node-opcua), the build without encryption and
# with the reduced namespace 0, the format check and a short
# libFuzzer run of each fuzz target (decoder, event filter evaluator, secure
# channel with None and with fixed keys, OPN, session level), the minimal
# profile (UA_MINIMAL) and its armhf cross build under qemu-user. Prints
# ctest's summaries; exits non-zero on
# any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
SCHEMA=${UA_SCHEMA_DIR:-$(pwd)/../shared/opcua-schema}
step() { printf '\n== %s\n' "$*" >&2; }
# The Release tree is the quick start's (README.md): after it, only what
# changed is rebuilt. The other configurations get trees of their own
# beside it: build/asan, build/fuzz, build/noenc (also the reduced
# namespace 0), build/minimal, build/armhf.
REL=build

step "format check (clang-format)"
files=$(git ls-files '*.c' '*.h' | grep -Ev '^(stack|server)/gen/' || true)
clang-format --dry-run --Werror $files

step "Release build"
cmake -S . -B "$REL" -DCMAKE_BUILD_TYPE=Release -DUA_SCHEMA_DIR="$SCHEMA" >/dev/null
cmake --build "$REL" -j "$JOBS"
step "Release tests"
ctest --test-dir "$REL" --output-on-failure -j "$JOBS"

step "Debug build with AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DUA_SANITIZE=ON -DUA_BUILD_BENCHMARKS=OFF \
      -DUA_SCHEMA_DIR="$SCHEMA" >/dev/null
cmake --build build/asan -j "$JOBS"
step "ASan+UBSan tests"
ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build/asan --output-on-failure -j "$JOBS"

step "golden vectors regenerate identically with node-opcua"
if [ -d tests/interop/node_modules ]; then
  tmp=$(mktemp -d)
  node tests/interop/golden/make_golden.js "$tmp" >/dev/null
  diff -r -x '*.md' "$tmp" tests/golden
  rm -rf "$tmp"
else
  echo "tests/interop/node_modules missing: run scripts/deps.sh" >&2
  exit 1
fi

# The seven fuzz targets share FUZZ_SECONDS (8 s each by default), from
# their committed seeds; a finding fails the run (pipefail). The campaigns
# of docs/Fuzzing.md are run by hand.
FUZZ_EACH=$(( FUZZ_SECONDS / 7 > 0 ? FUZZ_SECONDS / 7 : 1 ))
step "libFuzzer: decoder, event filter, secure channel (None, fixed keys), OPN (RSA, ECC), session, ${FUZZ_EACH}s each"
CC=clang cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=Debug -DUA_FUZZ=ON -DUA_BUILD_BENCHMARKS=OFF \
      -DUA_SCHEMA_DIR="$SCHEMA" >/dev/null
cmake --build build/fuzz -j "$JOBS" --target fuzz_decode fuzz_filter fuzz_channel fuzz_secure \
  fuzz_opn fuzz_opn_ecc fuzz_session
mkdir -p build/fuzz/corpus build/fuzz/corpus_filter build/fuzz/corpus_channel \
  build/fuzz/corpus_secure build/fuzz/corpus_opn build/fuzz/corpus_opn_ecc build/fuzz/corpus_session
build/fuzz/tests/fuzz/fuzz_decode -max_total_time="$FUZZ_EACH" -print_final_stats=1 \
  build/fuzz/corpus tests/golden 2>&1 | tail -n 12
build/fuzz/tests/fuzz/fuzz_filter -max_total_time="$FUZZ_EACH" -timeout=5 -print_final_stats=1 \
  build/fuzz/corpus_filter tests/fuzz/filter_seeds 2>&1 | tail -n 12
build/fuzz/tests/fuzz/fuzz_channel -max_total_time="$FUZZ_EACH" -timeout=5 -print_final_stats=1 \
  build/fuzz/corpus_channel tests/fuzz/channel_seeds 2>&1 | tail -n 12
for t in secure opn opn_ecc session; do
  # libFuzzer's entropic schedule cost fuzz_session two thirds of its
  # executions, the others 6 to 15 % (docs/Fuzzing.md).
  extra=(-entropic=0)
  build/fuzz/tests/fuzz/fuzz_$t -max_total_time="$FUZZ_EACH" -timeout=10 -print_final_stats=1 \
    "${extra[@]}" build/fuzz/corpus_$t tests/fuzz/seeds/fuzz_$t 2>&1 | tail -n 12
done

step "install: headers, libraries, CMake package and pkg-config files used by an outside program"
tests/install_test.sh "$REL" .

step "Debian package (cpack -G DEB from the Release tree) checked and run extracted"
(cd "$REL" && cpack -G DEB >/dev/null)
tests/package_test.sh "$REL"/uastack_*.deb

# One tree for two options of small builds, to keep CI within its budget:
# each is tested, alone, by no other stage (the minimal profile has a
# namespace 0 of its own).
step "build without encryption (UA_ENABLE_ENCRYPTION=OFF: policy None only, no OpenSSL/libsodium) and with the reduced namespace 0 (UA_NS0_REDUCED)"
# Debug (-O0): compiles in about half the time of Release; the tests are short.
cmake -S . -B build/noenc -DCMAKE_BUILD_TYPE=Debug -DUA_ENABLE_ENCRYPTION=OFF -DUA_NS0_REDUCED=ON \
      -DUA_BUILD_BENCHMARKS=OFF -DUA_SCHEMA_DIR="$SCHEMA" >/dev/null
cmake --build build/noenc -j "$JOBS"
ctest --test-dir build/noenc --output-on-failure -j "$JOBS" \
      -E 'interop|loadgen_smoke|codegen|configure_missing_schema|consumer'

step "minimal profile (UA_MINIMAL, MinSizeRel): its tests, the full build's uacli against it, sizes"
cmake -S . -B build/minimal -DCMAKE_BUILD_TYPE=MinSizeRel -DUA_MINIMAL=ON \
      -DUA_BUILD_BENCHMARKS=OFF -DUA_SCHEMA_DIR="$SCHEMA" >/dev/null
cmake --build build/minimal -j "$JOBS"
# Left out, written for the full build: the memory-budget floods need more
# than the profile's 16 connections (the subscription limits, which use
# TransferSubscriptions and event items, are not even built: the profile
# has no descriptors of them).
ctest --test-dir build/minimal --output-on-failure -j "$JOBS" \
      -E 'codegen|configure_missing_schema|integration_test_memory'
tests/embed_minimal_test.sh build/minimal/server/embed_example "$REL"/client/uacli
size build/minimal/server/embed_example

step "armhf cross build of the minimal profile, run under qemu-user"
# The unit and integration tests run under qemu (CMAKE_CROSSCOMPILING_EMULATOR,
# qemu-arm-static -L /: loader, libc and libev of Debian's armhf multiarch;
# with the cross toolchain's loader beside the multiarch libc, every thread
# and fork crashed, cmake/toolchain-armhf.cmake) with Criterion's stand-in
# (tests/shim: Debian has no armhf Criterion; a process per test, as
# Criterion), the integration tests with their server threads included;
# then the example and the foreign-loop examples answer the x86-64 uacli.
# Left out under qemu: robustness (the decoder's hostile-input test: about
# a minute of emulated CPU; it passes, docs/Benchmarks.md "armhf under
# qemu"), and, as in the minimal stage above, the memory-budget floods
# written for the full build.
cmake -S . -B build/armhf -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake \
      -DCMAKE_BUILD_TYPE=MinSizeRel -DUA_MINIMAL=ON -DUA_BUILD_TESTS=ON \
      -DUA_BUILD_BENCHMARKS=OFF -DUA_SCHEMA_DIR="$SCHEMA" >/dev/null
cmake --build build/armhf -j "$JOBS"
ctest --test-dir build/armhf --output-on-failure -j "$JOBS" --timeout 300 \
      -E 'stack_test_robustness|integration_test_memory'
QEMU="qemu-arm-static -L /"
UAS_RUNNER="$QEMU" tests/embed_minimal_test.sh build/armhf/server/embed_example "$REL"/client/uacli
for ex in example_poll_loop example_libev_loop; do
  UAS_RUNNER="$QEMU" tests/examples_test.sh build/armhf/examples/$ex "$REL"/client/uacli
done
arm-linux-gnueabihf-size build/armhf/server/embed_example

step "all test stages passed"
