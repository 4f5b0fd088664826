"""Bring a checked output back to the schema as the user wrote it, and prove it validates there.

The normaliser makes every optional property required and nullable (schemas/normalise.py), because a
grammar cannot leave a key out: `null` is how it says "absent". That `null` is the grammar's, not the
user's: their validator, their Pydantic class and their loader reject it wherever their schema does
not allow null (`quantity: int = 1` fails "Input should be a valid integer"). So, walking the user's
own body (refs inlined) beside the data, every optional property whose value is `null`:

- takes the schema's `default` when it has one (Pydantic writes a field's default there), listed as
  defaulted;
- is dropped when the user's schema does not accept null there, listed as absent;
- stays `null` when the user's schema accepts null (then null is a value the user allows).

A null the judge put there (a value it refused, `refused`) is not the grammar's "absent": "this value
was wrong" is not "the text has none", so it never takes a default (Pydantic `quantity: int = 1` would
turn a refused 5 into a stored 1). It stays null where the user's schema accepts null, else it is left
out; either way it is listed as refused, and the row that holds it is partial (or failed) already. A
required key left out that way (an unsure amount) is no bug: the row says why it is missing.

Then the data is validated against the user's ORIGINAL body, not only the checked one. A failure there
means the checked body let through what the user's schema refuses (a key-presence rule such as
`dependencies`, or an `allOf` sibling's `required`, is met by a `null` key and broken once it is
dropped): `problems` says so, and the caller must never store such a row as valid. A non-object root
is checked inside its `{"value": ...}` wrapper.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from formwork.schemas.normalise import ROOT_FIELD, root_wrapped
from formwork.schemas.paths import path_text
from formwork.schemas.validator import validator_class
from formwork.schemas.walk import Node

if TYPE_CHECKING:
    from formwork.schemas.registry import Schema

Path = tuple[str | int, ...]


@dataclass
class Conformed:
    """The data as the user's schema reads it, what was absent or defaulted, and any bug found."""

    data: Any
    absent: list[str] = field(default_factory=list)
    defaulted: dict[str, Any] = field(default_factory=dict)  # path -> the default now in `data`
    problems: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # judge nulls: never defaulted

    def evidence(self) -> list[dict[str, Any]]:
        """Evidence rows (shaped as `Evidence.as_row()`) for each absent, defaulted and refused value."""
        found = [("absent", path, None) for path in self.absent]
        found += [("default", path, value) for path, value in self.defaulted.items()]
        found += [("refused", path, None) for path in self.refused]
        return [
            {"path": path, "value": value, "rule": "none", "kind": kind, "spans": [], "quote": "",
             "score": 0.0, "grounded": kind != "refused"}  # a refused value was not backed
            for kind, path, value in found
        ]  # fmt: skip


class _Walk:
    """One pass over the user's body and the data together; `absent`/`defaulted` collect the paths."""

    def __init__(self, body: Node, refused: set[Path]) -> None:
        self.cls = validator_class(body)
        self.refused = refused
        self.absent: list[Path] = []
        self.defaulted: list[tuple[Path, Any]] = []
        self.kept_refused: list[Path] = []

    def valid(self, node: Any, value: Any) -> bool:
        if not isinstance(node, dict):
            return node is not False
        return self.cls(node, format_checker=self.cls.FORMAT_CHECKER).is_valid(value)

    def fit(self, node: Any, value: Any, path: Path) -> Any:
        if not isinstance(node, dict):
            return value
        for part in node.get("allOf") or []:
            value = self.fit(part, value, path)
        branches = node.get("anyOf") or node.get("oneOf")
        if isinstance(branches, list):
            value = self._branch(branches, value, path)
        if isinstance(value, dict) and isinstance(node.get("properties"), dict):
            value = self._object(node, value, path)
        elif isinstance(value, list):
            value = self._array(node, value, path)
        return value

    def _branch(self, branches: list[Any], value: Any, path: Path) -> Any:
        """The value fitted to the first branch it then satisfies (the branch the grammar took)."""
        for branch in branches:
            marks = len(self.absent), len(self.defaulted), len(self.kept_refused)
            fitted = self.fit(branch, copy.deepcopy(value), path)
            if self.valid(branch, fitted):
                return fitted
            del self.absent[marks[0] :], self.defaulted[marks[1] :], self.kept_refused[marks[2] :]
        return value

    def _object(self, node: Node, value: dict[str, Any], path: Path) -> dict[str, Any]:
        required = set(node.get("required") or [])
        out = dict(value)
        for key, child in node["properties"].items():
            if key not in out:
                continue
            if out[key] is None and (*path, key) in self.refused:
                if not self.valid(child, None):
                    del out[key]  # the user's schema cannot say "wrong" here: leave it out, never default
                self.kept_refused.append((*path, key))
                continue
            if out[key] is None and key not in required and isinstance(child, dict):
                default = child.get("default", None)
                if default is not None and self.valid(child, default):
                    out[key] = copy.deepcopy(default)
                    self.defaulted.append(((*path, key), out[key]))
                elif not self.valid(child, None):
                    del out[key]
                    self.absent.append((*path, key))
                continue
            out[key] = self.fit(child, out[key], (*path, key))
        return out

    def _array(self, node: Node, value: list[Any], path: Path) -> list[Any]:
        prefix = node.get("prefixItems") if isinstance(node.get("prefixItems"), list) else None
        items = node.get("items")
        if prefix is None and isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, node.get("additionalItems")
        prefix = prefix or []
        return [
            self.fit(prefix[i] if i < len(prefix) else items, item, (*path, i))
            for i, item in enumerate(value)
        ]


def _refused_required(error: Any, refused: set[Path]) -> bool:
    """A `required` error for keys the judge refused and left out: the row says why (it is never `ok`),
    so the schema's refusal of it is expected, not a bug."""
    if error.validator != "required" or not isinstance(error.instance, dict):
        return False
    at = tuple(error.absolute_path)
    missing = [key for key in error.validator_value if key not in error.instance]
    return bool(missing) and all((*at, key) in refused for key in missing)


def conform(schema: Schema, data: Any, refused: set[Path] | None = None) -> Conformed:
    """`data` (valid against `schema.checked_body`) as `schema.body` reads it, validated there;
    `refused` holds the paths (as the checked data has them) the judge nulled."""
    body = schema.inlined_body
    wrapped = root_wrapped(body) and isinstance(data, dict)
    inner = data.get(ROOT_FIELD) if wrapped else data
    prefix: Path = (ROOT_FIELD,) if wrapped else ()
    walk = _Walk(schema.body, {p[len(prefix) :] for p in refused or set() if p[: len(prefix)] == prefix})
    fitted = walk.fit(body, copy.deepcopy(inner), ())
    validator = walk.cls(schema.body, format_checker=walk.cls.FORMAT_CHECKER)
    left_out = set(walk.kept_refused)
    problems = [
        f"{path_text(tuple(e.absolute_path))}: {e.message} (the schema as written refuses the output once "
        "its absent values are left out, though the checked body accepted it)"
        for e in validator.iter_errors(fitted)
        if not _refused_required(e, left_out)
    ]
    out = {**data, ROOT_FIELD: fitted} if wrapped else fitted
    return Conformed(
        out,
        [path_text((*prefix, *p)) for p in walk.absent],
        {path_text((*prefix, *p)): value for p, value in walk.defaulted},
        problems,
        [path_text((*prefix, *p)) for p in walk.kept_refused],
    )
