"""Real-world schemas with labelled test documents through the final gate: does Formwork ever store a
row the user's own schema rejects? (issue 21; goal 0)

JSONSchemaBench's MaskBench files each hold a schema and documents labelled valid or invalid. They are
read in place from a snapshot of the repository (nothing fetched is committed or copied):

    # the search tool's fetch of github:guidance-ai/jsonschemabench gives a bare git directory
    python benchmarks/user_schema_gate.py /work/.mirror/guidance-ai+jsonschemabench/repo [--every 50]

Each document is written as the grammar would write it (every declared key present, `null` where the
document has none; a non-object root wrapped as `{"value": ...}`), then passed through the gate a row
passes before it is stored: jsonschema on the checked body, the semantic checks, then
schemas/conform.py and the validation against the body as written. For each document labelled
invalid it reports which stage refused it, or that the gate accepted it:

- accepted as the document itself: the stored row would be one the user's schema rejects (goal 0,
  unless jsonschema itself reads the document as valid: a label the validator disagrees with);
- accepted after conforming: its only fault was a `null` where the schema allows none, which the gate
  reads as "absent" and drops; the row stored validates against the user's schema.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from jsonschema import FormatChecker, validators

from formwork.schemas.conform import conform
from formwork.schemas.normalise import ROOT_FIELD, root_wrapped
from formwork.schemas.paths import semantic_errors
from formwork.schemas.registry import Schema, SchemaProblem, schema_from_body
from formwork.schemas.validator import validator_class

own_regex = validator_class({}).FORMAT_CHECKER.checkers["regex"]


def read_files(mirror: Path, every: int) -> list[tuple[str, dict[str, Any]]]:
    """Every `every`-th MaskBench data file with tests, read from the git directory `mirror`."""
    git = ["git", "--git-dir", str(mirror)]
    names = subprocess.run([*git, "ls-tree", "--name-only", "HEAD", "maskbench/data/"],
                           check=True, capture_output=True, text=True).stdout.splitlines()  # fmt: skip
    names = sorted(names)[::every]
    wanted = "".join(f"HEAD:{n}\n" for n in names).encode()
    batch = subprocess.run([*git, "cat-file", "--batch"], input=wanted, check=True, capture_output=True)
    batch = batch.stdout  # one process for every file
    files, at = [], 0
    for name in names:
        header_end = batch.index(b"\n", at)
        header = batch[at:header_end].split()
        if header[-1] == b"missing":
            at = header_end + 1
            continue
        size = int(header[-1])
        files.append((name, json.loads(batch[header_end + 1 : header_end + 1 + size])))
        at = header_end + 2 + size
    return [(name, doc) for name, doc in files if doc.get("tests")]


def grammar_view(schema: Schema, node: Any, value: Any) -> Any:
    """`value` with each missing optional key of `node` (the checked body) present as `null`."""
    if not isinstance(node, dict):
        return value
    for part in node.get("allOf") or []:
        value = grammar_view(schema, part, value)
    for branch in node.get("anyOf") or node.get("oneOf") or []:
        filled = grammar_view(schema, branch, value)
        if schema.validator.evolve(schema=branch).is_valid(filled):
            value = filled
            break
    if isinstance(value, dict) and isinstance(node.get("properties"), dict):
        required = set(node.get("required") or [])
        value = {**{k: None for k in node["properties"] if k not in required}, **value}
        for key, child in node["properties"].items():
            if value.get(key) is not None:
                value[key] = grammar_view(schema, child, value[key])
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        value = [grammar_view(schema, node["items"], item) for item in value]
    return value


def gate(schema: Schema, document: Any) -> tuple[str, Any]:
    """The stage that refuses `document` ("checked", "semantic", "as written"), or "accepted", and the
    data the gate would store."""
    wrapped = {ROOT_FIELD: document} if root_wrapped(schema.inlined_body) else document
    output = grammar_view(schema, schema.checked_body, wrapped)
    if not schema.validator.is_valid(conform(schema, output).data):  # as tasks/validate.py checks it
        return "checked", None
    if semantic_errors(schema.checked_body, output, json.dumps(document, ensure_ascii=False)):
        return "semantic", None
    done = conform(schema, output)
    return ("as written", None) if done.problems else ("accepted", done.data)


def before(schema: Schema, document: Any) -> Any:
    """What the gate stored before issue 21 (only the draft's own formats, nothing conformed), or None."""
    wrapped = {ROOT_FIELD: document} if root_wrapped(schema.inlined_body) else document
    output = grammar_view(schema, schema.checked_body, wrapped)
    cls = validator_class(schema.body)
    own = FormatChecker()
    own.checkers = {**validators.validator_for(schema.body).FORMAT_CHECKER.checkers, "regex": own_regex}
    return output if cls(schema.checked_body, format_checker=own).is_valid(output) else None


def unwrap(schema: Schema, data: Any) -> Any:
    return data[ROOT_FIELD] if root_wrapped(schema.inlined_body) else data


def kind(stage: str, stored: Any, test: dict[str, Any], shipped: Any, schema: Schema) -> str:
    """What became of one labelled document."""
    if test["valid"]:
        return f"valid, {'accepted' if stage == 'accepted' else 'refused at ' + stage}"
    if stage != "accepted":
        return f"invalid, refused at {stage}"
    if shipped.is_valid(test["data"]):
        return "invalid, accepted: jsonschema reads the document as valid (the label disagrees)"
    if unwrap(schema, stored) == test["data"]:
        return "invalid, accepted as the document itself (goal 0)"
    return "invalid, accepted after conforming (its only fault a null read as absent; the row is valid)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mirror", type=Path, help="the jsonschemabench git directory")
    parser.add_argument("--every", type=int, default=50, help="take every Nth data file (sorted by name)")
    args = parser.parse_args()
    files = read_files(args.mirror, args.every)
    outcomes: Counter[str] = Counter()
    stages: Counter[str] = Counter()
    loaded, leaks, bad_rows, old_bad = 0, [], 0, 0
    for name, entry in files:
        try:
            schema = schema_from_body(entry["schema"], name)
        except SchemaProblem:
            outcomes["schema refused"] += 1
            continue
        except Exception as exc:  # what a benchmark exists to find: a crash is a bug
            outcomes[f"schema crashed: {type(exc).__name__}"] += 1
            continue
        loaded += 1
        shipped = validators.validator_for(schema.body)(
            schema.body, format_checker=schema.validator.FORMAT_CHECKER
        )
        for test in entry["tests"]:
            stage, stored = gate(schema, test["data"])
            old = before(schema, test["data"])
            old_bad += old is not None and not shipped.is_valid(unwrap(schema, old))
            if stored is not None:
                bad_rows += not shipped.is_valid(unwrap(schema, stored))
            label = kind(stage, stored, test, shipped, schema)
            stages[label] += 1
            if "goal 0" in label:
                leaks.append(f"{name}: {test.get('description', '')}"[:160])
    print(f"files: {len(files)}, schemas loaded: {loaded}, {dict(outcomes)}")
    print(f"documents: {sum(stages.values())}")
    for stage, count in sorted(stages.items()):
        print(f"  {stage}: {count}")
    print(f"stored rows the user's schema (jsonschema, every format) rejects: {bad_rows} (goal 0)")
    print(
        f"  the same, with the gate before issue 21 (the draft's own formats, nothing conformed): {old_bad}"
    )
    for leak in leaks:
        print(f"    {leak}")


if __name__ == "__main__":
    main()
