"""Sampling presets, and the guard that keeps chat settings out of grammar-constrained calls.

`greedy` is the formatting pass's safe setting. `chat` is what a chat front-end ships (temperature
0.75, top_p 0.9, top_k 40, repetition penalty 1.12, no_repeat_ngram_size 3). Under a grammar those
penalties are poison: a JSON object repeats `"`, `, "`, `": ` and key names by construction, so an
n-gram ban or a repetition penalty masks exactly the tokens the grammar needs next, and the model is
pushed into the few legal tokens left (the published ablation: schema-valid 18/24 greedy, 1/24 with
no_repeat_ngram_size 3, 0/24 with all chat settings).

So a constrained call is forced back to the safe settings (greedy, no penalties, no n-gram ban),
keeping only its budget and seed, unless the run explicitly allows chat settings there; then the run
warns, because the results are likely to suffer.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from formwork.tasks.engines.base import Sampling

PresetName = Literal["greedy", "chat"]
PRESETS: dict[str, Sampling] = {
    "greedy": Sampling(),
    "chat": Sampling(temperature=0.75, top_p=0.9, top_k=40, repetition_penalty=1.12, no_repeat_ngram_size=3),
}
CHAT_IN_CONSTRAINED = (
    "chat sampling settings are allowed in grammar-constrained calls (allow_chat_in_constrained): "
    "penalties and n-gram bans fight the grammar, expect fewer valid rows"
)


def preset(name: str, max_tokens: int, seed: int | None = 0) -> Sampling:
    """The named preset with this call's budget and seed."""
    if name not in PRESETS:
        raise ValueError(f"unknown sampling preset {name!r}: use one of {', '.join(PRESETS)}")
    return replace(PRESETS[name], max_tokens=max_tokens, seed=seed)


def is_safe(sampling: Sampling) -> bool:
    """Greedy with no penalty and no n-gram ban: nothing that can forbid a token the grammar needs."""
    return (
        sampling.temperature == 0.0
        and sampling.repetition_penalty == 1.0
        and sampling.no_repeat_ngram_size == 0
    )


def guard(sampling: Sampling, *, allow_chat: bool = False) -> Sampling:
    """The sampling a constrained call may use: safe settings, unless chat settings are allowed."""
    if is_safe(sampling) or allow_chat:
        return sampling
    return Sampling(max_tokens=sampling.max_tokens, seed=sampling.seed)


def run_warning(preset_name: str, allow_chat: bool) -> str | None:
    """The warning a run logs and shows in its summary when chat settings reach constrained calls."""
    return CHAT_IN_CONSTRAINED if allow_chat and not is_safe(preset(preset_name, 1)) else None
