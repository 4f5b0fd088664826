"""Every finished group kept whatever the database does: waited for through an outage, stored record by
record when it refuses the group, and handed back to the caller (to journal) when it stays away.

PostgreSQL restarted for 15 s in the middle of a run, and 3 finished records lost their 4 paid model
calls: the write gave up after three tries a few seconds apart, the chunk's writer dropped the group,
the next run paid for those calls again, and this one ended in a raw "Connection refused" traceback
although the database had been back for a minute and a half (issue 41 point 3). So a run has one
`OutageWindow`: every write it makes (and every claim and read that a model call waits for) is tried
again with backoff while the database has been unreachable for less than `db_outage_s`. Past that the
window closes for the rest of the run, `DatabaseUnavailable` says what happened, and the chunk's
writer journals what finished (db.journal) instead of losing it.

A retried write may find its group already stored: when a connection drops during COMMIT the server
may have committed and the answer be lost. `save_outcomes(skip_stored=True)` skips the records whose
history row this run already wrote, so a retry (or a journal's replay) never stores a call twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from formwork.db.store import QueuePolicy, save_outcomes
from formwork.schemas.registry import Schema
from formwork.tasks.calls import Outcome
from formwork.tasks.validate import Verdict

logger = logging.getLogger(__name__)
T = TypeVar("T")
FIRST_PAUSE_S, LONGEST_PAUSE_S = 0.25, 2.0  # a database that is back is noticed within 2 s


class DatabaseUnavailable(RuntimeError):
    """The database stayed unreachable for longer than the run's outage window."""


def is_outage(exc: BaseException) -> bool:
    """Whether `exc` says the database could not be reached (or the connection broke), not that it
    refused what was sent: a refused row fails alone, an outage is waited for."""
    return isinstance(exc, OperationalError) or (isinstance(exc, DBAPIError) and exc.connection_invalidated)


def reason(exc: BaseException) -> str:
    """The driver's first line, without the statement and its parameters (which hold record texts)."""
    original = getattr(exc, "orig", None) or exc
    lines = str(original).strip().splitlines()
    return f"{type(original).__name__}: {lines[0] if lines else ''}"


class OutageWindow:
    """How long a run waits for its database: shared by the run's threads, so one outage has one clock.

    `call` runs a database action, and while the database has been unreachable for less than
    `window_s` it tries again with a doubling pause. Once an outage outlasts the window, the window
    closes: that call and every later one raise `DatabaseUnavailable` at once, and the run stops
    taking up new records.
    """

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._last = ""
        self.closed = False

    def call(self, action: Callable[[], T], what: str) -> T:
        pause = FIRST_PAUSE_S
        while True:
            if self.closed:
                raise self._unavailable()
            try:
                done = action()
            except Exception as exc:
                if not is_outage(exc):
                    raise
                left = self._failed(exc, what)
                if left <= 0:
                    raise self._unavailable() from None
                time.sleep(min(pause, left))
                pause = min(2 * pause, LONGEST_PAUSE_S)
                continue
            self._recovered()
            return done

    def _failed(self, exc: BaseException, what: str) -> float:
        """Note the failure; return how long the window still allows (closing it when nothing is left)."""
        with self._lock:
            now = time.monotonic()
            if self._down_since is None:
                self._down_since = now
                logger.warning("the database could not be reached to %s (%s); trying again for up to %.0f s "
                               "(db_outage_s)", what, reason(exc), self.window_s)  # fmt: skip
            self._last = reason(exc)
            left = self._down_since + self.window_s - now
            self.closed = self.closed or left <= 0
            return left

    def _recovered(self) -> None:
        with self._lock:
            if self._down_since is not None:
                logger.warning("the database is back after %.0f s", time.monotonic() - self._down_since)
                self._down_since = None

    def _unavailable(self) -> DatabaseUnavailable:
        return DatabaseUnavailable(
            f"the database could not be reached for more than {self.window_s:g} s (db_outage_s): {self._last}"
        )


def _unstorable(outcome: Outcome, exc: Exception) -> Outcome:
    """What is left to store of an outcome the database refused: its calls' numbers and the reason."""
    why = f"could not store the result: {type(exc).__name__}: {str(exc)[:300]}"
    for call in outcome.calls:
        call.output = call.output.encode("ascii", "backslashreplace").decode("ascii")
    return Outcome(outcome.record_id, Verdict("failed", None, [why]), outcome.attempts,
                   calls=outcome.calls, queueable=False)  # fmt: skip


def save_chunk(
    sessions: Callable[[], Session], run_id: int, schema: Schema, outcomes: Sequence[Outcome],
    queue: QueuePolicy, window: OutageWindow, replay: bool = False,
) -> None:  # fmt: skip
    """`save_outcomes` with a safety net: wait out an outage within `window`, and store the group record
    by record when the database refuses it (one bad row fails alone, every paid call is kept).

    Model calls are never repeated to recover a write: the outcomes are already here. Raises
    `DatabaseUnavailable` when the window closes (the caller journals the group). `replay`: the group
    comes from a journal, so part of it may be stored already.
    """
    tries = 0

    def store(group: Sequence[Outcome], again: bool) -> Callable[[], None]:
        def action() -> None:
            nonlocal tries
            tries += 1
            with sessions() as session:
                save_outcomes(session, run_id, schema, group, queue, skip_stored=again or tries > 1)

        return action

    what = f"store {len(outcomes)} finished records"
    try:
        window.call(store(outcomes, replay), what)
        return
    except SQLAlchemyError:  # refused, not unreachable: find the row it refuses
        logger.warning("run %s: the group's commit failed; storing its %d records one by one", run_id,
                       len(outcomes))  # fmt: skip
    for outcome in outcomes:
        try:
            window.call(store([outcome], True), "store a finished record")
        except SQLAlchemyError as exc:
            logger.exception("run %s: record %s could not be stored as is", run_id, outcome.record_id)
            window.call(store([_unstorable(outcome, exc)], True), "store a finished record")
