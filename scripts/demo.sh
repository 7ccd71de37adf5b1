#!/usr/bin/env bash
# Trains the Fashion-MNIST MLP example from a fresh Debian 12 checkout:
#   ./scripts/demo.sh                 # 1 epoch (about 0.84 test accuracy)
#   ./scripts/demo.sh --epochs 5      # arguments go to examples/fashion_mnist_mlp
# Installs the build tools and the dataset with apt when any is missing (as root),
# configures build/ (or $FLUXION_BUILD_DIR) once, builds only the example, and runs it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir="${FLUXION_BUILD_DIR:-build}"

./scripts/deps.sh --minimal  # apt-get only when a package is missing (safe to re-run)

# Configure only once: an existing build directory keeps the options its owner chose.
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFLUXION_TESTS=OFF -DFLUXION_BENCH=OFF -DFLUXION_WITH_TORCH=OFF
fi
cmake --build "$build_dir" --target fashion_mnist_mlp

exec "$build_dir/examples/fashion_mnist_mlp" "$@"
