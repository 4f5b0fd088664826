"""What an audit reads from the database: a run's stored rows, and the rows an audit file answers.

An audit file (`formwork audit`'s export) is a gold file whose every row names, in `meta`, the run
and the record it audits (`run`, `record_id`) and the seed of the sample. Its answers mean something
only beside what that run stored for those records, so each row is matched to its run's stored row
(the run's own history, `run_results`, which later runs never change) before anything is checked or
calibrated. Several files may be read together (a second audit of the same run, or of a later run
of the same key): a record audited twice counts once, and twice with different answers is refused.
A field marked "wrong" with the run's own value as the right one is counted neither way, and said
(tasks.evaluation.audit.unsettled).

Every `audit calibrate` of one population (a calibration key, in this database) is a look at its audited
records, and looks share one error budget: `next_look` says which look a calibrate is and the level it
may spend, `take_look` stores it (table `audit_looks`), so a restart or another process spends on from
the same budget.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from formwork.db.models import AuditLook, Record, Run, RunResult
from formwork.schemas.registry import Schema, SchemaProblem, schema_from_body
from formwork.tasks.evaluation.audit import BUDGET, Audited, look_level, unsettled
from formwork.tasks.evaluation.gold import GoldProblem, load_gold
from formwork.tasks.evaluation.key import CalibrationKey


class AuditProblem(ValueError):
    """An audit file that cannot be matched to what its run stored."""


@dataclass(frozen=True)
class StoredRow:
    """A run's answer for one record, with the record's text: what the audit page shows."""

    record_id: int
    key: str
    text: str
    status: str
    data: dict[str, Any] | None
    errors: list[str]
    nulled: list[str]
    evidence: list[dict[str, Any]]
    trust: list[dict[str, Any]]


def run_rows(session: Session, run_id: int, record_ids: Collection[int] | None = None) -> list[StoredRow]:
    """The run's last answer for each of its records (of `record_ids`, if given), in stored order."""
    query = (
        select(RunResult, Record.key, Record.text)
        .join(Record, Record.id == RunResult.record_id)
        .where(RunResult.run_id == run_id)
    )
    if record_ids is not None:
        query = query.where(RunResult.record_id.in_(list(record_ids)))
    found = {
        r.record_id: StoredRow(r.record_id, key, text, r.status, r.data, r.errors or [], r.nulled or [],
                               r.evidence or [], r.trust or [])
        for r, key, text in session.execute(query.order_by(RunResult.id))
    }  # fmt: skip
    return [found[i] for i in sorted(found)]


def run_schema(run: Run) -> Schema:
    """The schema the run stored its rows under (its own body, not today's file of that name)."""
    try:
        return schema_from_body(run.schema_body, f"run {run.id}")
    except SchemaProblem as exc:
        raise AuditProblem(f"run {run.id} stored no usable schema body ({exc})") from exc


def database_identity(session: Session, run: Run) -> str:
    """A stamp of this database and this run, the same each time the page is written: the first run's and
    this run's start times (to the microsecond). Another database's run of the same number, sample and
    records has other times, so the page keys its saved answers apart (flows.audit)."""
    first = session.scalars(select(Run.started_at).order_by(Run.id).limit(1)).one()
    stamp = f"{first.isoformat()}|{run.id}|{run.started_at.isoformat()}"
    return hashlib.sha256(stamp.encode()).hexdigest()[:32]


def run_key(run: Run) -> CalibrationKey:
    """The calibration key the run was made under, as it recorded it (flows.run_policy)."""
    key = (run.confidence or {}).get("key")
    if not key:
        raise AuditProblem(f"run {run.id} recorded no calibration key (it ran with `calibration = false`, or "
                           "before runs recorded one): run the records again and audit that run")  # fmt: skip
    return CalibrationKey(**key)


@dataclass(frozen=True)
class AuditSet:
    """Audit files matched to their runs: the runs, the schema, and every audited record once."""

    runs: list[Run]
    schema: Schema
    rows: list[Audited]
    seeds: list[Any]
    warnings: list[str]


def _first_meta(path: Path) -> dict[str, Any]:
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                meta = json.loads(line).get("meta")
                return meta if isinstance(meta, dict) else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        raise AuditProblem(f"{path}: not an audit file ({exc})") from exc
    raise AuditProblem(f"{path}: no audited record in it")


def _run_of(session: Session, path: Path) -> Run:
    run_id = _first_meta(path).get("run")
    run = session.get(Run, run_id) if isinstance(run_id, int) else None
    if run is None:
        raise AuditProblem(f"{path}: names run {run_id!r}, which is not in this database (use --db)")
    return run


def read_audits(session: Session, paths: Sequence[Path]) -> AuditSet:
    """Every audited record of `paths`, matched to what its run stored (see the module docstring)."""
    runs = [_run_of(session, path) for path in paths]
    schema = run_schema(runs[0])
    keys = {json.dumps(run_key(run).as_dict(), sort_keys=True) for run in runs}
    if len(keys) > 1:
        shown = ", ".join(str(run.id) for run in runs)
        raise AuditProblem(f"runs {shown} were made under different keys (model, schema, settings): an "
                           "audit calibrates one key, so pass the files of one key at a time")  # fmt: skip
    rows: dict[tuple[int, int], Audited] = {}
    seeds: list[Any] = []
    warnings: list[str] = []
    for path, run in zip(paths, runs, strict=True):
        try:
            golds = load_gold(path, schema, complete=True)
        except GoldProblem as exc:
            raise AuditProblem(str(exc)) from exc
        wanted = [g.meta.get("record_id") for g in golds if isinstance(g.meta.get("record_id"), int)]
        stored = {r.record_id: r for r in run_rows(session, run.id, wanted)}
        seeds += [s for s in dict.fromkeys(g.meta.get("seed") for g in golds) if s not in seeds]
        for gold in golds:
            if gold.meta.get("run") != run.id or gold.meta.get("record_id") not in stored:
                raise AuditProblem(f"{path}: record {gold.id!r} is not one of run {run.id}'s records "
                                   "(an audit file holds one run's, as the page wrote it)")  # fmt: skip
            row = stored[gold.meta["record_id"]]
            marks = gold.meta.get("audited")
            marks = marks if isinstance(marks, dict) else {}
            contradicted = unsettled(schema, row.data, row.trust, gold.gold, marks)
            warnings += [f"{path}: record {gold.id!r} marks {name} wrong and gives the value the run read as "
                         "the right one: counted neither right nor a correction (audit it again: r if the "
                         "run's value is right, else the right value, or n)"
                         for name in contradicted]  # fmt: skip
            audited = Audited(gold.id, row.status, row.trust, gold.gold, tuple(contradicted))
            earlier = rows.setdefault((run.id, row.record_id), audited)
            if earlier.gold != audited.gold:
                raise AuditProblem(f"{path}: record {gold.id!r} of run {run.id} was audited before with "
                                   "other answers; keep one of the two")  # fmt: skip
    return AuditSet(runs, schema, list(rows.values()), seeds, warnings)


@dataclass(frozen=True)
class Look:
    """Which look at one population's audit a calibrate is, and the error level it spends of `budget`.
    `taken`: stored already (the same records and target looked at before: no more level spent)."""

    number: int
    spent: float
    budget: float
    key_hash: str
    gold_hash: str
    target: float
    taken: bool

    def sentence(self) -> str:
        """The look as every summary says it."""
        again = ", taken before on these same answers: nothing more spent" if self.taken else ""
        return (f"look {self.number} of this audit: level {self.spent:.4g} of {self.budget:.4g} (the chance "
                f"of a false certification this look may take, of the {self.budget:.4g} all looks at "
                f"these runs' audits share{again})")  # fmt: skip


def key_hash(key: CalibrationKey) -> str:
    """The digest of a calibration key: the population whose looks share one budget."""
    return hashlib.sha256(json.dumps(key.as_dict(), sort_keys=True).encode()).hexdigest()


def next_look(session: Session, key: CalibrationKey, gold_hash: str, target: float,
              budget: float = BUDGET) -> Look:  # fmt: skip
    """The look a calibrate of these answers (`gold_hash`) at `target` is: the last stored look again where
    it tested the very same answers at the same target (a refused calibrate stored with --replace gets the
    same result, and looks once), else the next number, at its level (tasks.evaluation.audit.look_level)."""
    digest = key_hash(key)
    last = session.scalars(
        select(AuditLook).where(AuditLook.key_hash == digest).order_by(AuditLook.look.desc()).limit(1)
    ).first()
    if last is not None and last.gold_hash == gold_hash and last.target == target:
        return Look(last.look, last.spent, last.budget, digest, gold_hash, target, taken=True)
    number = last.look + 1 if last is not None else 1
    return Look(number, look_level(number, budget), budget, digest, gold_hash, target, taken=False)


def looks_taken(session: Session, key: CalibrationKey) -> int:
    """How many looks `key`'s audit has taken: the next calibrate of new answers is look this + 1."""
    query = select(func.max(AuditLook.look)).where(AuditLook.key_hash == key_hash(key))
    return session.scalar(query) or 0


def take_look(session: Session, look: Look, run_id: int) -> None:
    """Store the look (in the caller's transaction), so later looks spend from what is left. Two calibrates
    taking the same look at once: the unique (key_hash, look) refuses the second at its commit."""
    if not look.taken:
        session.add(AuditLook(key_hash=look.key_hash, look=look.number, spent=look.spent, budget=look.budget,
                              target=look.target, gold_hash=look.gold_hash, run_id=run_id))  # fmt: skip
        session.flush()
