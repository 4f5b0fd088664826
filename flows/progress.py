"""Per-record progress for whoever is watching (the CLI's progress bar), without touching Prefect.

Record outcomes live in the database; this only tells a listener in the same process that one more
record is done, so a long run shows movement between chunk commits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[str], None]  # receives the record's status
_listeners: list[Listener] = []
_lock = threading.Lock()


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def record_done(status: str) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(status)
