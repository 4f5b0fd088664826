"""How well each signal tells a right value from a wrong one, per field: the two readings' probabilities,
each value's share among the values (its probability with the value-or-null decision set apart; a
null keeps its own), that decision alone (1 - p_null, values only), their agreement, the top-2 margin
and the fitted score, as AUROC, and the accuracy of the values kept at 50/70/90% coverage.
Read from a measuring run (`formwork eval --measure`, either mode), no model call:

    .venv/bin/python benchmarks/readings_signals.py --db sqlite:///.formwork/cal.db \\
        --gold examples/gold/expense.jsonl --schema expense [--run N]

The score is cross-fitted (each record scored by a model fitted without its fold), as the calibration
chooses thresholds on it. Every value a row could keep is one example (nulls included); a field no
reading holds is left out here (it is never kept). Prints a Markdown table per field and for all.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Callable, Sequence

from sqlalchemy import select

from formwork.db.models import Record, RunResult
from formwork.db.session import session_factory
from formwork.schemas.paths import node_at, parse_path
from formwork.schemas.registry import load_schema
from formwork.tasks.confidence.readings import PathReading, same
from formwork.tasks.confidence.score import fold_models, fold_of
from formwork.tasks.evaluation.calibration import GoldRow, examples, gold_at, kept_values
from formwork.tasks.evaluation.gold import load_gold
from formwork.tasks.evaluation.scoring import compare

COVERAGES = (0.5, 0.7, 0.9)
Signals = dict[str, dict[str, tuple[list[float], list[bool]]]]  # field -> signal -> (scores, right)


def auroc(scores: Sequence[float], right: Sequence[bool]) -> float | None:
    """The chance a right value scores above a wrong one (ties count half); None with one class only."""
    pos = [s for s, r in zip(scores, right, strict=True) if r]
    neg = [s for s, r in zip(scores, right, strict=True) if not r]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def accuracy_at(scores: Sequence[float], right: Sequence[bool], coverage: float) -> float | None:
    """The share right among the `coverage` share of values scored highest."""
    ranked = sorted(zip(scores, right, strict=True), key=lambda pair: -pair[0])
    kept = ranked[: max(1, round(coverage * len(ranked)))] if ranked else []
    return sum(r for _, r in kept) / len(kept) if kept else None


def _rows(db: str, schema_name: str, gold_path: str, run: int | None) -> list[GoldRow]:
    schema = load_schema(schema_name)
    golds = {g.id: g for g in load_gold(gold_path.split(","), schema)}
    with session_factory(db)() as session:
        run = run or session.scalar(select(RunResult.run_id).order_by(RunResult.id.desc()).limit(1))
        found = session.execute(
            select(Record.key, RunResult.trust).join(RunResult, RunResult.record_id == Record.id)
            .where(RunResult.run_id == run)
        ).all()  # fmt: skip
    return [GoldRow(key, trust or [], golds[key].gold) for key, trust in found if key in golds]


def signals(schema_name: str, rows: list[GoldRow]) -> Signals:
    """field -> signal -> (scores, right)."""
    schema = load_schema(schema_name)
    x, right, records = examples(schema, rows)
    by_fold = fold_models(x, right, records)
    found: dict[str, dict[str, tuple[list[float], list[bool]]]] = defaultdict(
        lambda: defaultdict(lambda: ([], []))
    )

    def add(field: str, signal: str, score: float | None, good: bool) -> None:
        if score is not None:
            found[field][signal][0].append(score)
            found[field][signal][1].append(good)

    for row in rows:
        for field, score, good in kept_values(schema, row, by_fold[fold_of(row.record)]):
            add(field, "score (kept value)", score, good)
        for entry in row.trust:
            node = node_at(schema.checked_body, parse_path(entry["path"])) or {}
            wanted = gold_at(row.gold, entry["path"])
            readings = {n: PathReading.from_dict(r) for n, r in entry["readings"].items()}
            for name, mine in readings.items():
                if mine.usable:
                    good = compare(node, wanted, mine.value)
                    add(entry["field"], f"p {name}", mine.probability, good)
                    add(entry["field"], f"margin {name}", mine.margin, good)
                    share = mine.among_values  # a null, or a value no engine weighed null for: its p
                    add(
                        entry["field"],
                        f"p among values {name}",
                        mine.probability if share is None else share,
                        good,
                    )
                    if mine.value is not None and mine.null is not None:
                        add(entry["field"], f"1 - p_null {name}", 1.0 - mine.null, good)
            both = [r for r in readings.values() if r.usable]
            if len(both) == 2 and all(r.probability is not None for r in both):
                agree = same(both[0].value, both[1].value)
                good = compare(node, wanted, both[0].value)
                add(entry["field"], "agree x min p (two-pass value)",
                    min(r.probability for r in both) if agree else 0.0, good)  # type: ignore[type-var]  # fmt: skip
    return found


def table(found: Signals, pct: Callable[[float | None], str]) -> str:
    accuracies = " | ".join(f"acc@{c:.0%}" for c in COVERAGES)
    rule = " | ".join("---:" for _ in COVERAGES)
    lines = [f"| field | signal | values | right | AUROC | {accuracies} |",
             f"| --- | --- | ---: | ---: | ---: | {rule} |"]  # fmt: skip
    everything: dict[str, tuple[list[float], list[bool]]] = defaultdict(lambda: ([], []))
    for field, by_signal in [*found.items(), ("all", everything)]:
        for signal, (scores, right) in sorted(by_signal.items()):
            if field != "all":
                everything[signal][0].extend(scores)
                everything[signal][1].extend(right)
            value = auroc(scores, right)
            accs = " | ".join(pct(accuracy_at(scores, right, c)) for c in COVERAGES)
            lines.append(f"| {field} | {signal} | {len(scores)} | {sum(right)} | "
                         f"{'-' if value is None else f'{value:.3f}'} | {accs} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True)
    parser.add_argument("--gold", required=True, help="gold files, comma-separated")
    parser.add_argument("--schema", required=True)
    parser.add_argument("--run", type=int, help="the eval's run id (default: the newest run in the database)")
    args = parser.parse_args()
    rows = _rows(args.db, args.schema, args.gold, args.run)
    print(f"{len(rows)} records of {args.gold}\n")
    print(table(signals(args.schema, rows), lambda v: "-" if v is None else f"{100 * v:.1f}%"))


if __name__ == "__main__":
    main()
