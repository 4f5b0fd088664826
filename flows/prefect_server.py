"""The ephemeral Prefect server a command starts dies with that command, even when it is SIGKILLed.

With no Prefect API configured, the first flow run starts Prefect's server as a child process
(prefect.server.api.server.SubprocessASGIServer: `python -m uvicorn ... create_app`) and stops it
from an `atexit` hook. SIGKILL runs no hook: the server lived on, re-parented to init, holding its port
and Prefect's database (issue 41 point 10; the kill tests missed it because they kill the whole
process group).

Linux ties a child to its parent on request: `prctl(PR_SET_PDEATHSIG, SIGKILL)` in the child between
fork and exec makes the kernel kill it when the parent goes. The signal comes when the parent
*thread* that forked the child ends, not its process: Prefect may start the server from a worker
thread (its events worker does), and that thread's end would kill a server the process still uses.
So the server is always forked from one thread that lives as long as the process. Prefect calls
`subprocess.Popen` through its module's `subprocess` name, and only for that server; that name is
pointed at a stand-in whose `Popen` does the above. SIGKILL rather than SIGTERM: nobody is left to
serve, and uvicorn's graceful stop can wait for ever; Prefect's own exit hook still stops it
gracefully on a normal exit.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

PR_SET_PDEATHSIG = 1  # linux/prctl.h


class _Spawner:
    """One daemon thread that forks every child handed to it, and never ends before the process."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="formwork-prefect-spawner", daemon=True)
        self._thread.start()

    def run(self, job: Callable[[], Any]) -> Any:
        done: Future[Any] = Future()
        self._jobs.put((job, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            job, done = self._jobs.get()
            try:
                done.set_result(job())
            except BaseException as exc:  # handed back to the caller's thread
                done.set_exception(exc)


class _TiedSubprocess:
    """`subprocess` as Prefect's server module sees it: `Popen` ties the child to this process."""

    def __init__(self) -> None:
        self._prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here, never in the child
        self._spawner = _Spawner()

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    def Popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[Any]:  # named as subprocess names it
        parent, prctl = os.getpid(), self._prctl

        def die_with_parent() -> None:  # runs in the child, between fork and exec
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:  # the parent died before the request was made
                os.kill(os.getpid(), signal.SIGKILL)

        return self._spawner.run(lambda: subprocess.Popen(*args, preexec_fn=die_with_parent, **kwargs))


def tie_ephemeral_server() -> None:
    """When this process will start Prefect's ephemeral server, make it die with this process.

    Nothing to do when a Prefect API is configured (no server is started here); Prefect's server
    module, slow to import, is imported only when this process would start the server anyway.
    """
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return
    from prefect.server.api import server

    if not isinstance(server.subprocess, _TiedSubprocess):
        server.subprocess = _TiedSubprocess()  # type: ignore[assignment]
