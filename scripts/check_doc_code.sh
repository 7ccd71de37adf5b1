#!/usr/bin/env bash
# Checks that the code docs/adding-a-layer.md shows is the code the suite compiles: every ```cpp
# block of the page must appear, verbatim, in include/fluxion/nn/scale.hpp,
# include/fluxion/nn.hpp or tests/nn/scale_test.cpp.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - docs/adding-a-layer.md include/fluxion/nn/scale.hpp include/fluxion/nn.hpp \
  tests/nn/scale_test.cpp <<'PY'
import re, sys
page, *sources = sys.argv[1:]
text = "".join(open(s).read() for s in sources)
blocks = re.findall(r"```cpp\n(.*?)```", open(page).read(), re.S)
stale = [b for b in blocks if b not in text]
for b in stale:
    print(f"doc code: this block of {page} is not in {', '.join(sources)}:\n{b}")
print(f"doc code: {len(blocks) - len(stale)} of {len(blocks)} blocks of {page} match the sources")
sys.exit(1 if stale or not blocks else 0)
PY
