#!/usr/bin/env bash
# Compiles the usage example at the top of every public header, so that the examples stay true.
#
# The convention: a header opens with a comment block; its example is the first run of lines in
# that block indented by three spaces after the slashes ("//   code"), ending at the first line
# that is not ("//" alone, prose, or the end of the comment). Lines of the run starting with "#"
# (an #include the example needs) go above; the rest becomes the body of a function, compiled
# with the header, <fluxion/fluxion.hpp> and <iostream> included (-fsyntax-only). So an example
# declares the values it uses (`fx::Tensor x = fx::randn({8, 64});`), and a template or class it defines must
# be one a function body may hold (a generic lambda rather than a function template).
#
#   ./scripts/check_header_examples.sh            # every header
#   ./scripts/check_header_examples.sh include/fluxion/ops/fft.hpp
set -euo pipefail
cd "$(dirname "$0")/.."
export CXX=${CXX:-g++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export tmp
# <fluxion/fluxion.hpp>, parsed once: a precompiled header that every example includes first.
mkdir -p "$tmp/pch/fluxion"
printf '#include <fluxion/fluxion.hpp>\n' >"$tmp/pch/fluxion/all.hpp"
"$CXX" -std=c++20 -Iinclude -I/usr/include/eigen3 -x c++-header "$tmp/pch/fluxion/all.hpp" \
  -o "$tmp/pch/fluxion/all.hpp.gch"

# Prints the example program of header $1 (empty when the header has no example).
example_of() {
  awk -v header="${1#include/}" '
    !/^\/\// { exit }                       # the end of the leading comment
    /^\/\/   / { in_run = 1; line = substr($0, 6)
                 if (line ~ /^#/) pre = pre line "\n"; else body = body "  " line "\n"; next }
    in_run { exit }                         # the run ended
    END {
      if (body == "" && pre == "") exit
      printf "#include <fluxion/all.hpp>\n#include <%s>\n\n#include <iostream>\n%s\n", header, pre
      printf "[[maybe_unused]] static void header_example() {\n%s}\n", body
    }' "$1"
}
check_one() {  # check_one include/fluxion/x.hpp
  local h=$1 name
  name=$(echo "${h#include/}" | tr / _)
  example_of "$h" >"$tmp/$name.cpp"
  if [[ ! -s "$tmp/$name.cpp" ]]; then
    echo "$h: no usage example (an indented run of '//   ' lines in its first comment)" >>"$tmp/missing"
    return
  fi
  "$CXX" -std=c++20 -fsyntax-only -I"$tmp/pch" -Iinclude -I/usr/include/eigen3 -Wno-unused -x c++ "$tmp/$name.cpp" \
    2>"$tmp/$name.err" || echo "$h" >>"$tmp/failed"
}
export -f example_of check_one

if (($#)); then headers=("$@"); else mapfile -t headers < <(find include -name '*.hpp' | sort); fi
printf '%s\n' "${headers[@]}" | xargs -P "$(nproc)" -I{} bash -c 'check_one {}'
status=0
if [[ -s "$tmp/missing" ]]; then cat "$tmp/missing"; status=1; fi
if [[ -s "$tmp/failed" ]]; then
  while read -r h; do
    name=$(echo "${h#include/}" | tr / _)
    echo "header examples: the example in $h does not compile:"
    cat -n "$tmp/$name.cpp" | sed 's/^/    /'
    grep -m 3 'error' "$tmp/$name.err" | sed 's/^/    /'
    status=1
  done < <(sort "$tmp/failed")
fi
((status == 0)) && echo "header examples: ${#headers[@]} usage examples checked"
exit $status
