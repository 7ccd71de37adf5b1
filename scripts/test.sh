#!/usr/bin/env bash
# Builds fluxion and runs every test: the plain suite (with libtorch oracle tests), the layering
# and self-contained-header checks, then the suite again under AddressSanitizer + UBSan.
# Installs its dependencies on a fresh Debian 12 (as root). Safe to re-run.
#
#   ./scripts/test.sh            # everything
#   FLUXION_SKIP_SANITIZE=1 ./scripts/test.sh   # quicker local loop
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

./scripts/deps.sh --with-fftw  # FFTW only for the FLUXION_WITH_FFTW compile check below

echo "== checks"
./scripts/check_layers.sh
./scripts/check_headers.sh
./scripts/check_header_examples.sh
./scripts/check_doc_code.sh
./scripts/check_format.sh

echo "== build (Release)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLUXION_TESTS=ON -DFLUXION_BENCH=ON \
  -DFLUXION_EXAMPLES=ON -DFLUXION_WITH_TORCH=ON >/dev/null
cmake --build build -j "$jobs"

# ctest runs tests side by side, each with an OpenMP team: workers that sleep at joins instead of
# spinning keep two teams on two cores from stalling each other (docs/performance.md, "Threads and BLAS").
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

echo "== tests (Release)"
ctest --test-dir build -j "$jobs" --output-on-failure --timeout 600

echo "== safetensors files read and written by Python's safetensors package"
./tests/io/python_interop.sh build/tests/safetensors_interop build/pyenv

echo "== FLUXION_WITH_FFTW=ON still compiles (its FFT kernel only: seconds)"
cmake -S . -B build-fftw -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLUXION_WITH_FFTW=ON \
  -DFLUXION_TESTS=OFF -DFLUXION_BENCH=OFF -DFLUXION_EXAMPLES=OFF -DFLUXION_WITH_TORCH=OFF >/dev/null
cmake --build build-fftw --target CMakeFiles/fluxion.dir/src/backend/cpu/fft_fftw.cpp.o >/dev/null

echo "== install + find_package(fluxion) from a downstream project"
cmake --install build --prefix build/install >/dev/null
cmake -S tests/install -B build/consumer -G Ninja -DCMAKE_PREFIX_PATH="$PWD/build/install" >/dev/null
cmake --build build/consumer >/dev/null
./build/consumer/consumer

echo "== overhead benchmark (informational; timings are never asserted)"
./build/bench/overhead

if [[ -z "${FLUXION_SKIP_SANITIZE:-}" ]]; then
  echo "== build (ASan + UBSan)"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFLUXION_SANITIZE=ON \
    -DFLUXION_BENCH=OFF -DFLUXION_EXAMPLES=OFF -DCMAKE_CXX_FLAGS="-O1" >/dev/null
  cmake --build build-asan -j "$jobs" --target fluxion_tests
  echo "== tests (ASan + UBSan)"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan -j "$jobs" --output-on-failure --timeout 900
fi
echo "== all tests passed"
