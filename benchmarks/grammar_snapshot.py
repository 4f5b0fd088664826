"""Every gold record's grounded grammar, written to a file, so that a change to the candidates can be
shown to change nothing it should not (or exactly what it should).

    .venv/bin/python benchmarks/grammar_snapshot.py /tmp/before.json   # on the old code
    .venv/bin/python benchmarks/grammar_snapshot.py /tmp/after.json    # on the new code
    .venv/bin/python benchmarks/grammar_snapshot.py --compare /tmp/before.json /tmp/after.json
    # --real (each of the three): the real records of examples/gold/real too

Each record's grammar is built as `ExtractOptions.formatting_grammar` builds it for the formatting
pass, three ways: without notes (one-pass modes), with the gold answer's values as the notes (two-pass,
the model's intent), and once more with the same notes (a second attempt, which must equal the first).
`--compare` reports, per gold set, how many records have the same grammar, the first differences, and
every gold value the old grammars offered that the new ones do not (a model could no longer write it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.evaluation.gold import load_gold

GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold"
GROUNDED = ExtractOptions(grounded_decoding=True)
SIGNATURE = GOLD.parent / "schemas" / "email_signature.schema.json"
REAL_SCHEMAS = {"contact_textmine_jdr": "contact", "contact_textmine_jdf": "contact",
                "shop_receipt_sroie": "shop_receipt", "signature_textmine_jdr": str(SIGNATURE)}  # fmt: skip


def _notes(gold: Any) -> str:
    return json.dumps(gold, ensure_ascii=False)


def _schema_name(path: Path) -> str:
    """A gold file's schema (examples/gold/real/README.md names the real sets' own)."""
    return REAL_SCHEMAS.get(path.stem, path.stem.removesuffix("_zh_ja"))


def _records(real: bool) -> dict[str, Any]:
    """Every gold record of every set (with `--real`, the real records' too), keyed `set/id`, with its
    schema."""
    found = {}
    for path in sorted([*GOLD.glob("*.jsonl"), *(GOLD.glob("real/*.jsonl") if real else [])]):
        schema = load_schema(_schema_name(path))
        found |= {f"{path.stem}/{record.id}": (schema, record) for record in load_gold(path, schema)}
    return found


def snapshot(real: bool) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, (schema, record) in _records(real).items():
        notes = _notes(record.gold)
        found[key] = [
            GROUNDED.formatting_grammar(schema, record.text, record.meta, n) for n in ("", notes, notes)
        ]
    return found


def _offered(grammar: Any, gold: Any, path: str = "") -> set[str]:
    """The gold values (`path=value`) that an enum of `grammar` offers, at any depth."""
    if not isinstance(grammar, dict):
        return set()
    if isinstance(gold, dict):
        props = grammar.get("properties") or {}
        return set().union(*(_offered(props.get(k), v, f"{path}.{k}") for k, v in gold.items()))
    if isinstance(gold, list):
        return set().union(*(_offered(grammar.get("items"), v, f"{path}[{i}]") for i, v in enumerate(gold)))
    only_null = gold is None and grammar.get("type") == "null"  # nothing else to choose
    enum = grammar.get("enum", [])
    spaced = isinstance(gold, str) and _spaced(gold) in {_spaced(v) for v in enum if isinstance(v, str)}
    return {f"{path}={gold!r}"} if gold in enum or spaced or only_null else set()


def _spaced(written: str) -> str:
    """A string with its line breaks and runs of spaces as one space: a gold address of three lines
    is written on one line ("LOT 6, JALAN BATAI, PLAZA BATAI"), the text's run keeps its breaks."""
    return " ".join(written.split())


def _lost(before: dict[str, Any], after: dict[str, Any], real: bool) -> list[str]:
    """The gold values some grammar of a record offered before and the same grammar does not now."""
    lost = []
    for key, (_, record) in _records(real).items():
        for old, new in zip(before.get(key, []), after.get(key, []), strict=False):
            lost += [f"{key} {v}" for v in sorted(_offered(old, record.gold) - _offered(new, record.gold))]
    return lost


def compare(before: dict[str, Any], after: dict[str, Any], real: bool) -> int:
    changed = [key for key in before if before[key] != after.get(key)]
    unstable = [key for key, built in after.items() if built[1] != built[2]]
    sets: dict[str, list[int]] = {}
    for key in before:
        counts = sets.setdefault(key.split("/")[0], [0, 0])
        counts[0] += 1
        counts[1] += key not in changed
    for name, (total, same) in sets.items():
        print(f"{name}: {same}/{total} records with the same grammars (no notes, notes, second attempt)")
    print(f"records whose second attempt differs from the first: {len(unstable)}")
    for key in changed[:5]:
        print(f"differs: {key}")
    lost = _lost(before, after, real)
    print(f"gold values offered before and not now: {len(lost)}")
    for value in lost[:20]:
        print(f"lost: {value}")
    return 1 if changed or unstable or lost or set(before) != set(after) else 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--real", action="store_true", help="the real gold sets too (examples/gold/real)")
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(f.read_text()) for f in args.files)
        sys.exit(compare(before, after, args.real))
    args.files[0].write_text(json.dumps(snapshot(args.real), ensure_ascii=False, sort_keys=True))


if __name__ == "__main__":
    main()
