"""A `formwork` command killed with SIGKILL leaves no Prefect server behind (issue 41 point 10).

With no Prefect API configured, the CLI's first flow run starts Prefect's ephemeral server as a child
process and stops it at exit; SIGKILL skips the exit, and the server lived on, re-parented to init,
holding its port and its database. The fault tests kill the whole process group, which hides this:
here only the CLI's own pid is killed, as a supervisor or the OOM killer would, and the server must
die with it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests import vllm_fixture as vf


def _children(pid: int) -> list[int]:
    """The process's children, forked by any of its threads (each thread lists its own)."""
    found = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(child) for child in children.read_text().split()]
        except OSError:  # that thread ended
            continue
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may never reap what it inherits)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_ephemeral_prefect_server_dies_with_a_cli_killed_by_sigkill(tmp_path, write_jsonl) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMWORK_", "PREFECT_API"))}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect-home"), "FORMWORK_CONFIG": str(tmp_path / "none.toml")}
    formwork = Path(sys.executable).with_name("formwork")
    source = write_jsonl([{"id": "a", "text": "Anna: we won!"}])
    command = [str(formwork), "run", str(source), "--schema", "chat_tag"]
    command += ["--db", f"sqlite:///{tmp_path}/x.db"]
    with (tmp_path / "cli.log").open("wb") as log:
        cli = subprocess.Popen(command, cwd=vf.REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    servers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not servers:  # the server is started before the flow's body: no model is loaded yet
            assert cli.poll() is None, (tmp_path / "cli.log").read_text()
            assert time.monotonic() < deadline, "the CLI started no Prefect server"
            servers = [c for c in _children(cli.pid) if "prefect.server.api.server:create_app" in _cmdline(c)]
            time.sleep(0.05)
        os.kill(cli.pid, signal.SIGKILL)  # the CLI alone, not its process group
        cli.wait(timeout=30)
        deadline = time.monotonic() + 20
        while any(_running(server) for server in servers) and time.monotonic() < deadline:
            time.sleep(0.1)
        survivors = [server for server in servers if _running(server)]
        assert survivors == [], f"the Prefect server outlived the killed CLI: {survivors}"
    finally:  # never leave a process behind for the next test
        if cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
        for server in servers:
            if _running(server):
                os.kill(server, signal.SIGKILL)
