"""A model cascade measured on gold, no model call: each configuration alone, and a cheap one escalating
to a stronger one only the records it could not certify entirely.

    .venv/bin/python benchmarks/cascade.py --schema expense \\
        --gold examples/gold/expense.jsonl,examples/gold/expense_zh_ja.jsonl \\
        --run bundled=sqlite:///.formwork/cal/expense-135m.db --run 1.5b=sqlite:///.formwork/cal/expense-1.5b.db

Each `--run NAME=DB` is a database holding a `two-readings` eval of the gold's two halves (the
calibration half measured, the verification half verified: `formwork eval --calibrate` then
`--verify`). A configuration is a run and the readings it uses: `NAME` (both readings), `NAME/notes-free`
(the cheap reading alone) or `NAME/two-pass`. For each one the score is fitted and every field certified
on the calibration half (tasks.evaluation.calibration, as `--calibrate` does), and applied to the
verification half as a run applies it. A cascade `A>B` keeps A's row where every value is certified,
and otherwise escalates the record to B: a value B certifies is kept (it wins where both certify
different ones), else A's certified value, else nothing (tasks.escalation.combine's rule). `A>>B`
escalates only a row one of whose uncertified fields B's calibration certifies (what B could change,
as the queue does: db.store.QueuePolicy); `A>B` is the queue before it did. Reported per
configuration: values certified and their precision, rows `ok` and theirs, the share escalated, and
model seconds per record (the sum of its calls' durations; an escalated record pays both); then per
field, the values certified and how many are right.

B reads only the records A's rule escalates, the ones A was unsure of, where B's calibration measured
on all records overstates its precision (issue 52). So each cascade is reported twice: under B's
all-records calibration (`all-records B`: what runs did before; misapplied), and under B's calibration
measured on the calibration half's records the same rule escalates (`escalated B`: the one a run may
certify them by; tasks.escalation; `formwork eval --calibrate --from-run B --escalated-from A` stores it
for runs). Each also gets a line for its escalated records alone, where the
difference shows. Each calibration's claims hold together at its level (90%); a cascade's rest on two
calibrations and hold together at their joint level (80%: tasks.escalation.joint_level), printed below.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import select

from formwork.db.models import ModelCall, Record, Run, RunResult
from formwork.db.session import session_factory
from formwork.schemas.registry import load_schema
from formwork.tasks.confidence.certify import FieldClaim
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.escalation import joint_level
from formwork.tasks.evaluation.calibration import GoldRow, calibrate, kept_values
from formwork.tasks.evaluation.gold import half_of, load_gold
from formwork.tasks.evaluation.replay import reading_alone
from formwork.tasks.extract import NOTES_FREE as NOTES


@dataclass
class Stored:
    """One run's rows by record, and what each record's calls cost, per reading."""

    rows: dict[str, GoldRow]
    seconds: dict[str, dict[str, float]]  # record -> reading -> model seconds


@dataclass
class Decided:
    """One record under one configuration: field -> (value, certified, right), and its cost."""

    fields: dict[str, tuple[bool, bool]]  # field -> (certified, right)
    seconds: float

    @property
    def ok(self) -> bool:
        return bool(self.fields) and all(certified for certified, _ in self.fields.values())


def load_run(db: str, schema: str, golds: dict[str, dict]) -> Stored:
    rows: dict[str, GoldRow] = {}
    seconds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    with session_factory(db)() as session:
        runs = session.scalars(  # an eval stopped early has no summary row, but its records are kept
            select(Run.id).where(Run.flow == "evaluate", Run.schema_name == schema)
        ).all()
        for key, trust in session.execute(
            select(Record.key, RunResult.trust).join(RunResult, RunResult.record_id == Record.id)
            .where(RunResult.run_id.in_(runs))
        ):  # fmt: skip
            if key in golds:
                rows[key] = GoldRow(key, trust or [], golds[key])
        for key, judged, duration in session.execute(
            select(Record.key, ModelCall.judged, ModelCall.duration_s)
            .join(Record, Record.id == ModelCall.record_id).where(ModelCall.run_id.in_(runs))
        ):  # fmt: skip
            reading = NOTES if (judged or {}).get("reading") == NOTES else "two-pass"
            seconds[key][reading] += duration or 0.0
    return Stored(rows, seconds)


@dataclass
class Configured:
    """A configuration calibrated on the calibration half (or those of its records in `measured_on`):
    each record of the verification half decided, each of the calibration half decided by the
    calibration measured on it (what a run there would do, to say which records escalate), and the
    fields the calibration certifies."""

    verification: dict[str, Decided]
    calibration: dict[str, Decided]
    certifies: set[str]
    level: float


def configuration(schema_name: str, stored: Stored, readings: set[str], measured_on: set[str] | None = None
                  ) -> Configured:  # fmt: skip
    """Calibrate on the calibration half (only its records in `measured_on`, where given) and decide both
    halves with it."""
    schema = load_schema(schema_name)
    half = {k: reading_alone(r, readings) for k, r in stored.rows.items()}
    fitted = calibrate(schema, [r for k, r in half.items() if half_of(k) == "calibration"
                                and (measured_on is None or k in measured_on)])  # fmt: skip
    found: dict[str, dict[str, Decided]] = {"verification": {}, "calibration": {}}
    for key, row in half.items():
        seconds = sum(stored.seconds[key].get(r, 0.0) for r in readings)
        found[half_of(key)][key] = decided(schema, row, fitted.model, fitted.claims, seconds)
    certifies = {field for field, claim in fitted.claims.items() if claim.threshold is not None}
    return Configured(found["verification"], found["calibration"], certifies, fitted.level)


def escalates(first: dict[str, Decided], only: set[str] | None = None) -> set[str]:
    """The records a cascade sends on: those A leaves unsure (with `only`, the fields B certifies, those
    unsure of one of them: B could change nothing else)."""
    sent = set()
    for key, a in first.items():
        unsure = {field for field, (certified, _) in a.fields.items() if not certified}
        if not a.ok and (only is None or unsure & only):
            sent.add(key)
    return sent


def decided(
    schema, row: GoldRow, model: ScoreModel, claims: dict[str, FieldClaim], seconds: float
) -> Decided:
    fields: dict[str, tuple[bool, bool]] = {}
    for field, score, right in kept_values(schema, row, model, claims):
        threshold = claims[field].threshold if field in claims else None
        certified = score is not None and threshold is not None and score >= threshold
        fields[field] = (certified, right) if field not in fields else (
            fields[field][0] and certified, fields[field][1] and right)  # fmt: skip
    return Decided(fields, seconds)


def cascade(
    first: dict[str, Decided], second: dict[str, Decided], only: set[str] | None = None
) -> tuple[dict[str, Decided], set[str]]:
    """A's row where it is ok, else each field from B where B certifies it, else A's where A does, and
    the records escalated. With `only` (the fields B's calibration certifies), a row escalates only
    where one of them is among the fields A left uncertified: B could change nothing else."""
    found, sent = {}, escalates(first, only)
    for key, a in first.items():
        if key not in sent:
            found[key] = a
            continue
        b = second[key]
        fields = {}
        for field in a.fields.keys() | b.fields.keys():
            fa, fb = a.fields.get(field, (False, False)), b.fields.get(field, (False, False))
            fields[field] = fb if fb[0] else fa if fa[0] else fb
        found[key] = Decided(fields, a.seconds + b.seconds)
    return found, sent


def line(name: str, found: dict[str, Decided], escalated: float | None = None) -> str:
    values = [f for d in found.values() for f in d.fields.values()]
    certified = [right for c, right in values if c]
    ok = [d for d in found.values() if d.ok]
    ok_right = sum(all(r for _, r in d.fields.values()) for d in ok)
    pct = lambda n, d: f"{100 * n / d:.1f}%" if d else "-"  # noqa: E731
    seconds = sum(d.seconds for d in found.values()) / max(len(found), 1)
    share = pct(len(certified), len(values))
    return (f"| {name} | {len(found)} | {len(certified)}/{len(values)} ({share}) | "
            f"{pct(sum(certified), len(certified))} | {len(ok)} ({pct(len(ok), len(found))}) | "
            f"{pct(ok_right, len(ok))} | {'-' if escalated is None else f'{100 * escalated:.0f}%'} | "
            f"{seconds:.1f} |")  # fmt: skip


def field_lines(name: str, found: dict[str, Decided]) -> list[str]:
    """Per field: the values certified and how many are right (each field's target is per field)."""
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in found.values():
        for field, (certified, right) in row.fields.items():
            tally[field][0] += certified
            tally[field][1] += certified and right
    return [f"| {name} | {field} | {n} | {right} | {f'{100 * right / n:.1f}%' if n else '-'} |"
            for field, (n, right) in sorted(tally.items())]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--schema", required=True)
    parser.add_argument("--gold", required=True, help="gold files, comma-separated")
    parser.add_argument("--run", action="append", required=True, help="NAME=DB (repeatable)")
    parser.add_argument("--cascade", action="append", default=[],
                        help="A>B (escalate every row A leaves unsure) or A>>B (only rows unsure in a field "
                             "B certifies), configurations (repeatable)")  # fmt: skip
    args = parser.parse_args()
    schema = load_schema(args.schema)
    golds = {g.id: g.gold for g in load_gold(args.gold.split(","), schema)}
    runs = {name: load_run(db, args.schema, golds) for name, db in (r.split("=", 1) for r in args.run)}
    configs: dict[str, dict[str, Decided]] = {}
    measured: dict[str, Configured] = {}
    chosen: dict[str, tuple[Stored, set[str]]] = {}
    for name, stored in runs.items():
        for label, readings in ((name, {"two-pass", NOTES}), (f"{name}/{NOTES}", {NOTES}),
                                (f"{name}/two-pass", {"two-pass"})):  # fmt: skip
            measured[label] = configuration(args.schema, stored, readings)
            configs[label], chosen[label] = measured[label].verification, (stored, readings)
    print("| configuration | records | values certified | precision | rows ok | precision of ok | escalated |"
          " model s/record |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, found in configs.items():
        print(line(label, found))
    levels = []
    for pair in args.cascade:
        per_field = ">>" in pair
        a, b = pair.split(">>" if per_field else ">")
        only = measured[b].certifies if per_field else None
        # B measured on the calibration half's records this same rule escalates
        on_escalated = configuration(args.schema, *chosen[b], escalates(measured[a].calibration, only))
        levels.append(joint_level(measured[a].level, on_escalated.level))
        name = f"{a} >> {b} (per field)" if per_field else f"{a} > {b}"
        for which, second in (("all-records", measured[b]), ("escalated", on_escalated)):
            found, sent = cascade(configs[a], second.verification, only)
            configs[f"{name}, {which} B"] = found
            print(line(f"{name}, {which} B", found, len(sent) / max(len(found), 1)))
            print(line(f"{name}, {which} B: escalated records only", {k: found[k] for k in sent}))
    if levels:
        print(f"\nEach calibration's claims hold together at {measured[next(iter(measured))].level:.0%}; a "
              f"cascade's rest on two calibrations and hold together at {min(levels):.0%}.")  # fmt: skip
    print("\n| configuration | field | certified | right | precision |\n| --- | --- | ---: | ---: | ---: |")
    for label, found in configs.items():
        print("\n".join(field_lines(label, found)))


if __name__ == "__main__":
    main()
