"""Judge an eval database's stored model outputs again with today's rules: precision of ok, before/after.

    .venv/bin/python benchmarks/rejudge.py EVAL.db GOLD.jsonl --schema S

A rule change (grounding, copies, confidence bounds) changes which rows are `ok`, not what the model
wrote, so the outputs an earlier `formwork eval --db EVAL.db` stored are judged again instead of
paying for the model a second time. Per eval run: the stored statuses and the statuses today's
`judge` gives the same formatting outputs (the best over each record's attempts, as a run keeps),
each with share ok and precision of ok against the gold. Token logprobs are not stored, so a field
held to `x-min-confidence` fails today (no probability to check); compare schemas without one.
"""

from __future__ import annotations

import argparse
import json
import sqlite3

from formwork.schemas.registry import load_schema
from formwork.tasks.calls import RANK
from formwork.tasks.engines.base import Completion
from formwork.tasks.evaluation.gold import load_gold
from formwork.tasks.evaluation.scoring import score_record
from formwork.tasks.validate import Verdict, judge


def precision(rows: list[tuple[str, bool]]) -> str:
    kept = [correct for status, correct in rows if status == "ok"]
    share = f"{len(kept)}/{len(rows)} ok"
    return f"{share}, precision {sum(kept)}/{len(kept)}" if kept else f"{share}, precision -"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("db")
    parser.add_argument("gold")
    parser.add_argument("--schema", required=True)
    args = parser.parse_args()
    schema = load_schema(args.schema)
    golds = {g.id: g for g in load_gold(args.gold, schema)}
    db = sqlite3.connect(args.db)
    runs = db.execute("select id, source from runs where schema_name = ?", (args.schema,)).fetchall()
    for run_id, source in runs:
        before, after = [], []
        stored = db.execute(
            "select r.id, r.key, r.text, rr.status, rr.data, rr.nulled from run_results rr "
            "join records r on r.id = rr.record_id where rr.run_id = ?", (run_id,)
        ).fetchall()  # fmt: skip
        for record_id, key, text, status, data, nulled in stored:
            gold = golds[key]
            old = score_record(schema, key, gold.gold, status, json.loads(data) if data else None,
                               json.loads(nulled or "[]"))  # fmt: skip
            before.append((status, old.outcome == "all_correct"))
            best = Verdict("failed", None, ["no formatting output"])
            outputs = db.execute(
                "select output, finish_reason, model from model_calls where run_id = ? and record_id = ? "
                "and pass_name = 'formatting' order by attempt", (run_id, record_id),
            ).fetchall()  # fmt: skip
            for output, finish, model in outputs:
                shaped = Completion(output, finish, 0, 0, 0.0, model)
                notes = Completion("", "stop", 0, 0, 0.0, model)
                verdict = judge(schema, text, notes, shaped, meta=gold.meta)
                if RANK[verdict.status] > RANK[best.status]:
                    best = verdict
            new = score_record(schema, key, gold.gold, best.status, best.data, best.nulled)
            after.append((best.status, new.outcome == "all_correct"))
        mode = source.rsplit("#", 1)[-1]
        print(f"run {run_id} ({mode}): stored {precision(before)}; today {precision(after)}")


if __name__ == "__main__":
    main()
