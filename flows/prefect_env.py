"""Prefect defaults that suit a batch tool run from a terminal, unless the user already chose.

- The first flow run with a brand-new PREFECT_HOME creates and migrates Prefect's own database, which
  takes 33–38 s here: longer than the default 20 s start-up timeout of the ephemeral API server.
- PREFECT_HOME's parent folder must exist, or start-up times out with the same message.
- Analytics would try to reach the internet; INFO logs drown the progress bar.
- The heartbeat costs ~1 s per flow run and cannot be turned off from the environment.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEFAULTS = {
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
}


def quiet_and_redacted() -> None:
    """What every process running a flow needs, the CLI or a deployment's worker: secrets redacted from
    every log record, and pydantic's harmless warning about the flows' `schema` parameter (it shadows
    a BaseModel attribute of Prefect's parameter model; the name is the flows' public API) silenced."""
    from formwork.tasks.redact import install_log_redaction

    install_log_redaction()
    warnings.filterwarnings("ignore", message='Field name "schema"', category=UserWarning)


def apply_defaults() -> None:
    """Set the defaults above in the environment; call before Prefect reads its settings.

    Also redacts secrets (URL passwords, the vLLM API key) from every log record of this process.
    """
    quiet_and_redacted()
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
    home = Path(os.environ.get("PREFECT_HOME", Path.home() / ".prefect")).expanduser()
    home.mkdir(parents=True, exist_ok=True)


@contextmanager
def without_heartbeat() -> Iterator[None]:
    """Run flows in this block with no heartbeat thread (~1 s saved per flow run)."""
    from prefect.settings import temporary_settings

    with temporary_settings(updates={"flows.heartbeat_frequency": None}):  # type: ignore[dict-item]
        yield


@contextmanager
def cli_flows() -> Iterator[None]:
    """What a command that runs flows in its own process needs: no heartbeat thread, and an ephemeral
    Prefect server, if it starts one, that dies with the command even when it is killed
    (flows.prefect_server)."""
    from formwork.flows.prefect_server import tie_ephemeral_server

    tie_ephemeral_server()
    with without_heartbeat():
        yield


@contextmanager
def explained(*kinds: type[BaseException]) -> Iterator[None]:
    """Prefect logs each exception that ends a task or flow run with its traceback; for the errors the
    CLI explains itself (a bad schema, a database that stayed away), keep Prefect's one line and drop
    the traceback, so the run ends on the explanation, not on a raw traceback."""

    class Untraced(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            if record.exc_info and isinstance(record.exc_info[1], kinds):
                record.exc_info, record.exc_text = None, None
            return True

    untraced = Untraced()
    loggers = [logging.getLogger(name) for name in ("prefect.flow_runs", "prefect.task_runs")]
    for logger in loggers:
        logger.addFilter(untraced)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(untraced)
