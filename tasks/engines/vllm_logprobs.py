"""Token log-probabilities from a vLLM reply, kept only when they are the grammar-masked distribution.

Confidence for an enum value (tasks.confidence.probability) is the probability the formatting pass gave
it among the values the grammar allowed, so the log-probabilities must come from the masked distribution
at temperature 1, as the embedded engine records them. vLLM (0.32, checked on the CPU server) applies the
grammar bitmask to the logits before its sampler, and its default `--logprobs-mode raw_logprobs` takes
log_softmax of those masked logits before temperature and penalties: a forced token (`"` after `{`) comes
back with logprob 0.0, and the runner-up is a masked token at -9999.0 (vLLM's stand-in for -inf). The
serve scripts pin that mode.

A server launched otherwise cannot be told apart by asking it, so every reply is checked instead: its
steps where a single token was allowed (the runner-up masked out) must carry logprob ~0. A raw,
unmasked distribution never has a masked runner-up; a `*_logits` mode gives a forced token its logit,
not 0. A reply that fails, or shows no forced step to check, gets no token logprobs, and then no
confidence is claimed rather than a wrong one. Each step's logprob is then widened to every top token
that spells the same next characters (`engines.spelling`), as the embedded engine does.
"""

from __future__ import annotations

import codecs
from typing import Any

from formwork.tasks.engines.base import Masked
from formwork.tasks.engines.spelling import SPELLINGS, spelled_logprobs

TOP_LOGPROBS = SPELLINGS  # the runner-up shows a forced step; the rest, other spellings of the text
MASKED_OUT = -9999.0  # what vLLM's OpenAI API writes for a -inf log-probability
FORCED_TOLERANCE = 1e-3  # log-probability of a token the grammar forced: 0 up to float rounding


def _step(entry: Any) -> tuple[bytes, float, list[tuple[bytes, float]]] | None:
    """(token bytes, logprob, the top (bytes, logprob), best first) of one `logprobs.content` entry;
    None when malformed."""
    if not isinstance(entry, dict):
        return None
    raw, logprob, tops = entry.get("bytes"), entry.get("logprob"), entry.get("top_logprobs")
    if not isinstance(raw, list) or not all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        return None
    if not isinstance(logprob, int | float) or isinstance(logprob, bool) or not isinstance(tops, list):
        return None
    found = [(t.get("bytes"), t.get("logprob")) for t in tops if isinstance(t, dict)]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for _, v in found):
        return None
    pairs = [(bytes(b) if isinstance(b, list) else b"", float(v)) for b, v in found]
    return bytes(raw), float(logprob), sorted(pairs, key=lambda pair: -pair[1])


def masked_token_logprobs(logprobs: Any, text: str) -> Masked:
    """(`Completion.token_logprobs`, `.token_rivals`, `.token_nulls`) from a chat choice's `logprobs`, or
    ((), (), ()) when they cannot be trusted.

    Pieces are decoded from each token's bytes with an incremental UTF-8 decoder (a character split
    across tokens shows in the token that completes it), and the end token, which the reply's text
    omits, becomes an empty piece, so the pieces join to `text` exactly as the embedded engine's do.
    """
    entries = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(entries, list) or not entries:
        return (), (), ()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pieces: list[tuple[str, float]] = []
    steps: list[tuple[bytes, float, list[tuple[bytes, float]]]] = []
    forced_steps = 0
    for entry in entries:
        step = _step(entry)
        if step is None:
            return (), (), ()
        raw, logprob, tops = step
        if logprob > FORCED_TOLERANCE:
            return (), (), ()  # a logit, not a log-probability
        if len(tops) >= 2 and all(v <= MASKED_OUT for _, v in tops[1:]):
            if abs(logprob) > FORCED_TOLERANCE:
                return (), (), ()  # one token allowed, yet not probability 1: not the masked distribution
            forced_steps += 1
        others = list(tops)
        if (raw, logprob) in others:
            others.remove((raw, logprob))  # the chosen token itself, counted once
        steps.append((raw, logprob, [(b, v) for b, v in others if v > MASKED_OUT]))
        pieces.append((decoder.decode(raw), logprob))
    tail = decoder.decode(b"", final=True)
    if tail:
        pieces[-1] = (pieces[-1][0] + tail, pieces[-1][1])
    joined = "".join(piece for piece, _ in pieces)
    if joined != text and joined.removesuffix(pieces[-1][0]) == text:
        pieces[-1] = ("", pieces[-1][1])  # the end token: in the logprobs, not in the text
        joined = text
    if not forced_steps or joined != text:
        return (), (), ()
    spelled = spelled_logprobs(steps)
    logprobs = tuple((piece, spelled.logprobs[i]) for i, (piece, _) in enumerate(pieces))
    return logprobs, tuple(spelled.rivals), tuple(spelled.nulls)
