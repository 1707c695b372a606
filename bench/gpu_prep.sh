#!/usr/bin/env bash
# Run HERE (the 2-core machine) before bench/gpu_check.sh goes to a lent GPU machine (the device tool).
# The GPU image has torch, transformers, peft, typer, rich, jinja2, scipy, matplotlib but not pydantic,
# and nothing can be fetched there; a model folder with weights does not fit the 64 MiB that travels.
# So: pydantic's wheels for Python 3.12 go to .whl/, and SmolLM2's config and tokenizer (no weights,
# ~4 MB) to .gpu/smollm2/; the check then initialises SmolLM2's architecture with random weights,
# which is what a speed and equivalence check needs (accuracy is measured here: bench/real_model.py).
#   bash bench/gpu_prep.sh
#   device run: carry [.whl, .gpu], command: bash bench/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo /.gpu/ >> .git/info/exclude
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >> .git/info/exclude
PY=${PY:-.venv/bin/python}
rm -rf .whl && mkdir -p .whl .gpu/smollm2
for name in pydantic pydantic-core annotated-types typing-inspection; do  # the versions installed here
  spec="$name==$("$PY" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name")"
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "$spec"
done
src=$("$PY" -c "from rlvr.models.gguf import ensure_real_model; print(ensure_real_model())")
for f in config.json generation_config.json tokenizer.json tokenizer_config.json chat_template.jinja special_tokens_map.json; do
  [ -f "$src/$f" ] && cp "$src/$f" .gpu/smollm2/
done
du -sh .whl .gpu
