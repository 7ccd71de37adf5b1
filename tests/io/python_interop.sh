#!/usr/bin/env bash
# Files written by fluxion load in Python's `safetensors` package to the same values, and files
# written there load in fluxion. Creates (once) a venv with safetensors and numpy from PyPI; if
# pip cannot install them (no network), says so and skips.
#   tests/io/python_interop.sh build/tests/safetensors_interop build/pyenv
set -euo pipefail
bin=$1
venv=${2:-build/pyenv}
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import safetensors, numpy" 2>/dev/null; then
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install -q safetensors numpy; then
    echo "python_interop: SKIPPED: pip could not install safetensors and numpy (no network?)"
    exit 0
  fi
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$bin" write "$dir/from_fluxion.safetensors"
"$venv/bin/python" - "$dir" <<'PY'
import sys
import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

d = sys.argv[1]
want = {
    "f32": (np.arange(12, dtype=np.float32).reshape(3, 4) * np.float32(0.5) - np.float32(1)),
    "f64": np.arange(5, dtype=np.float64) / 3.0,
    "i32": np.array([-2, 0, 7], dtype=np.int32),
    "i64": np.array([[2**40], [-5]], dtype=np.int64),
    "flag": np.array([True, False, True]),
    "scalar": np.array(2.5, dtype=np.float64),
    "empty": np.zeros((0, 3), dtype=np.float32),
}
got = load_file(f"{d}/from_fluxion.safetensors")
assert sorted(got) == sorted(want), (sorted(got), sorted(want))
for k, v in want.items():
    g = got[k]
    assert g.dtype == v.dtype and g.shape == v.shape, (k, g.dtype, g.shape, v.dtype, v.shape)
    assert g.tobytes() == v.tobytes(), (k, g, v)
with safe_open(f"{d}/from_fluxion.safetensors", framework="np") as f:
    assert f.metadata() == {"source": "fluxion"}, f.metadata()
save_file(want, f"{d}/from_python.safetensors", metadata={"source": "python"})
print("python_interop: python read fluxion's file and wrote its own")
PY
"$bin" read "$dir/from_python.safetensors"
echo "python_interop: ok"
