"""`formwork retry --set` never stores a secret in Prefect, and server URLs carry no userinfo.

Issue 20 point 12: `--set vllm_api_key=…`, or `--set vllm_url=` with a password, was stored as a
Prefect flow parameter, and a URL's `user:password@` made httpx send Basic auth instead of the
configured Bearer key. Issue 28: the same held for the `openai` engine's key and URL, because the
secret settings were a list by name; now they are every `SecretStr` field of `Settings`.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from formwork.flows.cli import app
from formwork.flows.reprocess_failed import reprocess_failed, secret_overrides
from formwork.tasks.engines import open_openai_server
from formwork.tasks.redact import redact
from formwork.tasks.settings import Settings
from tests.misbehaving_server import MisbehavingServer

KEY, PASSWORD = "sk-Ov3rride-key-77", "Url-pa/ss-88"


def test_server_urls_lose_their_userinfo_in_the_settings() -> None:
    settings = Settings(vllm_url=f"http://u:{PASSWORD}@gpu-1:8000/v1, http://gpu-2:8000/v1",
                        vllm_format_url="https://token@fmt.internal/v1")  # fmt: skip
    assert settings.vllm_url == "http://gpu-1:8000/v1,http://gpu-2:8000/v1"
    assert settings.vllm_format_url == "https://fmt.internal/v1"
    assert Settings(vllm_url="http://127.0.0.1:8011/v1").vllm_url == "http://127.0.0.1:8011/v1"
    assert Settings(openai_url=f"http://u:{PASSWORD}@gpu-3:8080/v1").openai_url == "http://gpu-3:8080/v1"
    assert PASSWORD in Settings(db_url=f"postgresql://u:{PASSWORD}@db/x").db_url  # the database's own


def test_every_secretstr_setting_is_secret_without_a_list() -> None:
    assert {"vllm_api_key", "openai_api_key"} <= Settings.secret_fields()
    assert "vllm_api_key_file" not in Settings.secret_fields() and "db_url" not in Settings.secret_fields()
    assert list(secret_overrides({"openai_api_key": KEY, "openai_model": "m"})) == ["openai_api_key"]
    Settings(openai_api_key="sk-read-once-31")  # read once: masked in every later message and stored error
    assert redact("the server said: bad key sk-read-once-31") == "the server said: bad key ***"


def test_the_openai_server_receives_the_api_key_not_the_urls_password() -> None:
    with MisbehavingServer() as fake:
        url = fake.base_url.replace("http://", f"http://admin:{PASSWORD}@")
        settings = Settings(engine="openai", openai_url=url, openai_api_key=KEY, openai_dialect="json_schema",
                            calibration=False)  # fmt: skip
        engine = open_openai_server(settings, settings.openai_url)
        try:
            engine.check()
        finally:
            engine.close()
    sent = {r["headers"].get("Authorization") for r in fake.requests}
    assert sent == {f"Bearer {KEY}"}, sent


def test_the_flow_refuses_secret_overrides_before_anything_runs() -> None:
    assert secret_overrides({"vllm_api_key": KEY, "reasoning_max_tokens": "9"}) == {"vllm_api_key": KEY}
    assert list(secret_overrides({"vllm_url": f"http://u:{PASSWORD}@gpu/v1"})) == ["vllm_url"]
    with pytest.raises(ValueError, match=r"overrides \['vllm_api_key'\] must not be flow parameters"):
        reprocess_failed.fn(overrides={"vllm_api_key": KEY})


def test_retry_set_passes_secrets_through_the_environment(prefect_harness, db_url) -> None:
    from prefect.client.orchestration import get_client

    url = f"http://u:{PASSWORD}@127.0.0.1:1/v1"
    args = ["retry", "--db", db_url, "--set", f"vllm_api_key={KEY}", "--set", f"vllm_url={url}",
            "--set", f"openai_api_key={KEY}-openai", "--set", f"openai_url={url}",
            "--set", "reasoning_max_tokens=99"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "nothing due in the retry queue" in result.output
    with get_client(sync_client=True) as client:
        runs = [r for r in client.read_flow_runs() if r.parameters.get("overrides") is not None]
    stored = json.dumps([r.parameters for r in runs])
    assert runs and KEY not in stored and PASSWORD not in stored
    assert any(r.parameters["overrides"] == {"reasoning_max_tokens": "99"} for r in runs)
    refused = CliRunner().invoke(app, ["retry", "--db", db_url, "--set", "no_such_setting=1"])
    assert refused.exit_code == 2 and "no_such_setting" in refused.output
