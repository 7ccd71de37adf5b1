#!/usr/bin/env bash
# Checks that a resumed run repeats an uninterrupted one: `--epochs 3` and `--epochs 2
# --checkpoint D` followed by `--resume D --epochs 3` must print the identical epoch-3 line.
#   examples/resume_check.sh build/examples/fashion_mnist_mlp [extra options...]
set -euo pipefail
bin=$1; shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
opts=(--threads 1 --train-subset 3000 "$@")

"$bin" "${opts[@]}" --epochs 3 > "$dir/full.log"
"$bin" "${opts[@]}" --epochs 2 --checkpoint "$dir/ck" > "$dir/first.log"
"$bin" "${opts[@]}" --epochs 3 --resume "$dir/ck" --save "$dir/model.safetensors" \
  --plot "$dir/curves.png" > "$dir/resumed.log"

full=$(grep '^epoch=3 ' "$dir/full.log")
resumed=$(grep '^epoch=3 ' "$dir/resumed.log")
echo "uninterrupted: $full"
echo "resumed:       $resumed"
[[ -s "$dir/model.safetensors" && -s "$dir/curves.png" ]] || { echo "resume_check: missing outputs"; exit 1; }
if grep -q '^epoch=[12] ' "$dir/resumed.log"; then echo "resume_check: the resumed run repeated epochs"; exit 1; fi
[[ "$full" == "$resumed" ]] && echo "resume_check: identical" || { echo "resume_check: DIFFERENT"; exit 1; }
