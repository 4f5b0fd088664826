"""What a run holds its values to, decided once when it opens: the calibration that applies (or the
measuring policy of `formwork eval --calibrate`), what the run records about it, and which fields the
escalation's reader certifies (a row unsure only of others is not sent to it: db.store.QueuePolicy).

Kept apart from the runner so that what a run promises is read in one place, as `formwork run`,
`formwork eval` and the reprocessing flow all open their runs through it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from formwork.db.calibrations import certified_fields, policy_for
from formwork.schemas.registry import Schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.confidence.policy import Policy
from formwork.tasks.engines.base import Engine
from formwork.tasks.evaluation.key import calibration_key, escalation_key
from formwork.tasks.settings import Settings


@dataclass(frozen=True)
class RunPolicy:
    options: ExtractOptions  # the extraction options, with the policy every value is held to
    applied: dict[str, Any] | None  # stored on the run: the calibration, its sentences and key
    reach: tuple[str, ...] | None  # the fields the escalation's reader certifies; None: not known yet


def run_policy(session: Session, settings: Settings, schema: Schema, engines: tuple[Engine, Engine], *,
               measuring: bool, escalating: bool) -> RunPolicy:  # fmt: skip
    """The policy of a run with these settings on these engines. `measuring`: a calibration's run;
    `escalating`: the escalation's own run (its rows have no one else to go to)."""
    options, applied = ExtractOptions.from_settings(settings), None
    if measuring or settings.calibration:
        key = calibration_key(settings, schema, engines)
        if measuring:
            options = replace(options, policy=Policy("measuring"))
            applied = {"calibration": None, "guarantee": "measuring: nothing certified, nothing dropped"}
        else:
            found = policy_for(session, key)
            options, applied = found.applied_to(options), found.applied
        applied = applied | {"key": key.as_dict()}  # what rows like these calibrate (eval, audit)
    reach = (certified_fields(session, escalation_key(settings, schema, engines))
             if settings.escalate_to and not (escalating or measuring) else None)  # fmt: skip
    return RunPolicy(options, applied, reach)
