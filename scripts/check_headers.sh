#!/usr/bin/env bash
# Compiles every public header on its own (each must include what it uses), and checks that
# fluxion/fluxion.hpp reaches every one.
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

# <fluxion/fluxion.hpp> promises all of fluxion: every public header must be reachable from it
# (directly or through another header), as the preprocessor's dependency list shows.
printf '#include <fluxion/fluxion.hpp>\n' |
  "$CXX" -std=c++20 -Iinclude -I/usr/include/eigen3 -MM -MT umbrella -x c++ - | tr ' \\' '\n\n' |
  grep '^include/.*\.hpp$' | sort -u >"$tmp/reachable"
find include -name '*.hpp' | sort >"$tmp/all"
unreachable=$(comm -23 "$tmp/all" "$tmp/reachable")
if [[ -n "$unreachable" ]]; then
  echo "headers: not reachable from include/fluxion/fluxion.hpp (add them there):"
  echo "$unreachable" | sed 's/^/  /'
  exit 1
fi
echo "headers: all $(wc -l <"$tmp/all") public headers are reachable from fluxion/fluxion.hpp"
