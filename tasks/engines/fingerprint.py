"""The formatting model's identity for a calibration: its name, and for a model file its content hash.

Two different files may share a name (every fine-tune saved as `model.gguf`), and a calibration holds
for the probabilities of one set of weights, so an embedded model is known by the sha256 of its GGUF
file. Hashing a gigabyte takes seconds, so the digest is cached per file version: by path, device,
inode, size, modification and change time. Size and mtime alone were not enough: a file copied over
the old one with its mtime kept (`cp -p`, `rsync -t`, an unpacked archive) matched them and reused the
old hash in a long-lived worker. A rename over the path gives a new inode, and any write or `utime`
moves the ctime, which no user can set back. A served model (vLLM, an OpenAI-compatible server) has no
file to hash: it is known by the name it serves under and what the server reports of the weights
behind it (vLLM's `root`, the path they were loaded from), where it reports anything.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from formwork.tasks.engines.base import Engine

CHUNK = 1 << 20


@cache
def _digest(path: str, version: tuple[int, ...]) -> str:
    """sha256 of the file; `version` (its stat: device, inode, size, mtime, ctime) is only the cache key."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def file_hash(path: Path) -> str:
    """The sha256 of `path`, computed once per version of the file (the module docstring)."""
    stat = path.stat()
    version = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    return _digest(str(path.resolve()), version)


def model_hash(engine: Engine) -> str | None:
    """The content hash of the engine's model file (embedded engine); for a served model, a hash of what
    its server reports of the weights (`http_base.served_identity`; one for a replica set whose
    members agree), None where it reports nothing beyond the name."""
    path = getattr(engine, "model_path", None)
    if path:
        return file_hash(Path(path))
    members = getattr(engine, "replicas", None) or [engine]
    told = {getattr(member, "identity", None) for member in members}
    return told.pop() if len(told) == 1 else None
