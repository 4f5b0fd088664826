"""Which reader (engine, model, mode) a run uses, and the short specs users write to name one.

`--model NAME[@MODE]` and `escalate_to` are read into setting overrides here, beside the measured-best
default that applies when no reader setting is given. Reading these specs is one job, apart from the
settings class (tasks.settings): the CLI, the run policy and the evaluation key call it directly, and
the class only uses it to refuse a bad `escalate_to` and to pick its default reader.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, get_args

Mode = Literal["two-pass", "one-pass", "one-pass-reasoning", "prompt-json", "two-readings"]


# The setup the shipped calibrations are for (tasks/evaluation/shipped/): the default reader once installed.
BEST_MODEL, BEST_MODE = "qwen2.5-coder-1.5b", "one-pass"
# The settings that choose the reader: any of them set (argument, environment or file) is the user's choice.
READER_SETTINGS = frozenset({"engine", "local_model", "local_model_path", "mode"})


def best_model_file() -> Path:
    """Where `formwork models install` puts the measured best (tasks.engines.models.model_file, which the
    settings may not import: the engines import the settings)."""
    return (
        Path(os.environ.get("FORMWORK_CACHE") or "~/.cache/formwork").expanduser()
        / "models"
        / (f"{BEST_MODEL}.gguf")
    )


class ModelChoiceProblem(ValueError):
    """`--model NAME[@MODE]` names no model, or a mode that does not exist."""


def model_choice(spec: str) -> dict[str, str]:
    """The settings `--model NAME[@MODE]` stands for: the embedded engine with the catalogue model NAME
    (`formwork models`), in MODE when given (else as the settings say, or the mode NAME is calibrated in)."""
    name, _, mode = spec.strip().partition("@")
    if not name:
        raise ModelChoiceProblem(
            f"--model {spec!r} names no model: write NAME or NAME@MODE (formwork models)"
        )
    if mode and mode not in get_args(Mode):
        raise ModelChoiceProblem(f"--model {spec!r}: {mode!r} is not a mode ({', '.join(get_args(Mode))})")
    return {"engine": "local", "local_model": name} | ({"mode": mode} if mode else {})


class EscalationProblem(ValueError):
    """`escalate_to` does not name a model, a mode or a server that can be opened."""


def escalation_overrides(spec: str) -> dict[str, Any]:
    """The settings that turn a run into its escalation's, from `escalate_to`:
    - `NAME`: a model from `formwork models` on the embedded engine (`qwen2.5-coder-1.5b`);
    - `@MODE`: the same model in another mode (`@two-readings`: the cheap reading first, both after);
    - `NAME@MODE`: both;
    - `vllm:URL#MODEL` or `openai:URL#MODEL` (either part after the engine optional): a server."""
    spec = spec.strip()
    engine, sep, rest = spec.partition(":")
    if sep and engine in ("vllm", "openai"):
        url, _, model = rest.partition("#")
        found: dict[str, Any] = {"engine": engine, f"{engine}_model": model or None}
        return found | ({f"{engine}_url": url} if url else {})
    name, _, mode = spec.partition("@")
    if mode and mode not in get_args(Mode):
        raise EscalationProblem(f"escalate_to {spec!r}: {mode!r} is not a mode ({', '.join(get_args(Mode))})")
    if not name and not mode:
        raise EscalationProblem("escalate_to is empty: name a model (formwork models), @MODE, or a server")
    return ({"engine": "local", "local_model": name, "local_model_path": None} if name else {}) | (
        {"mode": mode} if mode else {}
    )
