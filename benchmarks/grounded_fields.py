"""Per-field accuracy with grounded decoding on and off, per model and mode; one markdown table.

    .venv/bin/python benchmarks/grounded_fields.py --records 8 --models bundled,qwen2.5-coder-1.5b

Issue 27 asks that choosing a value from the text never costs accuracy on the free-text fields
(`who`, `project` of the expense gold; `name`, `organization` of the contact gold). Each cell runs
`benchmarks/eval_modes.py` (the real `evaluate` flow: stored rows, statuses as production) in its own
process, because the engine and the settings are read once per process; only FORMWORK_GROUNDED_DECODING
and the model differ between cells. Reasoning is greedy and each record is decoded alone (one slot:
with four, the batch a record shares changes the numerics, and the 1.5B's notes for the same record
differed between cells), so in two-pass both cells of a pair see the same reasoning and differ only
in the formatting grammar. `--attempts 1` (the default here) scores
the first answer, and FORMWORK_CALIBRATION=false keeps every value the judge grounds (no bound):
whether a bound keeps a value is a separate question from whether the model chose it right
(`--bounds`: score what production stores, the calibration or its conservative default in force).
Each field is scored three ways: over every record, over the records whose gold has a value (an
invented value the judge refuses is left null, which is right wherever the gold is null too), and
as the model wrote it, before the judge (the first formatting call's JSON, every record): what the
grammar let the model choose, apart from what the judge made of it.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from eval_modes import _pct

from formwork.schemas.registry import load_schema
from formwork.tasks.evaluation.gold import load_gold
from formwork.tasks.evaluation.scoring import compare

GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold"

FIELDS = {"expense": ("who", "project"), "contact": ("name", "organization")}


def _cell(model: str, grounded: bool, schema: str, args: argparse.Namespace, folder: str) -> dict:
    """One eval_modes run: every mode on the first --records records of one gold set."""
    env = dict(os.environ, FORMWORK_GROUNDED_DECODING=str(grounded).lower())
    env["FORMWORK_MAX_ATTEMPTS"] = str(args.attempts)
    env["FORMWORK_LOCAL_SLOTS"] = "1"  # batched slots change the numerics, so the reasoning with them
    if not args.bounds:
        env["FORMWORK_CALIBRATION"] = "false"  # score the value written, not whether a bound keeps it
    env.pop("FORMWORK_LOCAL_MODEL", None)
    if model != "bundled":
        env["FORMWORK_LOCAL_MODEL"] = model
    out = Path(folder) / f"{model}-{schema}-{grounded}.json"
    db = Path(args.keep or folder).resolve() / out.with_suffix(".db").name
    script = Path(__file__).with_name("eval_modes.py")
    command = [sys.executable, str(script), "--schema", schema, "--records", str(args.records)]
    command += ["--modes", args.modes, "--out", str(out), "--db", f"sqlite:///{db}"]
    subprocess.run(command, env=env, check=True, cwd=folder, stdout=subprocess.DEVNULL)
    reports = json.loads(out.read_text())
    for mode, written in _as_written(db, schema, args.records).items():
        reports[mode]["as_written"] = written
    return reports


def _as_written(db: Path, schema_name: str, records: int) -> dict[str, dict[str, float]]:
    """Per mode, each field's accuracy over every record in the first formatting call's JSON (before
    the judge nulls or refuses anything); output that does not parse counts wrong."""
    schema = load_schema(schema_name)
    golds = load_gold(GOLD / f"{schema_name}.jsonl", schema)[:records]
    found: dict[str, dict[str, float]] = {}
    with sqlite3.connect(db) as connection:
        for mode, run in connection.execute("SELECT mode, run_id FROM eval_runs"):
            firsts = connection.execute(
                "SELECT r.key, c.output FROM model_calls c JOIN records r ON r.id = c.record_id "
                "WHERE c.run_id = ? AND c.pass_name = 'formatting' ORDER BY c.id DESC",
                (run,),
            )
            written = dict(firsts.fetchall())  # the first call of each record is read last, and kept
            right = dict.fromkeys(schema.properties, 0)
            for gold in golds:
                got = _parsed(written.get(gold.id, ""))
                for key, value in gold.gold.items():
                    right[key] += compare(schema.properties[key], value, got.get(key)) if got else False
            found[mode] = {key: count / len(golds) for key, count in right.items()}
    return found


# every record; the records whose gold has a value; the model's JSON before the judge, every record
def _parsed(output: str) -> dict | None:
    try:
        data = json.loads(output)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


_SCORES = ("field_accuracy", "stated_accuracy", "as_written")


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--records", type=int, default=8)
    parser.add_argument("--models", default="bundled,qwen2.5-coder-1.5b")
    parser.add_argument("--modes", default="two-pass,one-pass")
    parser.add_argument("--schemas", default=",".join(FIELDS), help="of: " + ", ".join(FIELDS))
    parser.add_argument("--attempts", type=int, default=1)
    parser.add_argument("--out", default="grounded_fields.json")
    parser.add_argument("--bounds", action="store_true", help="score what production stores: bounds in force")
    parser.add_argument("--keep", help="a folder to keep each cell's database in (its rows, calls, evidence)")
    args = parser.parse_args()
    results: dict[str, dict] = {}
    print("| model | mode | field | grounded off | grounded on | off, gold stated | on, gold stated | "
          "off, as written | on, as written |")  # fmt: skip
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for model in args.models.split(","):
            for schema in args.schemas.split(","):
                fields = FIELDS[schema]
                off, on = (_cell(model, grounded, schema, args, folder) for grounded in (False, True))
                results[f"{model}/{schema}"] = {"off": off, "on": on}
                for mode in args.modes.split(","):
                    for field in fields:
                        cells = " | ".join(_pct(r[mode][k].get(field)) for k in _SCORES for r in (off, on))
                        print(f"| {model} | {mode} | {field} | {cells} |", flush=True)
    Path(args.out).write_text(json.dumps(results, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
