"""Each finished record stored within about a second: a chunk's outcomes reach the database as they come.

A chunk's records finish one by one, over minutes on the embedded engine; storing them only when the
chunk ends put every paid call of a killed run's chunk at risk (issue 28: 12 minutes into `make run`
the database held none). Storing each record in its own transaction is the other extreme: 10,000
rows took 2–46 s one by one here against under a second in batches (FINDINGS), and a GPU server
finishes hundreds of records a second.

So a writer thread per chunk takes outcomes from a queue and stores them in groups: the first outcome
of a group opens it, and the group is written `window_s` later (or when the chunk ends). No finished
record waits in memory longer than about `window_s` plus one write, a slow engine gets one short
transaction per record, and a fast one at most one per chunk per window. Each group is one
`save_chunk` call: its calls, results, history, claims and retry-queue entries commit together.

A record's calls wait for its end no longer either: a long list read item by item makes a call per
unit, over minutes, and a run killed among them lost every answered one (issue 54: 32 unit calls made,
none stored, 93 paid after the rerun), as did the first of two readings. `EarlyCalls` stores each
answered call within `window_s` through the same kind of writer, with its answer whole
(tasks.answers), and the next run that reads the record takes those answers instead of paying again.
When the record's result is stored, its early calls are not stored again: their rows get the record's
last word on them (`judged`, as if stored with it) and lose the request's key and the kept answer.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Generic, NamedTuple, TypeVar

from sqlalchemy import insert, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from formwork.db.clean import storable
from formwork.db.keeping import DatabaseUnavailable, OutageWindow
from formwork.db.models import ModelCall, utcnow
from formwork.tasks.answers import as_payload, from_payload
from formwork.tasks.calls import CallLog, Outcome
from formwork.tasks.engines.base import Completion

WINDOW_S = 1.0
logger = logging.getLogger(__name__)
_END = None
T = TypeVar("T")


class RecordWriter(Generic[T]):
    """Stores items handed to `put` in groups of at most `window_s`; `flush` waits until every item put
    so far is written; `close` stores the rest."""

    def __init__(self, save: Callable[[Sequence[T]], None], window_s: float = WINDOW_S,
                 name: str = "formwork-writer") -> None:  # fmt: skip
        self._save = save
        self._window_s = window_s
        self._queue: queue.SimpleQueue[T | threading.Event | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def put(self, item: T) -> None:
        self._queue.put(item)

    def flush(self) -> None:
        """Return once every item put before the call is written (or its write failed)."""
        written = threading.Event()
        self._queue.put(written)
        written.wait()

    def close(self) -> None:
        """Store what is left, stop the thread, and raise what a write raised (the chunk then fails)."""
        self._queue.put(_END)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def __enter__(self) -> RecordWriter[T]:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:  # fmt: skip
        self.close()

    def _loop(self) -> None:
        ended = False
        while not ended:
            first = self._queue.get()
            if first is _END:
                return
            if isinstance(first, threading.Event):
                first.set()
                continue
            group, deadline, flushed = [first], time.monotonic() + self._window_s, None
            while (left := deadline - time.monotonic()) > 0:
                try:
                    item = self._queue.get(timeout=left)
                except queue.Empty:
                    break
                if item is _END:
                    ended = True
                    break
                if isinstance(item, threading.Event):
                    flushed = item  # written now, not a window later
                    break
                group.append(item)
            self._write(group)
            if flushed is not None:
                flushed.set()

    def _write(self, group: list[T]) -> None:
        try:
            self._save(group)
        except Exception as exc:  # the first is raised again on close(), in the chunk's own thread
            logger.error("could not store %d finished records: %s", len(group), exc)
            self._error = self._error or exc


class _Answered(NamedTuple):
    record_id: int
    key: str
    log: CallLog
    payload: dict[str, Any] | None


class EarlyCalls:
    """A chunk's answered calls, each stored within `window_s` of its answer (tasks.calls.Answers), and
    the answers earlier runs stored for its records but never used in a stored result.

    `taken` splits a finished group into what its records still have to store and the early rows to
    settle; `settle`, once their results are stored, gives those rows their last `judged`."""

    def __init__(self, sessions: Callable[[], Session], run_id: int, window: OutageWindow,
                 window_s: float = WINDOW_S) -> None:  # fmt: skip
        self._sessions, self._run_id, self._window = sessions, run_id, window
        self._lock = threading.Lock()
        self._found: dict[int, dict[str, list[tuple[int, dict[str, Any]]]]] = {}
        self._rows: dict[int, tuple[int, CallLog]] = {}  # id(log): its row, and the log (kept alive)
        self._writer: RecordWriter[_Answered] = RecordWriter(
            self._store, window_s, f"formwork-calls-{run_id}"
        )

    def load(self, session: Session, record_ids: Sequence[int]) -> None:
        """Inside the caller's transaction: the answers other runs stored for these records and never
        settled (their run was killed before the record's result was stored), to be taken once each."""
        found: dict[int, dict[str, list[tuple[int, dict[str, Any]]]]] = defaultdict(lambda: defaultdict(list))
        rows = session.execute(
            select(ModelCall.id, ModelCall.record_id, ModelCall.judged)
            .where(ModelCall.record_id.in_(record_ids), ModelCall.run_id != self._run_id,
                   ModelCall.judged.is_not(None))
            .order_by(ModelCall.id)
        )  # fmt: skip
        for row_id, record_id, judged in rows:
            if isinstance(judged, dict) and judged.get("answer") and judged.get("asked"):
                found[record_id][judged["asked"]].append((row_id, judged["answer"]))
        with self._lock:
            self._found.update(found)

    def reuse(self, record_id: int, key: str, log: CallLog) -> Completion | None:
        with self._lock:
            stored = self._found.get(record_id, {}).get(key)
            if not stored:
                return None
            row_id, payload = stored.pop(0)
            try:
                answer = from_payload(payload)
            except (KeyError, TypeError, ValueError):  # a row written otherwise: asked again
                return None
            self._rows[id(log)] = (row_id, log)
        logger.info("record %s: an answer stored by an earlier run is taken, not paid for again", record_id)
        return answer

    def keep(self, record_id: int, key: str, log: CallLog, done: Completion) -> None:
        self._writer.put(_Answered(record_id, key, log, as_payload(done)))

    def taken(self, outcomes: Sequence[Outcome]) -> tuple[list[Outcome], list[dict[str, Any]]]:
        """The outcomes without the calls stored already (every call kept so far is written first), and
        those calls' rows as they are to read once the results are stored (`settle`)."""
        self._writer.flush()
        left, settled = [], []
        with self._lock:
            for outcome in outcomes:
                calls = [log for log in outcome.calls if id(log) not in self._rows]
                early = [self._rows.pop(id(log)) for log in outcome.calls if id(log) in self._rows]
                settled += [{"id": row_id, "judged": storable(log.judged)} for row_id, log in early]
                left.append(dataclasses.replace(outcome, calls=calls) if early else outcome)
        return left, settled

    def settle(self, rows: list[dict[str, Any]]) -> None:
        """Give stored records' early rows their last `judged`, without the kept answer: a row that kept
        one would be taken again by a run that reads the record once more."""
        if not rows:
            return

        def action() -> None:
            with self._sessions() as session:
                session.execute(update(ModelCall), rows)
                session.commit()

        try:
            self._window.call(action, "settle answered model calls")
        except (DatabaseUnavailable, SQLAlchemyError) as exc:  # the result is stored: only a note is left
            logger.warning("run %s: %d stored calls keep their answers: %s", self._run_id, len(rows), exc)

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> EarlyCalls:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:  # fmt: skip
        self.close()

    def _store(self, group: Sequence[_Answered]) -> None:
        """Insert the group's calls; a failed write leaves them with their records (stored, or journalled,
        when the records end), never lost and never raised."""
        now = utcnow()
        rows = [{**storable(vars(item.log)), "run_id": self._run_id, "record_id": item.record_id,
                 "created_at": now, "judged": storable(_judged(item.log, item.key, item.payload))}
                for item in group]  # fmt: skip

        def action() -> list[int]:
            with self._sessions() as session:
                statement = insert(ModelCall).returning(ModelCall.id, sort_by_parameter_order=True)
                ids = list(session.scalars(statement, rows))
                session.commit()
            return ids

        try:
            ids = self._window.call(action, f"store {len(rows)} answered model calls")
        except (DatabaseUnavailable, SQLAlchemyError) as exc:
            logger.warning(
                "run %s: %d answered calls wait for their records: %s", self._run_id, len(rows), exc
            )
            return
        with self._lock:
            for item, row_id in zip(group, ids, strict=True):
                self._rows[id(item.log)] = (row_id, item.log)


def _judged(log: CallLog, key: str, payload: dict[str, Any] | None) -> dict[str, Any]:
    """An early row's `judged` until its record's result is stored: the judge's view (when there is one
    yet), the request's key and the answer."""
    return {**(log.judged or {}), "asked": key, **({"answer": payload} if payload is not None else {})}
