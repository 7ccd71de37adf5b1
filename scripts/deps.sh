#!/usr/bin/env bash
# Installs fluxion's build and test dependencies from Debian's packages (run as root).
# Safe to re-run: apt-get is skipped when every package is already installed.
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config git
          libopenblas-dev zlib1g-dev libgtest-dev
          libtorch-dev dataset-fashion-mnist)
if [[ "${1:-}" == "--minimal" ]]; then  # the demo needs no test or peer libraries
  packages=(build-essential cmake ninja-build pkg-config libopenblas-dev zlib1g-dev
            dataset-fashion-mnist)
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
