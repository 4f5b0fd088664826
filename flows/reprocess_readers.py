"""The reader that reads claimed queue entries again: a retry's is the reader whose run queued it (its
entry's `setup`, NAME@MODE), an escalation's the stronger reader it names. Where the worker's settings do
not open that reader, the claims still waiting are given back, never read by another reader
(flows.reprocess_failed)."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from formwork.db.queue import Claim, give_back
from formwork.flows.run_policy import reader_settings, with_stored_reader
from formwork.flows.run_start import checked_engines, reader_setup
from formwork.tasks.engines.models import CATALOGUE
from formwork.tasks.redact import redact
from formwork.tasks.settings import Settings

Reader = tuple[str | None, str | None]  # (an escalation's stronger reader, or None; a retry's setup, or None)


class ReaderUnavailable(RuntimeError):
    """The reader some claimed entries need cannot be opened (its server is down, its model missing);
    their claims are given back before this is raised."""


def retry_settings(settings: Settings, setup: str) -> Settings:
    """The settings that read again a retry the reader `setup` (NAME@MODE, its entry's) queued: a catalogue
    model by its name in its mode; another model (a server's, a GGUF file) as this worker's settings name
    it, in the entry's mode; an entry with no reader ("", from before readers were kept) the worker's."""
    if not setup:
        return with_stored_reader(settings)
    name, _, mode = setup.rpartition("@")
    chosen: dict[str, Any] = {"mode": mode}
    if name in CATALOGUE:
        chosen |= {"engine": "local", "local_model": name, "local_model_path": None}
    return with_stored_reader(settings.model_copy(update=chosen))


def open_reader(stack: ExitStack, sessions: Any, worker: str, settings: Settings, reader: Reader,
          waiting: list[list[Claim]]) -> tuple[Settings, Any]:  # fmt: skip
    """The settings and opened engines of `reader`: an escalation's stronger reader, or (None, setup) the
    reader that queued retries; where it cannot be opened, or opens as another reader than the retries
    wait for, give back the claims not yet read (`waiting`) and raise ReaderUnavailable, one line."""
    stronger, setup = reader
    reading = (
        retry_settings(settings, setup or "") if stronger is None else reader_settings(settings, stronger)
    )
    try:
        engines = stack.enter_context(checked_engines(reading))
        opened_as = reader_setup(reading, engines[1])
        if setup and opened_as != setup:
            raise RuntimeError(
                f"this worker's settings read as {opened_as}: name that reader's server or file"
            )
        return reading, engines
    except Exception as exc:  # whatever stops it opening, the claims must not outlive this worker
        with sessions() as session:
            count = give_back(session, worker, [c.entry_id for group in waiting for c in group])
        who = f"the stronger reader {stronger}" if stronger else f"the retries' reader {setup}".rstrip()
        fix = ("start it, or read them with another (`formwork retry --escalate-to ...`)" if stronger
               else "start it, or run `formwork retry` with its settings (`--set`)")  # fmt: skip
        raise ReaderUnavailable(
            redact(f"{who} cannot be opened ({exc}); {count} claimed queue entries are waiting again: {fix}")
        ) from exc  # fmt: skip
