#!/usr/bin/env bash
# Checks the layer table of DESIGN.md: a folder's headers and sources include only the layers
# at or below it. Prints each violation; exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A allowed=(
  [core]="core"
  [backend]="core ops"
  [ops]="core ops"
  [ad]="core ops ad"
  [testing]="core ops ad testing"
  [nn]="core ops ad nn"
  [optim]="core ops ad nn optim"
  [sci]="core ops ad nn optim sci"
  [data]="core ops data"
  [io]="core ops nn io"
  [train]="core ops ad nn optim data io train"
)

status=0
check() {  # check <layer> <files...>
  local layer=$1; shift
  local ok=" ${allowed[$layer]} "
  for f in "$@"; do
    while IFS= read -r inc; do
      local dep=${inc#fluxion/}; dep=${dep%%/*}
      [[ "$dep" == *.hpp ]] && continue   # umbrella headers (fluxion/ops.hpp) are per layer below
      if [[ "$ok" != *" $dep "* ]]; then
        echo "layering: $f ($layer) includes fluxion/$dep/..."
        status=1
      fi
    done < <(grep -oE '#include [<"]fluxion/[^">]+' "$f" | sed -E 's/#include [<"]//')
  done
}

for layer in "${!allowed[@]}"; do
  files=()
  [[ -d include/fluxion/$layer ]] && files+=($(find include/fluxion/$layer -name '*.hpp'))
  [[ -d src/$layer ]] && files+=($(find src/$layer -name '*.cpp' -o -name '*.hpp'))
  ((${#files[@]})) && check "$layer" "${files[@]}"
done
[[ $status -eq 0 ]] && echo "layering: ok"
exit $status
