"""A value the text writes only as the answer to the field's own key, in a JSON-like literal, is not backed.

Texts quote structured examples: a form's placeholder `{"email": "jane.doe@example.com"}`, an app's
sample `{"items": [{"name": "apple"}]}`, or a line that tries to steer the model with
`{"emotion": "happy"}`. A model whose output is that JSON copies the literal, and grounding passes it,
because the text does contain it. Whether such a literal is an example or the data cannot be told from
the text (any language, any wording), so it backs nothing on its own: a value counts as pre-written
when every place the text backs it lies inside what a `"key": ...` pair with the field's own key gives
(an enum or boolean, which has no span, when it equals that pair's value). The same value stated
anywhere else in the text still backs it. A text that is JSON as a whole is the data, and exempt.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

from formwork.tasks.grounding.evidence import Evidence
from formwork.tasks.grounding.reading import inside

_DECODER = json.JSONDecoder()
_KEY = re.compile(r'"((?:[^"\\\n]|\\.){1,80})"\s*:\s*')
_LAST_KEY = re.compile(r"([^.\[\]]+)(?:\[\d+\])*$")


def keyed_values(text: str) -> dict[str, list[tuple[int, int, Any]]]:
    """Per key (case-folded), the (start, end, value) of every JSON value the text pairs with it."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            json.loads(stripped)
            return {}  # the whole text is JSON: the data itself, not an example inside prose
        except ValueError:
            pass
    found: dict[str, list[tuple[int, int, Any]]] = defaultdict(list)
    for match in _KEY.finditer(text):
        try:
            value, end = _DECODER.raw_decode(text, match.end())
            key = json.loads(f'"{match.group(1)}"')
        except ValueError:
            continue
        found[str(key).casefold()].append((match.end(), end, value))
    return found


def field_key(path: str) -> str:
    """The key a path ends in: `items[2].name` -> `name`, `tags[0]` -> `tags`."""
    match = _LAST_KEY.search(path)
    return match.group(1).casefold() if match else path.casefold()


def prewritten(evidence: list[Evidence], text: str) -> dict[str, str]:
    """{path: key} for the values backed only by a JSON-like literal's answer to their own key."""
    pairs = keyed_values(text)
    if not pairs:
        return {}
    found = {}
    for proof in evidence:
        given = pairs.get(field_key(proof.path), [])
        if not given:
            continue
        if proof.rule == "none":
            hit = any(value == proof.value and type(value) is type(proof.value) for _, _, value in given)
        else:
            hit = proof.grounded and bool(proof.spans) and all(
                inside(span, [(start, end) for start, end, _ in given]) for span in proof.spans
            )  # fmt: skip
        if hit:
            found[proof.path] = field_key(proof.path)
    return found
