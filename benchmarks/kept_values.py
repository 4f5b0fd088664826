"""What partial rows would keep at each uncalibrated bound, read from an eval database's stored evidence.

    .venv/bin/python benchmarks/kept_values.py EVAL.db GOLD.jsonl --schema S [--bounds 0.9,0.95,0.99]

`formwork eval --calibrate` stores every value with the probability the formatting pass gave it, judged
with no bound. A run with no calibration holds each value to one bound (db.calibrations) and lets no
uncalibrated choice through (an enum the text does not write). So, per eval run (mode) and bound: the
values such a run keeps (backed by the text, a `quote` or `value` field or an enum label the text
writes, probability at least the bound), how many of them match the gold, per field, and how many rows
would keep every scored value. This is how the uncalibrated default was chosen (BENCHMARKS section 17),
without paying for the model once per bound.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections import defaultdict
from typing import Any

from formwork.schemas.registry import load_checked_schema
from formwork.tasks.evaluation.calibration import lower_bound
from formwork.tasks.evaluation.gold import load_gold
from formwork.tasks.evaluation.scoring import compare


def kept(entry: dict[str, Any], bound: float) -> bool:
    """A value a run without calibration keeps: backed, not a bare choice, and sure enough."""
    read = entry.get("rule") in ("quote", "value") or entry.get("kind") != "none"  # a written label is read
    return bool(entry.get("grounded")) and read and (entry.get("confidence") or 0.0) >= bound


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("db")
    parser.add_argument("gold")
    parser.add_argument("--schema", required=True)
    parser.add_argument("--bounds", default="0.9,0.95,0.99")
    args = parser.parse_args()
    schema = load_checked_schema(args.schema)
    gold = {g.id: g.gold for g in load_gold(args.gold, schema)}
    connection = sqlite3.connect(args.db)
    keys = dict(connection.execute("SELECT id, key FROM records"))
    runs = connection.execute("SELECT run_id, mode FROM eval_runs ORDER BY run_id").fetchall()
    print("| mode | bound | values kept | right | lower bound (90%) | rows keeping all | per field |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for run_id, mode in runs:
        rows = connection.execute("SELECT record_id, evidence FROM run_results WHERE run_id = ?", (run_id,))
        results = [(gold[keys[record]], json.loads(evidence or "[]")) for record, evidence in rows]
        for bound in (float(b) for b in args.bounds.split(",")):
            fields: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            whole = 0
            for answer, evidence in results:
                scored = [e for e in evidence if e["path"] in answer]
                held = [e for e in scored if e.get("value") is not None and kept(e, bound)]
                for entry in held:
                    right = compare(schema.properties[entry["path"]], answer[entry["path"]], entry["value"])
                    fields[entry["path"]][0] += right
                    fields[entry["path"]][1] += 1
                whole += bool(scored) and len(held) == len(scored)
            right, total = sum(f[0] for f in fields.values()), sum(f[1] for f in fields.values())
            per_field = ", ".join(f"{k} {r}/{n}" for k, (r, n) in fields.items())
            print(f"| {mode} | {bound:g} | {total} | {right} | {lower_bound(right, total):.3f} | {whole} "
                  f"| {per_field} |")  # fmt: skip


if __name__ == "__main__":
    main()
