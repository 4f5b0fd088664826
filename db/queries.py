"""Reads: a run's summary and the results table, shaped for the CLI and for the next program.

A run's numbers come from `run_results`, what that run produced, so they never change afterwards;
the results table without a run shows each record's current answer, one per reader setup (NAME@MODE).
A run's row that a person settled afterwards (`formwork settle`) keeps the status the run gave it, and
says what it is now (`status_now`, `settled_later`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from formwork.db.calibrations import statement
from formwork.db.claims import Holders
from formwork.db.models import Decision, ModelCall, Record, Result, Run, RunResult
from formwork.tasks.calls import UNVOUCHED
from formwork.tasks.fit import CUT
from formwork.tasks.long.completeness import INCOMPLETE
from formwork.tasks.validate import EMPTY_ROW


@dataclass
class RunSummary:
    """What a data engineer wants to see when a run ends."""

    run_id: int
    schema: str
    state: str
    statuses: dict[str, int] = field(default_factory=dict)
    formatting_finishes: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    ungrounded: int = 0  # values the judge refused as not backed by the text (never one dropped as unsure)
    nulled: int = 0  # fields set to null in `partial` results
    cut: int = 0  # records whose text was cut to fit the context (never `ok`)
    split: int = 0  # records read in parts (tasks.long): a first formatting call per part
    incomplete: int = 0  # long texts whose merged row failed a completeness check (tasks.long.completeness)
    empty: int = 0  # rows with no value at all (never `ok` unless the schema says `x-empty-ok`)
    unvouched: int = 0  # rows `partial` only because no calibration covers the run
    setup: str = ""  # the reader: model, mode and the calibration that applies (or none)
    confidence: str = ""  # which calibration applied and what it guarantees (db.calibrations)
    guarantees: dict[str, str] = field(default_factory=dict)  # per field: what is guaranteed, in a sentence
    values: int = 0  # values and nulls held to the run's policy (one per path of every row)
    certified: int = 0  # of those, certified
    held: Holders = field(default_factory=Holders)  # left without a result: other runs held them
    replayed: int = 0  # finished records of runs that lost their database, stored first (db.journal)
    escalations: list[RunSummary] = field(default_factory=list)  # `escalate now`: the stronger reader's runs

    @property
    def records(self) -> int:
        return sum(self.statuses.values())

    def rows(self) -> list[tuple[str, str]]:
        """(what, count) lines: the CLI's summary table and the run's Prefect artifact."""
        rows = [(f"status {s}", str(self.statuses.get(s, 0))) for s in ("ok", "partial", "failed")]
        rows += [(f"formatting finish {f}", str(n)) for f, n in sorted(self.formatting_finishes.items())]
        return [
            *([("model, mode, calibration", self.setup)] if self.setup else []),
            *rows,
            ("values not backed by the text", str(self.ungrounded)),
            ("fields nulled (partial)", str(self.nulled)),
            ("texts cut to fit the context", str(self.cut)),
            *([("texts read in parts", str(self.split))] if self.split else []),
            *([("read in parts, incomplete", str(self.incomplete))] if self.incomplete else []),
            ("rows with no value at all", str(self.empty)),
            *([("partial only for want of a calibration", str(self.unvouched))] if self.unvouched else []),
            ("model calls", str(self.calls)),
            ("tokens in / out", f"{self.prompt_tokens} / {self.completion_tokens}"),
            ("seconds", f"{self.seconds:.1f}"),
            *([("values certified", f"{self.certified} of {self.values}")] if self.values else []),
            *([("confidence", self.confidence)] if self.confidence else []),
            *((f"guarantee: {name}", said) for name, said in self.guarantees.items()),
            *([("held by another run, no result yet", self.held_text())] if self.held.records else []),
            *([("records stored from the journal", str(self.replayed))] if self.replayed else []),
        ]

    def held_text(self) -> str:
        """How many records other runs held, which runs, and until when (UTC)."""
        runs = ", ".join(str(run) for run in self.held.runs) or "none now"
        until = f" until {self.held.until:%H:%M:%S} UTC" if self.held.until else ""
        return f"{self.held.records} (run {runs}{until})"


def _not_backed(evidence: list[dict[str, Any]]) -> set[str]:
    """The paths whose value the grounding found the text does not back. Not the `refused` rows the
    schema's conforming adds for every null the judge or the policy left (a refused value has its own
    grounding row, and a value dropped as unsure was backed): counting those counted one value twice,
    and every unsure one as unbacked."""
    return {e["path"] for e in evidence if not e.get("grounded", True) and e.get("kind") != "refused"}


def _setup(run: Run) -> str:
    """What read the run's records, in words: its reader as NAME@MODE (the setup its results are keyed
    by, db.store), and the calibration that applied ("none" where none matched, "off" where calibrations
    were off and the run stored no key). A run from before 0017 stored no setup: its key's model and mode."""
    applied = run.confidence or {}
    key = applied.get("key") or {}
    which = applied.get("calibration")
    calibration = "calibration " + ("off" if not key else "none" if which is None else str(which))
    if run.setup:
        return f"{run.setup}, {calibration}"
    if not key:
        return f"{run.formatting_model}, mode not recorded, {calibration}"
    return f"{key['model']}, {key['mode']}, {calibration}"


def latest_run_id(session: Session, setup: str | None = None) -> int | None:
    """The latest run, or the latest that stored rows read by `setup`: NAME@MODE, or NAME alone for any
    mode (a run of that reader that found every record done stored none: it is passed over)."""
    query = select(func.max(Run.id))
    if setup is not None:
        stored = select(RunResult.id).where(RunResult.run_id == Run.id).exists()
        query = query.where(Run.setup == setup if "@" in setup else Run.setup.startswith(f"{setup}@"), stored)
    return session.scalar(query)


def setups(session: Session) -> list[str]:
    """Every reader setup the database's runs name, in the order first used."""
    found = session.execute(select(Run.setup, func.min(Run.id)).where(Run.setup.is_not(None))
                            .group_by(Run.setup).order_by(func.min(Run.id)))  # fmt: skip
    return [setup for setup, _ in found]


def run_exists(session: Session, run_id: int) -> bool:
    """Whether the database holds run `run_id` (a mistyped number is refused, not shown as empty)."""
    return session.get(Run, run_id) is not None


def run_summary(session: Session, run_id: int) -> RunSummary:
    run = session.get(Run, run_id)
    if run is None:
        raise LookupError(f"no run {run_id} in this database")
    summary = RunSummary(run_id, f"{run.schema_name}@v{run.schema_version}", run.state, setup=_setup(run))
    if run.confidence:
        summary.confidence = statement(run.confidence)
        summary.guarantees = dict(run.confidence.get("fields") or {})
    of_run = RunResult.run_id == run_id
    summary.statuses = dict(
        session.execute(select(RunResult.status, func.count()).where(of_run).group_by(RunResult.status)).all()
    )
    summary.formatting_finishes = dict(
        session.execute(
            select(func.coalesce(RunResult.formatting_finish, "not run"), func.count())
            .where(of_run)
            .group_by(RunResult.formatting_finish)
        ).all()
    )
    calls, prompt, completion = session.execute(
        select(
            func.count(ModelCall.id),
            func.coalesce(func.sum(ModelCall.prompt_tokens), 0),
            func.coalesce(func.sum(ModelCall.completion_tokens), 0),
        ).where(ModelCall.run_id == run_id)
    ).one()
    summary.calls, summary.prompt_tokens, summary.completion_tokens = calls, prompt, completion
    firsts = (
        select(ModelCall.record_id)
        .where(ModelCall.run_id == run_id, ModelCall.pass_name == "formatting", ModelCall.attempt == 1)
        .group_by(ModelCall.record_id)
        .having(func.count() > 1)  # one first attempt per part: a record read in parts has several
    )
    summary.split = session.scalar(select(func.count()).select_from(firsts.subquery())) or 0
    for evidence, nulled, errors, trust in session.execute(
        select(RunResult.evidence, RunResult.nulled, RunResult.errors, RunResult.trust).where(of_run)
    ).yield_per(1000):
        summary.values += len(trust or [])
        summary.certified += sum(1 for t in trust or [] if t.get("certified"))
        summary.ungrounded += len(_not_backed(evidence or []))
        summary.nulled += len(nulled or [])
        summary.cut += any(e.startswith(CUT) for e in errors or [])
        summary.incomplete += any(e.startswith(INCOMPLETE) for e in errors or [])
        summary.empty += any(e.startswith(EMPTY_ROW) for e in errors or [])
        summary.unvouched += any(e.startswith(UNVOUCHED) for e in errors or [])
    if run.finished_at is not None:
        summary.seconds = (run.finished_at - run.started_at).total_seconds()
    return summary


def result_rows(
    session: Session, run_id: int | None = None, status: str | None = None
) -> list[dict[str, Any]]:
    """Flat rows: record key, status, finish reasons, errors, the extracted fields and their evidence.

    With `run_id`: what that run produced (its history rows, the status as the run gave it; a row a
    person settled afterwards says so, `settled_later`, with its status now, `status_now`); without:
    every record's current result, one per reader setup. In the input's order (records are stored as
    read), not the order records finished: each record is stored as soon as it is done, so an empty text
    that fails at once is written before the ones that reached the model.
    """
    now: dict[int, str] = {}
    if run_id is not None:
        now = settled_later(session, run_id)
        query = (
            select(RunResult, Record.key, Record.source, Run.schema_name, Run.schema_version)
            .join(Record, Record.id == RunResult.record_id)
            .join(Run, Run.id == RunResult.run_id)
            .where(RunResult.run_id == run_id)
        )
        if status is not None:
            query = query.where(RunResult.status == status)
        query = query.order_by(Record.id, RunResult.id)
    else:
        query = select(Result, Record.key, Record.source, Result.schema_name, Result.schema_version).join(
            Record, Record.id == Result.record_id
        )
        if status is not None:
            query = query.where(Result.status == status)
        query = query.order_by(Record.id, Result.id)
    readers = select(Run.id, Run.setup)
    setup_of = dict(session.execute(readers if run_id is None else readers.where(Run.id == run_id)).all())
    rows = []
    for result, key, source, schema_name, schema_version in session.execute(query).all():
        later = now.get(result.record_id) if run_id is not None else None
        rows.append(
            {
                "record": key,
                "source": source,
                "schema": f"{schema_name}@v{schema_version}",
                "run": result.run_id,
                # the reader (NAME@MODE) whose row it is: a run's own, or the current row's
                "setup": getattr(result, "setup", None) or setup_of.get(result.run_id),
                "status": result.status,
                "settled_later": later is not None,
                "status_now": later or result.status,
                "reasoning_finish": result.reasoning_finish,
                "formatting_finish": result.formatting_finish,
                "attempts": result.attempts,
                "errors": result.errors,
                "nulled": result.nulled,
                # a failed row's answer was never checked: not its data (issue 44), but kept apart
                "data": None if result.status == "failed" else result.data,
                "unchecked": result.data if result.status == "failed" else None,
                "evidence": result.evidence,
                "trust": result.trust,  # each value's readings, score and state (flows.delivered)
            }
        )
    return rows


def settled_later(session: Session, run_id: int) -> dict[int, str]:
    """Per record of run `run_id` that a person settled after the run (`formwork settle`: decisions on
    this run's reading, then `mark_ok`), the status its row has now. The run's own row is still the
    current one (no later run of its reader replaced it) and its status changed since, which only a
    person's decisions do."""
    run = session.get(Run, run_id)
    if run is None:
        return {}
    decided = (
        select(Decision.id)
        .where(Decision.record_id == Result.record_id, Decision.run_id == run_id,
               Decision.schema_name == run.schema_name, Decision.schema_version == run.schema_version)
        .exists()
    )  # fmt: skip
    found = session.execute(
        select(Result.record_id, Result.status)
        .join(RunResult, (RunResult.run_id == run_id) & (RunResult.record_id == Result.record_id))
        .where(Result.run_id == run_id, Result.schema_name == run.schema_name,
               Result.schema_version == run.schema_version, Result.status != RunResult.status, decided)
    ).all()  # fmt: skip
    return {record: status for record, status in found}


def earlier_rows(session: Session, record_ids: list[int], schema_name: str, version: int
                 ) -> dict[int, dict[str, Any]]:  # fmt: skip
    """The stored result of each record (its data, trust and evidence) with the model that wrote it:
    what an escalation's stronger reader adds to (tasks.escalation.combine). Where readers of several
    setups stored one, the latest stored (db.store.row_setups writes the escalation's row onto it)."""
    found = session.execute(
        select(Result.record_id, Result.data, Result.trust, Result.evidence, Run.formatting_model)
        .join(Run, Run.id == Result.run_id)
        .where(Result.record_id.in_(record_ids), Result.schema_name == schema_name,
               Result.schema_version == version)
        .order_by(Result.updated_at, Result.id)  # the latest of each record last: it wins below
    ).all()  # fmt: skip
    return {
        record: {"data": data, "trust": trust or [], "evidence": evidence or [], "model": model}
        for record, data, trust, evidence, model in found
    }
