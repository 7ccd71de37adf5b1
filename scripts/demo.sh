#!/usr/bin/env bash
# Trains the Fashion-MNIST MLP example from a fresh Debian 12 checkout:
#   ./scripts/demo.sh                 # 1 epoch (about 0.84 test accuracy)
#   ./scripts/demo.sh --epochs 5      # arguments go to examples/fashion_mnist_mlp
# Installs the build tools and the dataset with apt when any is missing (as root, or via sudo),
# configures build/ (or $FLUXION_BUILD_DIR) once, builds only the example, and runs it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir="${FLUXION_BUILD_DIR:-build}"
packages=(build-essential cmake ninja-build libopenblas-dev zlib1g-dev libgtest-dev
          dataset-fashion-mnist)

# dpkg -s succeeds only when every listed package is installed, so re-runs skip apt entirely.
if ! dpkg -s "${packages[@]}" >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "demo.sh: missing packages; run as root: apt-get install ${packages[*]}" >&2
    exit 1
  fi
  echo "demo.sh: installing ${packages[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    "${packages[@]}"
fi

# Configure only once: an existing build directory keeps the options its owner chose.
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFLUXION_TESTS=OFF -DFLUXION_BENCH=OFF -DFLUXION_WITH_TORCH=OFF
fi
cmake --build "$build_dir" --target fashion_mnist_mlp

exec "$build_dir/examples/fashion_mnist_mlp" "$@"
