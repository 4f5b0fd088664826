"""Score every mode on the first N records of a gold set with the configured engine; print a table.

    .venv/bin/python benchmarks/eval_modes.py --schema expense --records 8 [--modes two-pass,one-pass]

The same `evaluate` flow as `formwork eval` (real pipeline, stored rows, statuses as production), on
a throw-away database; the engine comes from Settings (FORMWORK_ENGINE=vllm for a server). Prints
one markdown table for BENCHMARKS.md and writes the full scores to --out as JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from formwork.flows.cli.common import database_in_environment
from formwork.flows.evaluate import evaluate
from formwork.flows.prefect_env import apply_defaults, without_heartbeat
from formwork.tasks.modes import MODES


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--schema", default="expense")
    parser.add_argument("--records", type=int, default=8)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--out", default="eval_modes.json")
    parser.add_argument("--db", help="keep the rows in this database (default: a throw-away one)")
    args = parser.parse_args()
    apply_defaults()
    gold = Path(__file__).resolve().parents[1] / "examples" / "gold" / f"{args.schema}.jsonl"
    with (
        tempfile.TemporaryDirectory() as folder,
        without_heartbeat(),
        database_in_environment(args.db or f"sqlite:///{folder}/eval.db"),  # never a flow parameter
    ):
        reports = evaluate(
            str(gold), args.schema, modes=args.modes.split(","), limit=args.records,
            chart=str(Path(args.out).with_suffix(".png")),
        )  # fmt: skip
    Path(args.out).write_text(json.dumps(reports, indent=1, ensure_ascii=False))
    fields = list(next(iter(reports.values()))["field_accuracy"])
    print(f"\n{args.schema}, {args.records} records")
    print("| mode | no JSON | mismatch | wrong | correct | share ok | precision of ok | "
          + " | ".join(fields) + " | tokens/rec in+out | s/rec |")  # fmt: skip
    print("|---" * (9 + len(fields)) + "|")
    for mode, r in reports.items():
        o = r["outcomes"]
        print(
            f"| {mode} | {o['no_json']} | {o['schema_mismatch']} | {o['content_wrong']} | "
            f"{o['all_correct']} | "
            f"{_pct(r['share_ok'])} | {_pct(r['precision_ok'])} | "
            + " | ".join(_pct(r["field_accuracy"].get(f)) for f in fields)
            + f" | {r['prompt_tokens_per_record']:.0f}+{r['completion_tokens_per_record']:.0f}"
            f" | {r['wall_seconds_per_record']:.1f} |"
        )
    steps = reports.get("prompt-json", {}).get("parse_steps")
    if steps:
        print(f"\nprompt-json parse steps (per call): {steps}")


if __name__ == "__main__":
    main()
