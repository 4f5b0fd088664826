"""The engine checks of `formwork doctor` (flows.cli.doctor): the embedded engine's model file and a
schema-constrained probe, or each vLLM or OpenAI-compatible server's answer to its probe. A server is
asked, never changed; URL passwords never reach what a check found."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from formwork.flows.cli.doctor_checks import Check
from formwork.tasks.redact import redact

if TYPE_CHECKING:
    from formwork.tasks.settings import Settings


def model_check(settings: Settings) -> Check:
    """Which GGUF the embedded engine loads, its sha256 and whether it is installed. A catalogue model's
    file is hashed again and must still be the catalogue's (one changed after its install would read
    as another model, its shipped calibration lost); any other file's hash is computed here."""
    from formwork.tasks.engines.models import BUNDLED, CATALOGUE, changed, is_installed, model_file, reinstall

    if settings.local_model_path:
        path = settings.local_model_path
        if not path.is_file():
            return Check("model", "FAIL", f"local_model_path {path} is missing", "set it to a GGUF file")
        return Check("model", "ok", f"local_model_path {path}: sha256 {_sha256(path)}")
    name = settings.local_model or BUNDLED.name
    model = CATALOGUE.get(name)
    if model is None:
        return Check("model", "FAIL", f"unknown model {name!r}",
                     f"set local_model to one of {', '.join(CATALOGUE)} (formwork models)")  # fmt: skip
    if not is_installed(model):
        fix = "reinstall Formwork (make install)" if model.bundled else f"run formwork models install {name}"
        return Check("model", "FAIL", f"{name}: not installed", fix)
    if (why := changed(model, model_file(model))) is not None:
        return Check("model", "FAIL", f"{name} changed since its install: {why}", reinstall(model))
    found = f"{name} ({model.title}), installed at {model_file(model)}; sha256 {model.sha256} (checked)"
    return Check("model", "ok", found)


def _sha256(path: Path) -> str:
    import hashlib

    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def local_engine_check(settings: Settings) -> Check:
    """The model file, the two native imports, then a load and a 16-token schema-constrained probe."""
    import json

    from formwork.tasks.engines import local_model_file, open_engines
    from formwork.tasks.engines.base import EngineError, Sampling
    from formwork.tasks.engines.http_base import PROBE_SCHEMA
    from formwork.tasks.engines.local import bundled_model_path

    try:
        path = local_model_file(settings) or bundled_model_path()
    except (FileNotFoundError, EngineError) as exc:
        return Check("engine local", "FAIL", "no model file", str(exc))
    if not path.is_file():
        return Check("engine local", "FAIL", f"{path} is missing", "set FORMWORK_LOCAL_MODEL_PATH to a GGUF")
    missing = [name for name in ("llama_cpp", "xgrammar") if importlib.util.find_spec(name) is None]
    if missing:
        return Check("engine local", "FAIL", f"not installed: {', '.join(missing)}",
                     "pip install 'formwork[local]' (see deploy/local/build_llama_wheel.sh)")  # fmt: skip
    try:
        engine, _ = open_engines(settings)
        probe = engine.complete([{"role": "user", "content": "Is water wet?"}], Sampling(16), PROBE_SCHEMA)
        answer = json.loads(probe.text).get("answer")
    except Exception as exc:  # any failure to load or decode is the finding itself
        return Check("engine local", "FAIL", f"{path.name}: {redact(str(exc))}", "check the GGUF file")
    if answer not in ("yes", "no"):
        return Check("engine local", "FAIL", f"probe answered {probe.text[:80]!r}", "reinstall xgrammar")
    return Check("engine local", "ok", f"{path.name} loaded; schema-constrained probe answered {answer!r}")


def vllm_checks(s: Settings) -> list[Check]:
    """Each distinct server: served models, version, and the structured-output probe (check())."""
    from formwork.tasks.engines.base import EngineError
    from formwork.tasks.engines.vllm_server import VllmServerEngine

    servers = {(s.vllm_url, s.vllm_model): "reasoning"}
    formatting = (s.vllm_format_url or s.vllm_url, s.vllm_format_model or s.vllm_model)
    servers[formatting] = "reasoning + formatting" if formatting in servers else "formatting"
    checks = []
    for (url, model), role in servers.items():
        name = f"engine vllm ({role})"
        try:
            key = s.api_key()
            engine = VllmServerEngine(url, model, timeout_s=min(s.vllm_timeout_s, 30.0), api_key=key)
        except ValueError as exc:
            checks.append(Check(name, "FAIL", redact(str(exc)), "fix FORMWORK_VLLM_API_KEY_FILE"))
            continue
        try:
            info = engine.check()
        except EngineError as exc:
            fix = exc.hint or "start the server (deploy/vllm/serve_gpu.sh) or correct FORMWORK_VLLM_URL"
            if "is the server running" in fix:
                setting = "FORMWORK_VLLM_FORMAT_URL" if role == "formatting" else "FORMWORK_VLLM_URL"
                fix = f"start vLLM at {redact(url)} (deploy/vllm/serve_gpu.sh) or correct {setting}"
            checks.append(Check(name, "FAIL", redact(exc.message), redact(fix)))
            continue
        finally:
            engine.close()
        found = f"{info.base_url}: vLLM {info.version}, model {info.model}, structured outputs enforced"
        checks.append(Check(name, "ok", found))
    return checks


def openai_checks(s: Settings) -> list[Check]:
    """Each server of the openai engine: the dialect it speaks, its probe, and its logprob mode."""
    from formwork.tasks.engines import open_openai_server, openai_urls
    from formwork.tasks.engines.base import EngineError

    checks = []
    for url in openai_urls(s):
        engine = open_openai_server(s, url, timeout_s=min(s.vllm_timeout_s, 30.0))
        name = f"engine openai ({redact(url)})"
        try:
            info = engine.check()
        except EngineError as exc:
            found = f"dialect {engine.dialect}: probe refused: {redact(exc.message)}"
            fix = redact(exc.hint or "start the server or correct FORMWORK_OPENAI_URL")
            checks.append(Check(name, "FAIL", found, fix))
            continue
        finally:
            engine.close()
        found = f"model {info.model}; dialect {info.dialect}; probe constrained; logprobs {info.logprob_mode}"
        found += f"; control tokens: {info.control_tokens}"
        checks.append(Check(name, "ok", found))
    return checks
