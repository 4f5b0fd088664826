"""Enum-first advice and the grammar-compile check.

The enum-first rules keep a schema safe to decode under a grammar and easy to validate: every property
required and optional meaning `null` (a missing key and a null never confused; a failed non-critical
field can be nulled honestly), bounded strings and arrays (a looping model cannot run to the token
budget), `additionalProperties: false` (the grammar offers only the schema's keys), a `description` on
every field (the field guide the reasoning pass reads). schemas/normalise.py applies what it can by
itself; `lint_schema` lists what a schema's author should write so that nothing needs changing: the
normaliser's changes and refusals, plus the descriptions it cannot invent.
"""

from __future__ import annotations

import json
from typing import Any

from formwork.schemas.walk import walk


def lint_schema(body: dict[str, Any]) -> list[str]:
    """Every way `body` departs from the enum-first rules, as messages that say what to change."""
    from formwork.schemas.normalise import NormaliseProblem, normalise

    try:
        report = normalise(body)
    except NormaliseProblem as exc:
        return exc.reasons
    problems = list(report.changed)
    for pointer, node in walk(report.checked):
        for key, child in (node.get("properties") or {}).items():
            if isinstance(child, dict) and not child.get("description"):
                problems.append(
                    f"#{pointer}/properties/{key}: add a description (the field guide the model reads)"
                )
    return problems


def grammar_compile_error(body: dict[str, Any]) -> str | None:
    """Compile the schema with XGrammar, as the engines will; return its error, or None if it compiles."""
    try:
        import xgrammar
    except ImportError:
        return "xgrammar is not installed (pip install 'formwork[local]'); cannot check compilation"
    try:
        xgrammar.Grammar.from_json_schema(json.dumps(body), any_whitespace=False)
    except Exception as exc:  # xgrammar raises plain RuntimeError/ValueError subclasses
        return f"XGrammar cannot compile it: {exc}"
    return None
