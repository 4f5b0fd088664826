"""Does a score fitted on other schemas already rank a new schema's values? Measured, no model call.

The shipped score is fitted per calibration on one schema's gold, with a per-field offset (`field=NAME`),
so a user's own schema starts with no score and spends its few labels fitting one before any threshold.
If one score fitted on other schemas' readings, with features that say what KIND of value it is (an
identifier such as an e-mail, phone or URL; a number; a date; an enum; short or long judgement text such
as a name or an address) in place of the field's name, ranked a new schema's values as well, a user's
labels could go to thresholds alone (issue 52, point 1). This measures that, per held-back schema (the
score fitted on the others) and field, as AUROC against two references:

- `own`: the reading's own probability alone (what ranks with no fit at all);
- `in-schema CV`: the shipped score fitted on the held-back schema itself, each record scored by the model
  of the fold it was left out of (tasks.confidence.score.fold_models), what its own labels give;
- `cross kind`: the kind score, fitted on every other schema's values.

Each value's readings, features and right/wrong come from the project's own code, as `formwork eval
--from-run N --calibrate` rebuilds them from a measuring run (flows.eval_steps.score_run,
tasks.evaluation.calibration.examples, tasks.evaluation.scoring.compare and rule_for). Every reading's
usable value at every stored path is one example (nulls included). A schema's data may come from several
runs, databases and gold files (`--data`, repeated):

    .venv/bin/python benchmarks/cross_schema_score.py \\
        --data contact=/tmp/h52p1/jdr.db:1,2:examples/gold/real/contact_textmine_jdr.jsonl \\
        --data contact=/tmp/h52p1/jdr.db:3:examples/gold/contact.jsonl \\
        --data shop_receipt=/tmp/h52p1/s.db:1:examples/gold/real/shop_receipt_sroie.jsonl

A schema is a built-in name or a .json path. Prints a Markdown table; `all` is the schema's values
pooled across its fields (where the kind offsets, which are constant within a field, matter).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from readings_signals import auroc  # the script's folder is on sys.path
from sqlalchemy.orm import Session

from formwork.db.models import Run
from formwork.db.session import session_factory
from formwork.flows.eval_steps import score_run
from formwork.schemas.identifiers import IDENTIFIERS
from formwork.schemas.paths import node_at, parse_path
from formwork.schemas.registry import Schema, load_schema
from formwork.tasks.confidence.features import KINDS
from formwork.tasks.confidence.score import fit, fold_models, fold_of
from formwork.tasks.evaluation.calibration import GoldRow, examples
from formwork.tasks.evaluation.gold import load_gold
from formwork.tasks.evaluation.scoring import rule_for

FIELD = "field="
# the features a kind's slope is allowed to differ on: how sure the reading is, and how the text backs it
BY_KIND = ("own", "margin", "null", *KINDS)
SCORES = ("own", "in-schema CV", "cross shipped", "cross kind")  # see held_back


@dataclass
class Examples:
    """One schema's values: shipped features, kind features, right or wrong, record, field."""

    shipped: list[dict[str, float]]
    kind: list[dict[str, float]]
    right: list[bool]
    records: list[str]
    fields: list[str]
    kinds: list[str]


def value_kind(schema: Schema, field: str) -> str:
    """The value's kind, from the rule the project compares it by: `identifier` for e-mails, phones,
    URLs and codes (one kind, so a URL field is not new to a score that has seen e-mails), else the rule
    (`number`, `date`, `enum`, `exact`, `text` for short judgement text such as a name, `fuzzy` for long)."""
    node = node_at(schema.checked_body, parse_path(field.replace("[]", "[0]"))) or {}
    rule = rule_for(node, field)
    return "identifier" if rule in IDENTIFIERS else rule


def kind_features(shipped: dict[str, float], kind: str) -> dict[str, float]:
    """The shipped features with the field's name replaced by its kind: an offset per kind, and the
    probability, margin, null and grounding features again per kind (`own@identifier`)."""
    found = {name: value for name, value in shipped.items() if not name.startswith(FIELD)}
    found[f"kind={kind}"] = 1.0
    found |= {f"{name}@{kind}": found[name] for name in BY_KIND if name in found}
    return found


def schema_examples(schema: Schema, rows: Sequence[GoldRow]) -> Examples:
    """Every reading's usable value at every stored path of `rows`, as calibration reads them."""
    shipped, right, records = examples(schema, rows)
    fields = [next(name[len(FIELD) :] for name in row if name.startswith(FIELD)) for row in shipped]
    kinds = {field: value_kind(schema, field) for field in set(fields)}
    kind = [kind_features(row, kinds[field]) for row, field in zip(shipped, fields, strict=True)]
    return Examples(shipped, kind, right, records, fields, [kinds[field] for field in fields])


def stored_rows(session: Session, schema: Schema, run_id: int, gold: Sequence[str]) -> list[GoldRow]:
    """The gold rows one measuring run stored, rebuilt as `formwork eval --from-run` rebuilds them."""
    run = session.get(Run, run_id)
    if run is None or run.flow != "evaluate":
        raise SystemExit(f"run {run_id} is no `formwork eval` run in this database")
    golds = load_gold([Path(g) for g in gold], schema)
    return [row for row in score_run(session, schema, run_id, golds, run.source)[1] if row.trust]


def held_back(name: str, by_schema: dict[str, Examples]) -> dict[str, list[float]]:
    """The scores of every value of schema `name`: its own probability; the shipped score cross-fitted on
    the schema itself; the shipped score fitted on the other schemas (a field name they share keeps its
    offset, any other weighs nothing); the kind score fitted on the other schemas."""
    mine = by_schema[name]
    folds = fold_models(mine.shipped, mine.right, mine.records)
    others = [e for other, e in by_schema.items() if other != name]
    right = [good for e in others for good in e.right]
    shipped = fit([row for e in others for row in e.shipped], right)
    kind = fit([row for e in others for row in e.kind], right)
    return dict(zip(SCORES, (
        [row["own"] for row in mine.shipped],
        [folds[fold_of(r)].score(x) for x, r in zip(mine.shipped, mine.records, strict=True)],
        [shipped.score(row) for row in mine.shipped],
        [kind.score(row) for row in mine.kind],
    ), strict=True))  # fmt: skip


def table(by_schema: dict[str, Examples]) -> str:
    """One Markdown row per held-back schema and field, and one for the schema's fields pooled."""
    lines = [f"| held back | field | kind | values | right | AUROC: {' | '.join(SCORES)} |",
             f"| --- | --- | --- | ---: | ---: |{' ---: |' * len(SCORES)}"]  # fmt: skip
    shown = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    for name, mine in by_schema.items():
        scores = held_back(name, by_schema)
        kind = dict(zip(mine.fields, mine.kinds, strict=True))
        groups: dict[str, list[int]] = defaultdict(list)
        for i, field in enumerate(mine.fields):
            groups[field].append(i)
        groups["all"] = list(range(len(mine.fields)))
        for field, at in groups.items():
            right = [mine.right[i] for i in at]
            wrong = len(at) - sum(right)
            cells = " | ".join(shown(auroc([s[i] for i in at], right)) for s in scores.values())
            lines.append(f"| {name} | {field} | {kind.get(field, '-')} | {len(at)} | "
                         f"{sum(right) / len(at):.1%} ({wrong} wrong) | {cells} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data",
        action="append",
        required=True,
        help="SCHEMA=DB:RUN[,RUN]:GOLD[,GOLD]: SQLite file, runs, gold",
    )
    args = parser.parse_args()
    rows: dict[str, list[GoldRow]] = defaultdict(list)
    schemas: dict[str, Schema] = {}
    for item in args.data:
        name, _, rest = item.partition("=")
        db, runs, gold = rest.split(":")
        schema = schemas.setdefault(name, load_schema(name))
        with session_factory(f"sqlite:///{db}")() as session:
            for run in runs.split(","):
                rows[name] += stored_rows(session, schema, int(run), gold.split(","))
    if len(rows) < 2:
        raise SystemExit("--data: name at least two schemas (each is held back while fitted on the others)")
    by_schema = {schemas[name].name: schema_examples(schemas[name], found) for name, found in rows.items()}
    print(", ".join(f"{name}: {len(set(e.records))} records" for name, e in by_schema.items()) + "\n")
    print(table(by_schema))


if __name__ == "__main__":
    main()
