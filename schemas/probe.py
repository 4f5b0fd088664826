"""Find the constraints a grammar lets through, with no model: walk XGrammar's token mask at random.

Grammar engines drop some JSON Schema keywords silently, so "the grammar enforces it" must be shown,
never assumed. The probe builds a tokenizer of the 256 single bytes plus a stop token, compiles the
grammar body, and samples documents by picking a random allowed token at each step (biased towards
closing quotes and brackets, so documents finish within the length cap). Every finished document is
valid under the grammar by construction; validating it against the user's schema with jsonschema
shows which keywords the grammar did not enforce. A keyword the probe catches is never reported as
enforced (tests/test_probe.py pins the table in schemas/normalise.py against it).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from jsonschema.exceptions import ValidationError

from formwork.schemas.grammar_body import CHECKED_AFTER
from formwork.schemas.validator import validator_of

STOP = 256  # the token id of the synthetic vocabulary's stop token
CLOSERS = [ord(c) for c in '"}],'] + [STOP]


@dataclass
class ProbeResult:
    """What the samples showed: how many finished, and which keywords failed how often."""

    samples: int = 0
    finished: int = 0
    violated: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)  # keyword -> one document that broke it


@cache
def _compiler() -> Any:
    import xgrammar

    vocab = [bytes([b]) for b in range(256)] + [b"</s>"]
    info = xgrammar.TokenizerInfo(vocab, xgrammar.VocabType.RAW, vocab_size=len(vocab), stop_token_ids=[STOP])
    return xgrammar.GrammarCompiler(info, max_threads=1)


def _sample(matcher: Any, bitmask: Any, rng: random.Random, max_tokens: int) -> bytes | None:
    out = bytearray()
    for _ in range(max_tokens):
        matcher.fill_next_token_bitmask(bitmask)
        words = bitmask[0].numpy().view(np.uint32)
        allowed = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")[: STOP + 1])
        if allowed.size == 0:
            return None
        closers = [t for t in CLOSERS if t in set(allowed.tolist())]
        token = rng.choice(closers) if closers and rng.random() < 0.35 else int(rng.choice(allowed.tolist()))
        if token == STOP:
            return bytes(out)
        if not matcher.accept_token(token):
            return None
        out.append(token)
        if matcher.is_terminated():
            return bytes(out)
    return None


def _read(document: bytes) -> tuple[Any, str | None, bool]:
    """The document's value and text, read leniently, and whether a strict reader takes it too.

    XGrammar 0.2.9 lets surrogates (U+D800-DFFF, each one character) and raw control characters into
    strings; long documents nearly always hold one, so a strict reader would leave big schemas
    unprobed. Read past them, so the content is still checked; the caller counts them as defects.
    """
    try:
        text = document.decode("utf-8", errors="surrogatepass")
        data = json.loads(text, strict=False)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None, None, False
    try:
        json.loads(document.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return data, text, False
    return data, text, True


NAMED = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
INDEXED = {"allOf", "anyOf", "oneOf", "prefixItems", "items"}


def _blame(error: ValidationError) -> str:
    """The keyword that let `error` through: the outermost one on its schema path that the grammar does
    not read (an `enum` inside an `else` is the `else`'s, reported as checked after), else its own."""
    path = list(error.absolute_schema_path)
    index = 0
    while index < len(path) - 1:
        keyword = path[index]
        if keyword in CHECKED_AFTER:
            return str(keyword)
        step = 2 if keyword in NAMED or (keyword in INDEXED and isinstance(path[index + 1], int)) else 1
        index += step
    return str(error.validator)


def probe(grammar_body: dict[str, Any], checked_body: dict[str, Any], samples: int = 64,
          seed: int = 0, max_tokens: int = 400) -> ProbeResult:  # fmt: skip
    """Sample `samples` grammar-valid documents of `grammar_body`; validate them against `checked_body`."""
    import xgrammar

    compiled = _compiler().compile_json_schema(json.dumps(grammar_body), any_whitespace=False)
    bitmask = xgrammar.allocate_token_bitmask(1, STOP + 1)
    validator = validator_of(checked_body, checked_body)
    rng, result = random.Random(seed), ProbeResult()
    for _ in range(samples):
        result.samples += 1
        matcher = xgrammar.GrammarMatcher(compiled)
        document = _sample(matcher, bitmask, rng, max_tokens)
        if document is None:
            continue
        data, text, strict = _read(document)
        if not strict:
            result.violated["(not JSON)"] += 1  # a grammar defect, counted apart from the keywords
        if text is None:
            continue
        result.finished += 1
        for keyword in {_blame(error) for error in validator.iter_errors(data)}:
            result.violated[str(keyword)] += 1
            result.examples.setdefault(str(keyword), text)
    return result
