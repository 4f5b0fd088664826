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
Each field is scored twice: over every record, and over the records whose gold has a value (an
invented value the judge refuses is left null, which is right wherever the gold is null too).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from eval_modes import _pct

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
    script = Path(__file__).with_name("eval_modes.py")
    command = [sys.executable, str(script), "--schema", schema, "--records", str(args.records)]
    command += ["--modes", args.modes, "--out", str(out)]
    if args.keep:
        command += ["--db", f"sqlite:///{Path(args.keep).resolve() / out.with_suffix('.db').name}"]
    subprocess.run(command, env=env, check=True, cwd=folder, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


_SCORES = ("field_accuracy", "stated_accuracy")  # every record; the records whose gold has a value


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--records", type=int, default=8)
    parser.add_argument("--models", default="bundled,qwen2.5-coder-1.5b")
    parser.add_argument("--modes", default="two-pass,one-pass")
    parser.add_argument("--attempts", type=int, default=1)
    parser.add_argument("--out", default="grounded_fields.json")
    parser.add_argument("--bounds", action="store_true", help="score what production stores: bounds in force")
    parser.add_argument("--keep", help="a folder to keep each cell's database in (its rows, calls, evidence)")
    args = parser.parse_args()
    results: dict[str, dict] = {}
    print("| model | mode | field | grounded off | grounded on | off, gold stated | on, gold stated |")
    print("|---|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for model in args.models.split(","):
            for schema, fields in FIELDS.items():
                off, on = (_cell(model, grounded, schema, args, folder) for grounded in (False, True))
                results[f"{model}/{schema}"] = {"off": off, "on": on}
                for mode in args.modes.split(","):
                    for field in fields:
                        cells = " | ".join(_pct(r[mode][k].get(field)) for k in _SCORES for r in (off, on))
                        print(f"| {model} | {mode} | {field} | {cells} |", flush=True)
    Path(args.out).write_text(json.dumps(results, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
