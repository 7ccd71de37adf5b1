#!/usr/bin/env bash
# Checks that the C++ sources follow .clang-format (clang-format 14, Debian's clang-format):
# prints each deviation and fails if there is one. To fix them: the same files with -i.
#
#   ./scripts/check_format.sh
#   git ls-files 'src/*' 'include/*' 'tests/*' 'bench/*' 'examples/*' | grep -E '\.(cpp|hpp|h)$' \
#     | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format is not installed" >&2; exit 1; }
git ls-files -- src include tests bench examples | grep -E '\.(cpp|hpp|h)$' |
  xargs -P "$(nproc)" -n 16 clang-format --dry-run --Werror
echo "check_format: ok"
