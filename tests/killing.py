"""Kill (or stop) a real `formwork run` the moment it has stored something: the one fault no engine can fake.

Shared by the fault tests (a run killed between chunks) and the durability tests (a run killed inside
one chunk, or inside one record's calls): each starts the CLI in its own process group, waits until
the database shows what it waits for, SIGKILLs the whole group (so an engine core or a server child
dies too) and checks it really died so. `stop_at_first` sends SIGTERM instead, as a service manager
stops a run, and measures how soon it exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import vllm_fixture as vf

# Six chat lines that a killed run processes: enough that a kill lands with some stored, some not.
CHAT_LINES = [
    "Anna: we won the finals!!!",
    "Ben: the deploy failed again, I am so tired of this.",
    "Chloe: my cat is missing since yesterday.",
    "Dan: who ate my sandwich?! I'm furious.",
    "Eve: a spider! There is a spider on my desk!",
    "Farid: the train is late as usual.",
]
RECORDS = [{"id": f"r{i}", "text": text} for i, text in enumerate(CHAT_LINES)]


def _started_until_stored(
    command: list[str], env: dict[str, str], log_path: Path, stored: Callable[[], object], limit_s: float,
    before: str,
) -> subprocess.Popen[bytes]:  # fmt: skip
    """`command` started in its own process group, once `stored()` is truthy; fail if it exits first (the
    message says it exited `before` what) or stores nothing within `limit_s`. The caller ends it."""
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, cwd=vf.REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + limit_s
        while not stored():
            if proc.poll() is not None:
                pytest.fail(f"formwork exited ({proc.returncode}) before {before}:\n{log_path.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"nothing stored after {limit_s:.0f} s:\n{log_path.read_text()}")
            time.sleep(0.05)
    except BaseException:
        _end(proc)
        raise
    return proc


def _end(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the whole group if it still runs (an engine core or a server child dies too)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def kill_at_first_result(
    command: list[str], env: dict[str, str], log_path: Path, stored: Callable[[], object], limit_s: float
) -> None:
    """Run `command`, SIGKILL its process group once `stored()` is truthy; fail if it exits first or
    stores nothing within `limit_s`."""
    proc = _started_until_stored(command, env, log_path, stored, limit_s, "the kill")
    _end(proc)
    assert proc.returncode == -signal.SIGKILL


def stop_at_first(
    command: list[str], env: dict[str, str], log_path: Path, stored: Callable[[], object], limit_s: float,
    stop_within_s: float,
) -> tuple[int, float]:  # fmt: skip
    """Run `command`, send its process SIGTERM (as Docker's stop does) once `stored()` is truthy; return
    its exit status and how long it took to exit after the signal (fail past `stop_within_s`)."""
    proc = _started_until_stored(command, env, log_path, stored, limit_s, "SIGTERM")
    try:
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=stop_within_s)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {stop_within_s:.0f} s after SIGTERM:\n{log_path.read_text()}")
        return proc.returncode, time.monotonic() - signalled
    finally:
        _end(proc)
