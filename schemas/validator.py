r"""The one jsonschema validator class Formwork uses: every pattern read by the `regex` module.

JSON Schema's patterns are ECMA-262 regular expressions, and schemas in the wild use its Unicode
property classes (`\p{L}`, `\P{C}`, `[^\p{Cc}]`): 16 of 206 real-world schemas in BENCHMARKS.md
section 5. Python's `re` cannot read them, so jsonschema as shipped calls such a schema invalid (the
metaschema's `format: regex`) and would raise on its `pattern` keyword. The `regex` module reads them
and otherwise behaves like `re`, so every check that reads a pattern goes through it: `pattern`,
`patternProperties`, the keys `additionalProperties` lets pass, and `format: regex` (the metaschema
check and outputs alike). The schema's load, the normaliser, the probe and the validation of every
output all build their validator here, so no two of them read a pattern differently.

Every format jsonschema can check is checked whatever draft the schema declares: draft-04 names no
`date`, `time`, `uuid` or `iri`, and jsonschema's draft-04 checker passes "not-a-date" as a `date`,
though the user plainly meant one. A format with no checker at all is reported by the normaliser.

One gap is refused rather than papered over: jsonschema's `unevaluatedProperties` reads the
`patternProperties` keys with `re` deep inside its own code (`re_only_gaps`).

A backtracking engine can take exponential time: `^(\d|\d\d)+$` against one run of 40 digits and a
letter held a run (and the GIL) for hours. So every match has a time budget (`search_within`: a value
the pattern cannot decide in `PATTERN_SECONDS` is refused, said so), and a pattern that already blows
up on a short probe (`slow_patterns`: runs of digits, letters or spaces) is refused when the schema is
loaded, naming it, rather than timing out on every record.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import regex
from jsonschema import FormatChecker, validators
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator

from formwork.schemas.walk import walk

Keyword = Callable[[Validator, Any, Any, dict[str, Any]], Iterator[ValidationError]]


PATTERN_SECONDS = 0.1  # one match; a linear pattern decides a 10,000-character value in microseconds
PROBE_SECONDS = 0.05  # a probe of 41 characters: a pattern slower than this backtracks without bound
PROBES = tuple(run * (40 // len(run)) + "!" for run in ("1", "a", "A", " ", "a1", "1.", "a "))


def search_within(
    pattern: str | regex.Pattern[str], text: str, seconds: float = PATTERN_SECONDS
) -> bool | None:
    """Whether `pattern` matches somewhere in `text`; None when it cannot tell within `seconds`."""
    try:  # `regex` caches compiled patterns, as `re` does; concurrent=False: see tasks/grounding/spans.py
        return regex.search(pattern, text, concurrent=False, timeout=seconds) is not None
    except TimeoutError:
        return None


def _matches(pattern: str, text: str) -> bool:
    return bool(search_within(pattern, text))  # a key the pattern cannot decide in time matches nothing


def _is_regex(instance: object) -> bool:
    return not isinstance(instance, str) or bool(regex.compile(instance))


def _pattern(
    validator: Validator, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    found = search_within(pattern, instance)
    if found is None:
        yield ValidationError(
            f"{instance!r} cannot be checked against {pattern!r} (over {PATTERN_SECONDS} s): refused"
        )
    elif not found:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Validator, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(shipped: Keyword) -> Keyword:
    """jsonschema's own keyword, with the keys our patterns match declared as properties instead."""

    def check(
        validator: Validator, value: Any, instance: Any, schema: dict[str, Any]
    ) -> Iterator[ValidationError]:
        patterns = schema.get("patternProperties")
        if validator.is_type(instance, "object") and isinstance(patterns, dict):
            matched = {k: True for k in instance if any(_matches(p, k) for p in patterns)}
            rest = {k: v for k, v in schema.items() if k != "patternProperties"}
            schema = {**rest, "properties": {**matched, **(schema.get("properties") or {})}}
        yield from shipped(validator, value, instance, schema)

    return check


@cache
def _extended(base: type[Validator]) -> type[Validator]:
    checker = FormatChecker()
    newest = validators.Draft202012Validator.FORMAT_CHECKER.checkers  # not FormatChecker's: draft 3 `time`
    shipped = {**newest, **base.FORMAT_CHECKER.checkers}  # the declared draft's own reading wins
    checker.checkers = {**shipped, "regex": (_is_regex, regex.error)}
    keywords: dict[str, Keyword] = {"pattern": _pattern, "patternProperties": _pattern_properties}
    if "additionalProperties" in base.VALIDATORS:
        keywords["additionalProperties"] = _additional_properties(base.VALIDATORS["additionalProperties"])
    return validators.extend(base, keywords, format_checker=checker)


def validator_class(body: dict[str, Any]) -> type[Validator]:
    """The validator class for `body`'s draft (its `$schema`; 2020-12 by default), patterns by `regex`."""
    return _extended(validators.validator_for(body))


def check_schema(body: dict[str, Any]) -> None:
    """Validate `body` against its draft's metaschema, patterns read by `regex`; raise SchemaError."""
    cls = validator_class(body)
    cls.check_schema(body, format_checker=cls.FORMAT_CHECKER)


def validator_of(body: dict[str, Any], checked: dict[str, Any]) -> Validator:
    """A validator for `checked` (a normalised body) under the draft `body` declares, formats checked."""
    cls = validator_class(body)
    return cls(checked, format_checker=cls.FORMAT_CHECKER)


def re_only_gaps(checked: dict[str, Any]) -> list[str]:
    """Why `checked` cannot be validated: `unevaluatedProperties` beside a pattern key only `regex` reads."""
    nodes = list(walk(checked))
    if not any("unevaluatedProperties" in node for _, node in nodes):
        return []
    gaps = []
    for pointer, node in nodes:
        for key in node.get("patternProperties") or {}:
            try:
                re.compile(key)
            except re.error:
                gaps.append(
                    f"#{pointer}/patternProperties: key {key!r} is beyond Python's re, and jsonschema "
                    "reads it with re for unevaluatedProperties; rewrite it without \\p{...} classes"
                )
    return gaps


def slow_patterns(checked: dict[str, Any]) -> list[str]:
    """Why `checked` cannot be matched in bounded time: each `pattern` (or `patternProperties` key)
    that a short probe (`PROBES`) keeps busy past `PROBE_SECONDS`, with the pointer and the fix."""
    problems = []
    for pointer, node in walk(checked):
        found = [("pattern", node["pattern"])] if isinstance(node.get("pattern"), str) else []
        keys = node.get("patternProperties") if isinstance(node.get("patternProperties"), dict) else {}
        for where, pattern in [*found, *(("patternProperties", key) for key in keys)]:
            slow = next((p for p in PROBES if search_within(pattern, p, PROBE_SECONDS) is None), None)
            if slow is not None:
                problems.append(
                    f"#{pointer}/{where}: {pattern!r} takes over {PROBE_SECONDS} s on {slow!r} (it "
                    "backtracks without bound, e.g. overlapping alternatives such as (\\d|\\d\\d)+); "
                    "rewrite it so each character can match one way only (\\d+)"
                )
    return problems


__all__ = [
    "PATTERN_SECONDS", "SchemaError", "check_schema", "re_only_gaps", "search_within", "slow_patterns",
    "validator_class", "validator_of",
]  # fmt: skip
