"""What a run holds its values to, decided once when it opens: the calibration that applies (or the
measuring policy of `formwork eval --calibrate`), what the run records about it, and which fields the
escalation's reader certifies (a row unsure only of others is not sent to it: db.store.QueuePolicy), or
every field where that reader has a calibration measured on this run's escalations (db.escalated_
calibrations.escalation_reach).

Kept apart from the runner so that what a run promises is read in one place, as `formwork run`,
`formwork eval` and the reprocessing flow all open their runs through it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from formwork.db.calibrations import certified_fields, policy_for
from formwork.db.escalated_calibrations import escalation_reach
from formwork.schemas.registry import Schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.confidence.policy import Policy
from formwork.tasks.engines.base import Engine
from formwork.tasks.engines.models import BUNDLED
from formwork.tasks.evaluation.key import calibration_key, escalation_key
from formwork.tasks.reader_choice import escalation_overrides
from formwork.tasks.redact import redact
from formwork.tasks.settings import Settings

_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^@/\s]*@")


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
    reach = None
    if settings.escalate_to and not (escalating or measuring):
        stronger = escalation_key(settings, schema, engines)
        reach = escalation_reach(session, stronger, applied, certified_fields(session, stronger))
    return RunPolicy(options, applied, reach)


def stored_reader(spec: str, settings: Settings) -> str:
    """`escalate_to` as a queue entry keeps it: the reader whole, whichever worker reads it, and no secret.

    `@MODE` alone means this run's model in another mode, and `NAME` alone this run's mode: stored bare,
    a worker with another model read it with that one (`@two-readings` read by the bundled 135M). A
    server's URL is stored redacted (the worker takes the password from its own settings). The same
    server or GGUF file in another mode has no name in `escalate_to`: that spec is kept as it is.
    """
    overrides = escalation_overrides(spec)
    if overrides.get("engine") in ("vllm", "openai"):
        return redact(spec)
    if "local_model" not in overrides and (settings.engine != "local" or settings.local_model_path):
        return spec
    name = overrides.get("local_model") or settings.local_model or BUNDLED.name
    return f"{name}@{overrides.get('mode', settings.mode)}"


def with_stored_reader(settings: Settings) -> Settings:
    """The run's settings with `escalate_to` as its queue entries store it (stored_reader)."""
    if not settings.escalate_to:
        return settings
    return settings.model_copy(update={"escalate_to": stored_reader(settings.escalate_to, settings)})


def reader_settings(settings: Settings, spec: str) -> Settings:
    """The settings that read an escalation to `spec` (as stored, or a worker's `--escalate-to`): the
    worker's own `escalate_to` where it names the same reader, since it holds the server's password the
    queue never does; else `spec`, with any user and password taken out of its URL (never sent as ***)."""
    own = settings.escalate_to
    if own and stored_reader(own, settings) == spec:
        return settings.model_copy(update=escalation_overrides(own))
    overrides = escalation_overrides(spec)
    bare = {k: _USERINFO.sub(r"\g<scheme>", v) if k.endswith("_url") else v for k, v in overrides.items()}
    return settings.model_copy(update=bare)
