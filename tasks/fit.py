"""Fit a record into the model's context, counted in the engine's own tokens, not in characters.

Characters are a poor measure: 6,000 Chinese characters are ~6,000 tokens or more, and such a text
overflowed a 4,096-token context (the record then failed, and was queued although no retry could
help). So the source text gets the room the context leaves after the prompt's scaffolding, the
reasoning notes' budget, the formatting request and the formatting budget; a longer text is cut to
that room (and to the prompts' `MAX_SOURCE_CHARS` in any case). Engines without a tokenizer (test
doubles) are not counted.

A cut text is never `ok`: what stood after the cut was never read (the line items of a long receipt,
the second expense of a statement, the signature at the bottom of a thread), so the row is at best
`partial`, with the reason (`cut_verdict`), and the run summary counts such records (`CUT`). Until
long texts are split (issue 30), that is the only honest answer.
Counting costs a server round trip, so a text whose bytes already fit is not counted (a token is at
least one byte), and the prompt's scaffolding is counted once per schema.
"""

from __future__ import annotations

from dataclasses import dataclass

from formwork.schemas.registry import Schema
from formwork.tasks.engines.base import Engine, RequestRejected
from formwork.tasks.prompts import MAX_SOURCE_CHARS, reasoning_messages
from formwork.tasks.validate import Verdict

REQUEST_TOKENS = 256  # the formatting request, validation feedback and chat-template markers
MIN_SOURCE_TOKENS = 32
CUT = "the text was cut to"  # begins the reason of every row whose text was cut (counted in summaries)


@dataclass(frozen=True)
class Fitted:
    """The text to send, how many tokens the reasoning pass may write, and whether the text was cut."""

    text: str
    reasoning_cap: int | None
    cut: bool = False


_scaffolds: dict[tuple[tuple[str, ...], str], int] = {}  # (models, schema digest) -> tokens


def count_tokens(engines: list[Engine], text: str) -> int:
    """The most tokens any of the engines makes of `text`."""
    return max(engine.count_tokens(text) for engine in engines)  # type: ignore[attr-defined]


def _scaffold(engines: list[Engine], schema: Schema) -> int:
    """Tokens of the prompt without the text: counted once per engines and schema, not per record."""
    key = (tuple(e.model for e in engines), schema.digest)  # the model names its tokenizer
    if key not in _scaffolds:
        prompt = "\n".join(m["content"] for m in reasoning_messages(schema, ""))
        _scaffolds[key] = count_tokens(engines, prompt)
    return _scaffolds[key]


def counted_engines(engines: tuple[Engine, ...]) -> list[Engine]:
    """The engines that know their context and tokenizer (test doubles do not)."""
    return [e for e in dict.fromkeys(engines) if getattr(e, "context_window", None)]


def source_room(schema: Schema, counted: list[Engine], reasoning: int, formatting: int) -> tuple[int, int]:
    """(the smallest context, the tokens it leaves the source text); raise RequestRejected if too few."""
    window = min(e.context_window for e in counted)  # type: ignore[attr-defined]
    fixed = _scaffold(counted, schema) + REQUEST_TOKENS + formatting
    room = window - fixed - reasoning
    if room < MIN_SOURCE_TOKENS:
        raise RequestRejected(
            f"a context of {window} tokens cannot hold this schema's prompts ({fixed} tokens) plus "
            f"{reasoning} reasoning tokens",
            hint="use a model with a larger context, or lower reasoning_max_tokens / format_max_tokens",
        )
    return window, room


def fit_source(
    text: str, schema: Schema, engines: tuple[Engine, ...], reasoning: int, formatting: int
) -> Fitted:
    """Cut `text` to the room the smallest context leaves; raise RequestRejected if there is none."""
    longest = len(text) > MAX_SOURCE_CHARS  # the prompts show no more than this, whatever the context
    text = text[:MAX_SOURCE_CHARS]
    counted = counted_engines(engines)
    if not counted:
        return Fitted(text, None, longest)
    window, room = source_room(schema, counted, reasoning, formatting)
    fixed = window - room - reasoning
    size = len(text.encode("utf-8"))  # a token is at least one byte: most texts fit without counting
    if size > room:
        size = count_tokens(counted, text)
    cut = size > room
    if cut:
        chars = int(len(text) * room / size)
        while chars > 0 and count_tokens(counted, text[:chars]) > room:
            chars = int(chars * 0.9)
        text, size = text[:chars], count_tokens(counted, text[:chars])
    return Fitted(text, window - fixed - size, cut or longest)


def cut_verdict(verdict: Verdict, chars: int) -> Verdict:
    """The verdict of a record whose text was cut to `chars` characters: an `ok` becomes `partial`,
    and every status carries the reason."""
    return verdict.capped(f"{CUT} {chars} characters to fit the context: what came after was never read")
