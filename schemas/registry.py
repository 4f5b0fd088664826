"""Find a schema by built-in name, by file or as a Pydantic model, and describe it.

A schema is a JSON Schema (any draft jsonschema knows; 2020-12 when `$schema` says none) with optional
Formwork annotations: `title` (its name; the file's name otherwise, `schema-` and the body's hash for
a body with no file), `x-version` (an integer bumped on every change; without it the version is a
hash of the canonical body, so each body is its own version and results stay tied to the schema that
made them) and `x-critical: true` on fields whose failure
fails the whole record (a field that cannot be null is critical too: it cannot be nulled). The body
as written is kept for the digest; schemas/normalise.py derives what the grammar decodes
(`grammar_body`) and what jsonschema checks after (`checked_body`). A schema that cannot be loaded
stops the run before any record is touched, with a message that says what to fix.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from jsonschema.protocols import Validator

from formwork.schemas.annotations import DateOrder, date_order
from formwork.schemas.examples import example_problem
from formwork.schemas.lint import grammar_compile_error
from formwork.schemas.normalise import MAX_LEVELS, TOO_DEEP, Normalised, NormaliseProblem, normalise
from formwork.schemas.problems import SchemaProblem
from formwork.schemas.refs import inline_refs
from formwork.schemas.validator import SchemaError, check_schema, validator_of
from formwork.schemas.walk import nested_deeper, types_of

BUILTIN_DIR = Path(__file__).parent / "builtin"


@dataclass(frozen=True)
class Schema:
    """A loaded, checked schema and the facts the pipeline needs about it."""

    name: str
    version: int
    body: dict[str, Any]
    source: str
    hashed_version: bool = False  # True when the body had no x-version: the label shows the hash

    @cached_property
    def normalised(self) -> Normalised:
        """The two derived bodies and the report of what was changed and what is checked after."""
        return normalise(self.body)

    @property
    def grammar_body(self) -> dict[str, Any]:
        """What the formatting pass decodes under: only enforced keywords, every value bounded."""
        return self.normalised.grammar

    @property
    def checked_body(self) -> dict[str, Any]:
        """What every output is validated against: the user's constraints, refs inlined, nullable."""
        return self.normalised.checked

    @cached_property
    def inlined_body(self) -> dict[str, Any]:
        """The body as written with its local `$ref`s inlined: what schemas/conform.py walks."""
        return inline_refs(copy.deepcopy(self.body))

    @property
    def properties(self) -> dict[str, dict[str, Any]]:
        return self.checked_body.get("properties", {})

    @property
    def date_order(self) -> DateOrder | None:
        """How the records write the dates their digits leave open (`x-date-order`), if stated."""
        return date_order(self.body)

    @cached_property
    def critical_fields(self) -> frozenset[str]:
        return frozenset(
            k for k, v in self.properties.items() if v.get("x-critical") or "null" not in _accepts(v)
        )

    @cached_property
    def validator(self) -> Validator:
        return validator_of(self.body, self.checked_body)

    @cached_property
    def digest(self) -> str:
        """A hash of the canonical body: results record it, so an edit without a version bump shows."""
        return body_digest(self.body)

    @property
    def label(self) -> str:
        return f"{self.name}@{self.digest[:7]}" if self.hashed_version else f"{self.name}@v{self.version}"


def body_digest(body: dict[str, Any]) -> str:
    """The SHA-256 of `body`'s canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _accepts(node: dict[str, Any]) -> set[str]:
    """The JSON types a checked node accepts, looking through anyOf/oneOf (all types if it says none)."""
    branches = node.get("anyOf") or node.get("oneOf")
    if isinstance(branches, list):
        return set().union(*(_accepts(b) for b in branches if isinstance(b, dict)))
    return types_of(node) or {"null", "string", "number", "integer", "boolean", "array", "object"}


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.json"))


def load_schema(name_or_path: str | Path, strict: bool = False) -> Schema:
    """Load a built-in by name, a .json file, or a Pydantic model (`package.module:Model`).

    `strict` refuses any schema the normaliser would have to change. Raise SchemaProblem.
    """
    from formwork.schemas.pydantic_source import is_model_spec, model_schema

    path = Path(name_or_path)
    if path.suffix != ".json" and (BUILTIN_DIR / f"{name_or_path}.json").exists():
        path = BUILTIN_DIR / f"{name_or_path}.json"
    elif not path.exists() and is_model_spec(str(name_or_path)):
        return schema_from_body(model_schema(str(name_or_path)), str(name_or_path), strict=strict)
    elif not path.exists():
        raise SchemaProblem(
            f"unknown schema {str(name_or_path)!r}: not a built-in ({', '.join(builtin_names())}), "
            "no such file, and not a Pydantic model (package.module:Model)"
        )
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SchemaProblem(f"schema file {path} is not readable JSON: {exc}") from exc
    except RecursionError as exc:  # nested ~1,000 deep: past json's own limit
        raise SchemaProblem(f"schema file {path}: {TOO_DEEP}") from exc
    if isinstance(body, dict) and not body.get("title"):
        body = {**body, "title": path.stem}
    return schema_from_body(body, source=str(path), strict=strict)


def schema_from_body(body: Any, source: str, strict: bool = False) -> Schema:
    """Check a schema document's shape and Formwork annotations, then normalise it (or refuse it)."""
    if not isinstance(body, dict):
        raise SchemaProblem(f"{source}: a schema must be a JSON object")
    if nested_deeper(body, MAX_LEVELS):  # before any recursive walk: jsonschema's own check is one
        raise SchemaProblem(f"{source}: {TOO_DEEP}")
    try:
        check_schema(body)
    except SchemaError as exc:
        raise SchemaProblem(f"{source}: not a valid JSON Schema: {exc.message}") from exc
    name, version = body.get("title"), body.get("x-version")
    if name is None or name == "":  # a body with no file to name it (a dict in code): its hash does
        name = f"schema-{body_digest(body)[:12]}"
    if not isinstance(name, str):
        raise SchemaProblem(f'{source}: "title" (the schema\'s name) must be a string')
    if version is not None and (not isinstance(version, int) or isinstance(version, bool) or version < 1):
        raise SchemaProblem(f'{source}: "x-version" must be an integer >= 1 (or leave it out)')
    try:
        normalised = normalise(body, strict=strict)
    except NormaliseProblem as exc:
        raise SchemaProblem(
            f"{source}: schema {name!r} cannot be decoded safely:\n  " + "\n  ".join(exc.reasons)
        ) from exc
    schema = Schema(name=name, version=version or 0, body=body, source=source, hashed_version=version is None)
    schema.__dict__["normalised"] = normalised  # computed once here; cached_property reads it
    if version is None:
        object.__setattr__(schema, "version", int(schema.digest[:7], 16))
    problem = example_problem(body, normalised.checked, schema.validator)  # schemas/examples.py
    if problem:
        raise SchemaProblem(f"{source}: {problem}")
    return schema


def load_checked_schema(name_or_path: str | Path, strict: bool = False) -> Schema:
    """`load_schema`, then compile its grammar body with XGrammar as the engines will; raise SchemaProblem."""
    return _compiled(load_schema(name_or_path, strict=strict))


def load_checked_body(body: Any, source: str) -> Schema:
    """A stored schema body (a retry-queue entry's), checked and compiled like a file."""
    return _compiled(schema_from_body(body, source))


def _compiled(schema: Schema) -> Schema:
    problem = grammar_compile_error(schema.grammar_body)
    if problem:
        raise SchemaProblem(f"{schema.source}: {problem}")
    return schema
