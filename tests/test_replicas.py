"""Several vLLM replicas as one engine: the real CPU server beside a dead address, and two fault
injectors for what no real server does on cue (answering slowly in parallel, dying mid-batch)."""

from __future__ import annotations

import socket
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from formwork.tasks.engines import open_engines
from formwork.tasks.engines.base import EngineUnavailable, RequestRejected, Sampling
from formwork.tasks.engines.replicas import ReplicaSet
from formwork.tasks.engines.vllm_server import VllmServerEngine
from formwork.tasks.settings import Settings
from tests.misbehaving_server import MisbehavingServer
from tests.vllm_fixture import VllmServer

PROBE = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"],
         "additionalProperties": False}  # fmt: skip


def _dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # closed once the probe is: connection refused


def _record(i: int, turn: str | None = None) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "Label."}, {"role": "user", "content": f"record {i}"}]
    return messages + ([{"role": "assistant", "content": "notes"}, {"role": "user", "content": turn}]
                       if turn else [])  # fmt: skip


def _servers_hit(*fakes: MisbehavingServer) -> list[int]:
    return [sum(r["path"] == "/v1/chat/completions" for r in fake.requests) for fake in fakes]


@pytest.mark.vllm
def test_a_dead_replica_is_set_aside_and_the_real_server_answers(vllm_server: VllmServer) -> None:
    settings = Settings(engine="vllm", vllm_url=f"{_dead_url()},{vllm_server.base_url}",
                        vllm_model=vllm_server.model, vllm_timeout_s=120)  # fmt: skip
    reasoner, formatter = open_engines(settings)
    assert isinstance(reasoner, ReplicaSet) and reasoner is formatter
    try:
        found = reasoner.check()
        assert any("set aside" in line for line in found) and len(found) == 2
        done = reasoner.complete(_record(1), Sampling(16), PROBE)
        assert done.finish_reason == "stop" and done.text.startswith('{"answer"')
        assert reasoner.count_tokens("Taxi 20 EUR") > 0 and reasoner.context_window
    finally:
        reasoner.close()


def test_requests_go_to_the_least_loaded_replica_and_a_record_stays_on_its_own() -> None:
    with MisbehavingServer("sleep", sleep_s=0.3) as a, MisbehavingServer("sleep", sleep_s=0.3) as b:
        replicas = ReplicaSet([VllmServerEngine(a.base_url, "fake-model", max_concurrency=4),
                               VllmServerEngine(b.base_url, "fake-model", max_concurrency=4)])  # fmt: skip
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: replicas.complete(_record(i), Sampling(4)), range(8)))
        assert _servers_hit(a, b) == [4, 4]  # eight at once: four each
        for i in range(8):  # each record's formatting call follows its reasoning call
            replicas.complete(_record(i, "Now the JSON."), Sampling(4))
        seen = [Counter(r["body"]["messages"][1]["content"] for r in fake.requests if r.get("body"))
                for fake in (a, b)]  # fmt: skip
        assert all(sorted((seen[0][f"record {i}"], seen[1][f"record {i}"])) == [0, 2] for i in range(8))
        replicas.close()


def test_a_replica_dying_mid_batch_costs_its_records_nothing() -> None:
    with MisbehavingServer("ok") as healthy, MisbehavingServer("ok") as dying:
        servers = [VllmServerEngine(f.base_url, "fake-model", max_concurrency=2) for f in (dying, healthy)]
        replicas = ReplicaSet(servers)
        assert replicas.complete(_record(0), Sampling(4)).finish_reason == "stop"
        dying.mode = "500"  # the server now fails every request
        answers = [replicas.complete(_record(i), Sampling(4)) for i in range(1, 6)]
        assert all(a.finish_reason == "stop" for a in answers)
        assert _servers_hit(dying)[0] <= 2  # tried once, then set aside for the cool-down
        healthy.mode = "500"
        with pytest.raises(EngineUnavailable, match="every replica failed"):
            replicas.complete(_record(9), Sampling(4))
        replicas.close()


@pytest.mark.slow
def test_a_global_limit_bounds_requests_in_flight_across_runs(prefect_harness) -> None:
    from prefect.client.orchestration import get_client

    from formwork.tasks.engines.limited import GloballyLimited, limit_name

    with MisbehavingServer("sleep", sleep_s=0.5) as fake:
        assert limit_name(fake.base_url.replace("://", "://ops:secret@")) == limit_name(fake.base_url)
        runs = [GloballyLimited(VllmServerEngine(fake.base_url, "fake-model", max_concurrency=4), 2)
                for _ in range(2)]  # two runs' engines, four requests in flight each  # fmt: skip
        runs[0].check()
        started = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: runs[i % 2].complete(_record(i), Sampling(4)), range(6)))
        elapsed = time.perf_counter() - started
        with get_client(sync_client=True) as client:
            limit = client.read_global_concurrency_limit_by_name(limit_name(fake.base_url))
    assert limit.limit == 2 and _servers_hit(fake) == [1 + 6]  # the start-up probe, then six
    assert elapsed >= 3 * 0.5 * 0.95  # six 0.5 s requests, two at a time: at least three rounds


@pytest.mark.vllm
def test_replicas_serving_different_models_are_refused(vllm_server: VllmServer) -> None:
    with MisbehavingServer("ok") as other:  # answers the probe, but serves "fake-model"
        replicas = ReplicaSet([VllmServerEngine(vllm_server.base_url, None, timeout_s=120),
                               VllmServerEngine(other.base_url, None, timeout_s=5)])  # fmt: skip
        with pytest.raises(RequestRejected, match="replicas serve different models") as caught:
            replicas.check()
        assert vllm_server.model in str(caught.value) and "fake-model" in str(caught.value)
        replicas.close()


def test_a_replica_set_aside_at_start_up_is_probed_before_it_rejoins() -> None:
    with MisbehavingServer("500") as late, MisbehavingServer("ok") as healthy:
        replicas = ReplicaSet([VllmServerEngine(late.base_url, "fake-model", max_concurrency=2),
                               VllmServerEngine(healthy.base_url, "fake-model", max_concurrency=2)],
                              cooldown_s=0.0)  # fmt: skip
        assert any("set aside" in line for line in replicas.check())
        late.mode = "ignore_schema"  # it comes back, but no longer constrains its output
        answers = [replicas.complete(_record(i), Sampling(16), PROBE) for i in range(12)]
        assert all(a.text == '{"answer":"yes"}' for a in answers)  # not one free-text answer
        late_chats = [r for r in late.requests if r["path"] == "/v1/chat/completions"]
        assert len(late_chats) == 2  # the start-up probe (500) and the probe that refused it
        assert _servers_hit(healthy) == [1 + 12]
        replicas.close()
