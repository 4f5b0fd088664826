"""Who a queue worker is (`host:pid`), and which workers of this host are gone, so that the entries they
claimed are put back at once instead of after `claim_timeout_s` (flows.reprocess_failed)."""

from __future__ import annotations

import os
import socket


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def dead_here(workers: set[str], own: str) -> set[str]:
    """Of `workers` (named `host:pid`, worker_name), those of this host whose process is gone.

    A pid another process has since taken looks alive: that worker is then found dead by its heartbeat,
    a run lease later (db.claims.mark_crashed), as a worker of another host always is."""
    host = socket.gethostname()
    gone = set()
    for name in workers - {own}:
        where, _, pid = name.rpartition(":")
        if where == host and pid.isdigit() and not _alive(int(pid)):
            gone.add(name)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (PermissionError): alive
        return True
    return True
