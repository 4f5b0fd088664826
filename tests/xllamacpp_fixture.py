"""Pytest plugin: llama.cpp's own server (llama-server's C++ HTTP API, from the xllamacpp wheel) on the
bundled GGUF.

Loaded from tests/conftest.py. The session fixture `llamacpp_server` starts deploy/xllamacpp/serve.py
with the server's own venv (deploy/xllamacpp/install.sh; default ~/.cache/formwork/xllamacpp-venv) on a
free loopback port, one thread, waits for `/v1/models` (about two seconds), and stops its process group
at the end. If it cannot start, the fixture FAILS with the tail of its log; it never skips.

Environment:
    FORMWORK_LLAMACPP_SERVER_URL   use this running llama-server instead of starting one
    FORMWORK_XLLAMACPP_VENV        the server's venv
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llama_server_fixture import MODEL_ALIAS, _gguf, serve_until_ready
from tests.vllm_fixture import VllmServer, _free_port, _served

SERVE = Path(__file__).resolve().parents[1] / "deploy" / "xllamacpp" / "serve.py"


@pytest.fixture(scope="session")
def llamacpp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    given = os.environ.get("FORMWORK_LLAMACPP_SERVER_URL")
    if given:
        yield VllmServer(given.rstrip("/"), _served(given.rstrip("/"))[0], None)
        return
    venv = Path(os.environ.get("FORMWORK_XLLAMACPP_VENV", "~/.cache/formwork/xllamacpp-venv")).expanduser()
    if not (venv / "bin" / "python").exists():
        pytest.fail(f"no xllamacpp venv at {venv}: run deploy/xllamacpp/install.sh {venv} (or make test)")
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path_factory.mktemp("llamacpp-server") / "server.log"
    command = [str(venv / "bin" / "python"), str(SERVE), "--model", str(_gguf()), "--host", "127.0.0.1",
               "--port", str(port), "--ctx", "4096", "--threads", "1", "--alias", MODEL_ALIAS]  # fmt: skip
    yield from serve_until_ready(command, base_url, log, "llama.cpp server (xllamacpp)", limit_s=60)
