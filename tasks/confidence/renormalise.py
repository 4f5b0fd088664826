"""Confidences from a server whose logprobs come before its grammar mask, renormalised over what it allowed.

llama.cpp's server and llama-cpp-python's report each token's log-probability, and its top
alternatives, from the raw logits before the grammar. At `{"answer": "` their top tokens are what a
free answer would write. The masked distribution at a step is the raw one restricted to the tokens the
grammar allowed, renormalised. So where the allowed tokens can be told, the chosen token's masked
log-probability is its raw one minus the log of the allowed tokens' raw mass. They can be told only
where what may follow is a list: an enum, a const, a boolean, or grounded decoding's candidates (an
enum too) in the schema the grammar was built from (`PreMask.schema`). A step's allowed tokens are the
listed ones that write a prefix of the text as it goes on, with every enumerable value swapped for any
of its values. The JSON around the values is taken as written: another spacing the grammar would allow
is left out of both sides of the ratio.

What the list leaves out is bounded, not guessed. An allowed token that is not listed writes a prefix
of some other value's rest and weighs no more than the least listed token; a token that collided
(llama-cpp-python keys its top list by text, so a later token of the same text, such as a part of a
UTF-8 character, overwrites an earlier one's value in place, out of order) counts at its shown value
where it spells what was written and at the last value in order before it where it competes. So each
step's probability is a lower bound on the masked one's. A token that spells the written characters
counts for the written value only where no rival value goes on from it (`"B` may lead to `"Brown"`
as well as to `"Blackwood"`): the list says where each token may lead, so this is exact, where the
embedded engine's `engines.spelling`, which sees no list, counts only tokens that write through the
point where the value is decided. A step gets no probability
(NaN: the value has no confidence, and a bound on it fails closed) when:
- it writes part of a value that is not enumerable (a free string, a number);
- the unlisted tokens could lower it by more than SLACK (ask the server for more top_logprobs);
- or the pieces do not spell the text.
`confidence.field_confidences` then sums the steps per value, as for any engine.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

from formwork.schemas.annotations import value_types
from formwork.tasks.confidence.probability import value_paths, value_spans
from formwork.tasks.engines.base import Completion, LogprobMode, PreMask

UNKNOWN = math.nan
ORDER_SLACK = 1e-6  # a top list sorted best first may tie; anything further out of order is a collision
SLACK = 0.05  # the most the unlisted tokens may lower a step's probability before it is refused
TRAILING = 3  # characters past a value's end that a token may also write (`"},`)


def allowed_values(node: dict[str, Any]) -> list[str] | None:
    """Every JSON text the grammar may write for `node`, or None when that is not a list."""
    if "enum" in node:
        values = list(node["enum"])
    elif "const" in node:
        values = [node["const"]]
    elif value_types(node) == {"boolean"}:
        values = [True, False] + ([None] if "null" in (node.get("type") or []) else [])
    elif node.get("type") == "null":
        values = [None]
    elif isinstance(branches := node.get("anyOf") or node.get("oneOf"), list):
        found = [allowed_values(b) if isinstance(b, dict) else None for b in branches]
        return None if any(f is None for f in found) else sorted({t for f in found for t in f or ()})
    else:
        return None
    return sorted({json.dumps(v, ensure_ascii=ascii) for v in values for ascii in (True, False)})


class _Slots:
    """The enumerable values of one output text: where each stands and what it may be instead."""

    def __init__(self, text: str, schema: dict[str, Any], data: Any) -> None:
        self.text = text
        nodes = dict(value_paths(schema, data))
        self.spans: list[tuple[int, int, int, list[str] | None]] = []  # start, end, scored end, values
        for path, (start, end) in value_spans(text).items():
            is_number = type(json.loads(text[start:end])) in (int, float)
            options = allowed_values(nodes[path]) if path in nodes else None
            self.spans.append((start, end, end + 1 if is_number else end, options))

    def touched(self, at: int, length: int) -> list[int]:
        """The values a token written at `at` is scored for (a number also owns the token after it)."""
        end = at + max(length, 1)
        return [k for k, (start, _, scored, _) in enumerate(self.spans) if at < scored and end > start]

    def open_values(self, k: int, at: int) -> list[str]:
        start, _, _, options = self.spans[k]
        written = self.text[start:at] if at > start else ""
        return [o for o in options or () if o.startswith(written)]

    def unlisted(self, touched: list[int], at: int, listed: set[str]) -> int:
        """How many tokens not in `listed` could write a prefix of a rival of the text: a value still
        open at `at` that the text does not go on to write. Each is one of the rival's prefixes (or the
        whole of it and a few characters after)."""
        count, written = 0, self.text[at:]
        for k in touched:
            start, end = self.spans[k][:2]
            for option in self.open_values(k, at):
                rival = self.text[at:start] + option[max(at - start, 0) :]
                if written.startswith(rival):
                    continue
                ahead = rival + self.text[end : end + TRAILING]
                count += sum(ahead[:n] not in listed for n in range(1, len(ahead) + 1))
        return count

    def leads_elsewhere(self, token: str, at: int, touched: list[int]) -> bool:
        """True when `token`, though it spells the text's next characters, may also go on to write a
        rival value (`"B` of `"Blackwood"` beside `"Brown"`): its mass is then no evidence for the
        written value, only part of the allowed mass."""
        for k in touched:
            start, end = self.spans[k][:2]
            rivals = [o for o in self.open_values(k, at) if o != self.text[start:end]]
            if any(self.fits(token, at, want=(k, rival)) for rival in rivals):
                return True
        return False

    def fits(self, token: str, at: int, want: tuple[int, str] | None = None, open_end: bool = True) -> bool:
        """`token` writes a prefix of some continuation of the text from `at` (with value k written as
        `want[1]` when `want` is given)."""
        if not token:
            return True
        for k, (start, end, _, options) in enumerate(self.spans):
            if options is None or not (start <= at < end or (open_end and at == end > start)):
                continue
            for option in self.open_values(k, at):
                if want is not None and want[0] == k and option != want[1]:
                    continue
                rest = option[at - start :]
                if rest.startswith(token):
                    return True
                if token.startswith(rest) and self.fits(token[len(rest) :], end, want, open_end=False):
                    return True
            return False
        if at >= len(self.text) or token[0] != self.text[at]:
            return False
        return self.fits(token[1:], at + 1, want, open_end=False)


def _step(slots: _Slots, at: int, chosen: str, logprob: float, tops: tuple[tuple[str, float], ...]) -> float:
    """The log of a lower bound on the probability that the grammar-masked model writes the text's next
    characters at `at` (the chosen token, or any allowed one that spells the same); UNKNOWN when the
    bound is looser than SLACK or the step writes a value that is not enumerable."""
    touched = slots.touched(at, len(chosen))
    if not touched or any(slots.spans[k][3] is None for k in touched):
        return UNKNOWN
    written = slots.text[at:]
    same, rivals, ceiling = math.exp(logprob), 0.0, 0.0
    floor = min((lp for token, lp in tops if token != chosen), default=0.0)  # >= every unlisted token
    for i, (token, lp) in enumerate(tops):
        # llama-cpp-python keys the list by text: a later token of the same text overwrites an earlier
        # one's value in place, out of order. The shown value is then a lower bound, and the last
        # entry in order before it an upper bound.
        collided = i + 1 < len(tops) and lp < tops[i + 1][1] - ORDER_SLACK
        if not collided:
            ceiling = lp
        if token == chosen or not token or not slots.fits(token, at):
            continue
        if written.startswith(token) and not slots.leads_elsewhere(token, at, touched):
            same += math.exp(lp)
        else:
            rivals += math.exp(ceiling if collided else lp)
    # Every allowed token not listed writes a prefix of some open value's rest and weighs at most the
    # least listed one: a bound on the rival mass the list leaves out.
    unlisted = slots.unlisted(touched, at, {token for token, _ in tops}) * math.exp(floor)
    if unlisted > SLACK * (same + rivals + unlisted):
        return UNKNOWN
    return min(0.0, math.log(same / (same + rivals + unlisted)))


def logprob_mode(completion: Completion) -> LogprobMode:
    """What a confidence from this completion is: the masked distribution as the engine reported it, a
    renormalised pre-mask one, or none."""
    if completion.pre_mask is not None:
        return "renormalised"
    return "masked" if completion.token_logprobs else "none"


def renormalised(completion: Completion, data: Any) -> Completion:
    """`completion` with `token_logprobs` renormalised from its `pre_mask` (UNKNOWN where that cannot be
    done honestly); unchanged when it has masked logprobs already or none at all."""
    pre: PreMask | None = completion.pre_mask
    if pre is None or completion.token_logprobs:
        return completion
    pieces = [token for token, _, _ in pre.steps]
    if "".join(pieces) != completion.text and "".join(pieces[:-1]) == completion.text:
        pieces[-1] = ""  # the end token: in the logprobs, not in the text
    if "".join(pieces) != completion.text or any(lp > 0 for _, lp, _ in pre.steps):
        return completion
    slots, at, logprobs = _Slots(completion.text, pre.schema, data), 0, []
    for piece, (_, logprob, tops) in zip(pieces, pre.steps, strict=True):
        logprobs.append(_step(slots, at, piece, logprob, tops))
        at += len(piece)
    return replace(completion, token_logprobs=tuple(zip(pieces, logprobs, strict=True)))
