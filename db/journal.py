"""Finished records the database could not take, kept in a local file until the next run stores them.

When the database stays away longer than the outage window (db.keeping), a run's finished records
(their results and their paid model calls) would otherwise be lost and paid for again. They go to a
journal instead: one JSON-lines file per run and database, in `journal_dir` (never the database),
a header line (run, schema, queue policy) and then one line per finished record, flushed and synced
per group. The next run against the same database replays every journal before it calls any model,
so a replayed record has its result and is not extracted again, then deletes the file.

A run holds an exclusive `flock` on its journal while it may still write to it, and a replaying run
takes the same lock without waiting: a journal still being written, or being replayed by another run
on this machine, is left alone. Replaying is idempotent (db.store's `skip_stored`): a replay stopped
between its commit and the deletion stores nothing twice the next time.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sqlalchemy.engine.url import make_url
from sqlalchemy.orm import Session

from formwork.db.claims import release_run
from formwork.db.keeping import OutageWindow, save_chunk
from formwork.db.store import QueuePolicy, finish_run
from formwork.schemas.registry import Schema
from formwork.tasks.calls import CallLog, Outcome
from formwork.tasks.validate import Verdict

logger = logging.getLogger(__name__)
FORMAT = 1


def database_key(db_url: str) -> str:
    """A short name for the database a journal belongs to (a SQLite file by its absolute path, a server
    database by its URL without password), so a run never replays another database's journal."""
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        url = url.set(database=str(Path(url.database).resolve()))
    return hashlib.sha256(url.render_as_string(hide_password=True).encode()).hexdigest()[:12]


class Journal:
    """One run's journal: opened (and locked) at its first write, closed when the run ends."""

    def __init__(self, folder: Path, db_url: str, run_id: int, schema: Schema, queue: QueuePolicy) -> None:
        self.path = folder / f"{database_key(db_url)}-run-{run_id}.jsonl"
        fields = ("name", "version", "body", "source", "hashed_version")
        self._header = {"journal": FORMAT, "run": run_id, "queue": dataclasses.asdict(queue),
                        "schema": {name: getattr(schema, name) for name in fields}}  # fmt: skip
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self.records = self.calls = 0

    def write(self, outcomes: Sequence[Outcome]) -> None:
        """Append finished records and sync them to disk before returning."""
        with self._lock:
            if self._file is None:  # locked, with its header, before its name appears for a replay
                self.path.parent.mkdir(parents=True, exist_ok=True)
                partial = self.path.with_name(f".{self.path.name}.new")
                self._file = partial.open("w", encoding="utf-8")
                fcntl.flock(self._file, fcntl.LOCK_EX)
                self._file.write(json.dumps(self._header) + "\n")
                self._file.flush()
                os.replace(partial, self.path)
            for outcome in outcomes:
                self._file.write(json.dumps(dataclasses.asdict(outcome), default=str) + "\n")
            self._file.flush()
            os.fsync(self._file.fileno())
            self.records += len(outcomes)
            self.calls += sum(len(outcome.calls) for outcome in outcomes)
        logger.warning("%d finished records written to the journal %s", len(outcomes), self.path)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()  # releases the lock: the next run may replay it
                self._file = None

    def account(self) -> str:
        """What became of the run's finished records, for the message that ends it."""
        if not self.records:
            return "no finished record was lost"
        return (f"{self.records} finished records ({self.calls} model calls) are in the journal {self.path}; "
                "the next run stores them before it calls any model")  # fmt: skip


@dataclass(frozen=True)
class Replayed:
    """What a run stored from earlier runs' journals before calling any model."""

    records: int = 0
    runs: tuple[int, ...] = ()


def replay(sessions: Callable[[], Session], folder: Path, db_url: str, window: OutageWindow) -> Replayed:
    """Store every journal this database's runs left in `folder`, oldest run first; delete each one
    stored. The runs that wrote them are over (their lock is free): each is closed as `crashed` and
    its claims released, so its unfinished records are free at once."""
    records, runs = 0, []
    journals = folder.glob(f"{database_key(db_url)}-run-*.jsonl")
    for path in sorted(journals, key=lambda path: int(path.stem.rsplit("-", 1)[1])):
        with path.open("r", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its run is still writing it, or another run is replaying it
            if os.fstat(handle.fileno()).st_nlink == 0:
                continue  # another run replayed and deleted it between our open and our lock
            run_id, schema, queue, outcomes = _read(handle, path)
            save_chunk(sessions, run_id, schema, outcomes, queue, window, replay=True)
            window.call(lambda run_id=run_id: _close(sessions, run_id), "close a journalled run")
            path.unlink()
        logger.warning("run %s's %d journalled records stored from %s", run_id, len(outcomes), path)
        records += len(outcomes)
        runs.append(run_id)
    return Replayed(records, tuple(runs))


def _close(sessions: Callable[[], Session], run_id: int) -> None:
    with sessions() as session:
        finish_run(session, run_id, "crashed", only_running=True)
        release_run(session, run_id)
        session.commit()


def _read(handle: IO[str], path: Path) -> tuple[int, Schema, QueuePolicy, list[Outcome]]:
    """The journal's header and records; a line cut short by a kill while it was written is skipped
    (its record has no result and is extracted again)."""
    lines = handle.read().splitlines()
    header = json.loads(lines[0])
    outcomes = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            outcomes.append(_outcome(json.loads(line)))
        except (ValueError, TypeError, KeyError):
            logger.warning("%s line %d is incomplete: skipped", path, number)
    schema = Schema(**header["schema"])
    return header["run"], schema, QueuePolicy(**header["queue"]), outcomes


def _outcome(row: dict[str, Any]) -> Outcome:
    verdict = Verdict(**row.pop("verdict"))
    calls = [CallLog(**call) for call in row.pop("calls")]
    row.pop("readings", None)  # what the verdict was decided from: not stored
    return Outcome(**row, verdict=verdict, calls=calls)
