"""Find a schema by built-in name or by file, and describe it: name, version, critical fields.

A schema is a JSON Schema (Draft 2020-12) with three Formwork annotations: `title` (its name),
`x-version` (an integer bumped on every change, so results stay tied to the schema that made them) and
`x-critical: true` on fields whose failure fails the whole record. A schema that cannot be loaded stops
the run before any record is touched, with a message that says what to fix.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from schemas.lint import grammar_compile_error, lint_schema

BUILTIN_DIR = Path(__file__).parent / "builtin"


class SchemaProblem(ValueError):
    """A schema that cannot be used: unknown name, unreadable file, invalid JSON Schema, lint errors."""


@dataclass(frozen=True)
class Schema:
    """A loaded, checked schema and the facts the pipeline needs about it."""

    name: str
    version: int
    body: dict[str, Any]
    source: str

    @property
    def properties(self) -> dict[str, dict[str, Any]]:
        return self.body.get("properties", {})

    @cached_property
    def critical_fields(self) -> frozenset[str]:
        return frozenset(k for k, v in self.properties.items() if v.get("x-critical"))

    @cached_property
    def validator(self) -> Draft202012Validator:
        return Draft202012Validator(self.body, format_checker=Draft202012Validator.FORMAT_CHECKER)

    @cached_property
    def digest(self) -> str:
        """A hash of the canonical body: results record it, so an edit without a version bump shows."""
        canonical = json.dumps(self.body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    @property
    def label(self) -> str:
        return f"{self.name}@v{self.version}"


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.json"))


def load_schema(name_or_path: str | Path) -> Schema:
    """Load a built-in schema by name, or a user's schema from a .json file; raise SchemaProblem."""
    path = Path(name_or_path)
    if path.suffix != ".json" and (BUILTIN_DIR / f"{name_or_path}.json").exists():
        path = BUILTIN_DIR / f"{name_or_path}.json"
    elif not path.exists():
        raise SchemaProblem(
            f"unknown schema {str(name_or_path)!r}: not a built-in ({', '.join(builtin_names())}) "
            "and no such file"
        )
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SchemaProblem(f"schema file {path} is not readable JSON: {exc}") from exc
    return schema_from_body(body, source=str(path))


def schema_from_body(body: Any, source: str) -> Schema:
    """Check a schema document's shape and Formwork annotations, then lint it (enum-first rules)."""
    if not isinstance(body, dict):
        raise SchemaProblem(f"{source}: a schema must be a JSON object")
    try:
        Draft202012Validator.check_schema(body)
    except SchemaError as exc:
        raise SchemaProblem(f"{source}: not a valid JSON Schema: {exc.message}") from exc
    name, version = body.get("title"), body.get("x-version")
    if not isinstance(name, str) or not name:
        raise SchemaProblem(f'{source}: add a "title" (the schema\'s name)')
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SchemaProblem(f'{source}: add "x-version": 1 (an integer, bumped on every change)')
    problems = lint_schema(body)
    if problems:
        raise SchemaProblem(
            f"{source}: schema {name!r} breaks the enum-first rules:\n  " + "\n  ".join(problems)
        )
    return Schema(name=name, version=version, body=body, source=source)


def load_checked_schema(name_or_path: str | Path) -> Schema:
    """`load_schema`, then compile it with XGrammar as the engines will; raise SchemaProblem if it fails."""
    return _compiled(load_schema(name_or_path))


def load_checked_body(body: Any, source: str) -> Schema:
    """A stored schema body (a retry-queue entry's), checked and compiled like a file."""
    return _compiled(schema_from_body(body, source))


def _compiled(schema: Schema) -> Schema:
    problem = grammar_compile_error(schema.body)
    if problem:
        raise SchemaProblem(f"{schema.source}: {problem}")
    return schema
