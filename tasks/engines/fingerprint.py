"""The formatting model's identity for a calibration: its name, and for a model file its content hash.

Two different files may share a name (every fine-tune saved as `model.gguf`), and a calibration holds
for the probabilities of one set of weights, so an embedded model is known by the sha256 of its GGUF
file. Hashing a gigabyte takes seconds, so the digest is cached by path, size and modification time:
computed once per file version, again only when the file changes. A served model (vLLM, an
OpenAI-compatible server) is known by the name it serves under: no file to hash, so None.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from formwork.tasks.engines.base import Engine

CHUNK = 1 << 20


@cache
def _digest(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of the file as it was at (size, mtime_ns); those two are only the cache key."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def file_hash(path: Path) -> str:
    """The sha256 of `path`, computed once per (path, size, mtime)."""
    stat = path.stat()
    return _digest(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


def model_hash(engine: Engine) -> str | None:
    """The content hash of the engine's model file (embedded engine), None for a served model."""
    path = getattr(engine, "model_path", None)
    return file_hash(Path(path)) if path else None
