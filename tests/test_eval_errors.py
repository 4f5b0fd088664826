"""An eval that replays a stored run it cannot use ends on one line that says what to fix: Prefect's
own log of the flow's exception keeps its one line and drops the traceback (flows.prefect_env.explained),
and the command says it calls no model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold" / "expense.jsonl"


def test_a_replay_of_a_run_the_database_lacks_ends_on_one_line_without_a_traceback(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "formwork.flows.cli", "eval", str(GOLD), "--schema", "expense", "--mode",
               "one-pass", "--limit", "3", "--from-run", "7", "--calibrate", "--db",
               f"sqlite:///{tmp_path}/eval.db"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env=os.environ | {"PREFECT_HOME": str(tmp_path / "prefect")})  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "Traceback" not in said
    assert "replays run 7's stored readings, no model call" in " ".join(said.split())
    assert said.strip().splitlines()[-1].startswith("error: ")
