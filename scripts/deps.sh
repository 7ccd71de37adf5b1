#!/usr/bin/env bash
# Installs fluxion's build and test dependencies from Debian's packages (run as root).
# Safe to re-run: apt-get is skipped when every package is already installed.
#
#   ./scripts/deps.sh              # build, tests, benchmarks (docs/dependencies.md: licences)
#   ./scripts/deps.sh --minimal    # just the library and the demo
#   ./scripts/deps.sh --with-fftw  # also FFTW (GPL), for -DFLUXION_WITH_FFTW=ON
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config git
          libopenblas-dev libopenblas-openmp-dev liblapacke-dev libdnnl-dev zlib1g-dev libhwy-dev
          nlohmann-json3-dev libpng-dev libgtest-dev libeigen3-dev libboost-dev python3-venv
          libtorch-dev dataset-fashion-mnist clang-format
          perl)  # perl brings perl-modules-5.xx: its perldiag.pod is examples/char_lstm's text
if [[ "${1:-}" == "--minimal" ]]; then  # the demo needs no test or peer libraries
  packages=(build-essential cmake ninja-build pkg-config libopenblas-dev libopenblas-openmp-dev liblapacke-dev
            libdnnl-dev zlib1g-dev libhwy-dev libeigen3-dev nlohmann-json3-dev libpng-dev
            dataset-fashion-mnist)
fi
# FFTW is GPL: only for a build that opts in with -DFLUXION_WITH_FFTW=ON.
if [[ "${1:-}" == "--with-fftw" ]]; then
  packages+=(libfftw3-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "deps: need root to apt-get install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# One OpenMP thread pool for fluxion's kernels, OpenBLAS and libtorch: Debian's default OpenBLAS
# keeps a pthread pool of its own, and beside libgomp's spinning workers two threads ran 2.5x
# slower than one on a 2-core machine. Debian selects the BLAS variant with alternatives.
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine)
for alt in $(update-alternatives --get-selections 2>/dev/null | awk '{print $1}' |
             grep -E "^(lib(open)?blas|liblapack|cblas|openblas|blas|lapack|f77blas)" ); do
  target=$(update-alternatives --list "$alt" 2>/dev/null | grep "/openblas-openmp/" | head -n 1 || true)
  [[ -n "$target" && "$alt" == *"$arch"* ]] || continue
  [[ "$(readlink -f "/etc/alternatives/$alt")" == "$(readlink -f "$target")" ]] && continue
  if [[ $(id -u) -ne 0 ]]; then
    echo "deps: as root, select the OpenMP OpenBLAS: update-alternatives --set $alt $target" >&2
    continue
  fi
  update-alternatives --quiet --set "$alt" "$target"
done
