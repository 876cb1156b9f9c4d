#!/usr/bin/env bash
# The README's second command: set up (release and sanitizer builds), then run
# every test: the whole suite on the release build, and the unit tests plus
# the quick multi-process tests under AddressSanitizer/UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --asan

echo "== release build: all tests"
(cd build && ctest --output-on-failure --timeout 300 -j1)

echo "== ASan/UBSan build: unit and quick multi-process tests"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The LibTorch adapter's worker is not built with the sanitizers (libtorch
# is not), so its tests are left to the release run.
(cd build-asan && ctest --output-on-failure --timeout 600 -j1 \
  -E 'EveryCollectiveDtypeAndOpIsExact|TorchAdapter')
