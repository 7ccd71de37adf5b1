#!/usr/bin/env bash
# Compiles every public header on its own: each must include what it uses.
set -euo pipefail
cd "$(dirname "$0")/.."
export CXX=${CXX:-g++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export tmp
check_one() {  # check_one include/fluxion/x.hpp
  local rel=${1#include/}
  printf '#include <%s>\n' "$rel" |
    "$CXX" -std=c++20 -fsyntax-only -Iinclude -I/usr/include/eigen3 -x c++ - 2>"$tmp/$(echo "$rel" | tr / _).err" ||
    echo "$rel" >>"$tmp/failed"
}
export -f check_one
find include -name '*.hpp' | sort | xargs -P "$(nproc)" -I{} bash -c 'check_one {}'
if [[ -s "$tmp/failed" ]]; then
  while read -r h; do
    echo "headers: $h does not compile on its own:"
    head -5 "$tmp/$(echo "$h" | tr / _).err"
  done <"$tmp/failed"
  exit 1
fi
echo "headers: $(find include -name '*.hpp' | wc -l) public headers compile on their own"
