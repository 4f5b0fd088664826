"""Teacher forcing for the embedded engine: score a given answer as if the model had written it.

The judge's confidence is the probability the formatting pass gave each value among the values the
grammar allowed. To measure that judge apart from what the model happens to write (feed it a perfect
answer, or one with a wrong value, and see what the confidence stops), the model must be made to write
a given text under the same grammar mask, and report the same per-token logprobs it would have
reported had it chosen that text itself. The decode loop does the masking and the logprobs; this module
only chooses the next token: among the allowed tokens that write the next bytes of the answer, the one
the model finds most likely (ties to the lowest id, as `np.argmax` breaks them), then an end token once
the answer is written. For text the engine generated greedily that is exactly the token it chose at
every step, so the scores equal the ones it reported; for any other text it is the tokenization the
model itself prefers. `tasks.engines.spelling` then counts every other tokenization of the same bytes,
as it does for generated text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from formwork.tasks.engines.base import RequestRejected


class Spellings:
    """Every token id by the bytes it writes, to find the tokens that begin a given byte string."""

    def __init__(self, pieces: list[bytes]):
        by_bytes: dict[bytes, list[int]] = defaultdict(list)
        for token, piece in enumerate(pieces):
            if piece:  # end and control tokens are blanked: they write nothing
                by_bytes[piece].append(token)
        self._by_bytes = dict(by_bytes)
        self._longest = max(map(len, self._by_bytes), default=0)

    def starting(self, rest: bytes) -> list[int]:
        """Ids of the tokens whose bytes are a non-empty prefix of `rest`."""
        found: list[int] = []
        for size in range(1, min(len(rest), self._longest) + 1):
            found.extend(self._by_bytes.get(rest[:size], ()))
        return found


def forced_token(
    masked: np.ndarray, rest: bytes, spellings: Spellings, stop_ids: Iterable[int]
) -> int | None:
    """The next token that writes `rest` (an end token once it is empty), the likeliest the grammar
    allows in `masked` (disallowed tokens hold -inf); None when the grammar allows none of them."""
    candidates = np.array(sorted(spellings.starting(rest) if rest else stop_ids), dtype=np.int64)
    if candidates.size == 0:
        return None
    scores = masked[candidates]
    best = int(np.argmax(scores))
    return int(candidates[best]) if np.isfinite(scores[best]) else None


class Forcer:
    """Picks the tokens of forced answers for the decode loop; refuses what the grammar does not allow."""

    def __init__(self, pieces: list[bytes], stop_ids: Iterable[int]):
        self._spellings = Spellings(pieces)
        self._stop_ids = sorted(stop_ids)

    def next(self, answer: bytes, written: int, masked: np.ndarray) -> int:
        """The next token of `answer`, of which `written` bytes are written; RequestRejected when the
        grammar (the -inf entries of `masked`) allows no token that goes on writing it."""
        rest = answer[written:]
        token = forced_token(masked, rest, self._spellings, self._stop_ids)
        if token is None:
            before = answer[:written].decode(errors="replace")[-60:]
            after = repr(rest[:40].decode(errors="replace")) if rest else "the end"
            raise RequestRejected(
                f"the grammar does not allow this answer: after {before!r} it cannot write {after}",
                hint="score only an answer the schema (or the record's grounded schema) allows, "
                "spaced as json.dumps writes it, with its keys in the schema's order",
            )
        return token
