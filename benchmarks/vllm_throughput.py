"""Throughput of the whole pipeline against a vLLM server, and what the framework costs on top of it.

For the same N short expense messages this measures, in one run:
  (a) records/s of the `batch_extract` flow at each concurrency (FORMWORK_VLLM_MAX_CONCURRENCY);
  (b) records/s of a bare httpx client (a thread pool of the same size) sending the same two requests
      per record (same prompts from tasks.prompts, same max tokens and sampling), and the ratio
      pipeline / bare (target >= 90%): what Prefect, validation and the database cost;
  (c) the formatting pass's wall time as a share of the reasoning pass's (sum of ModelCall.duration_s
      per pass; target <= 25%), with the tokens behind it, since the share follows the budgets.

Each pipeline run gets a fresh SQLite database in a temporary folder, one attempt per record (so the
pipeline makes exactly the bare client's two calls per record), and runs under a temporary Prefect API.
A bare run follows its pipeline run at once, so a ratio compares runs seconds apart.

vLLM caches prompt prefixes, and on a CPU the prompt costs as much as the answer, so a run that repeats
another's prompts would be measured cheap. Each concurrency level therefore tags its records
("[batch 4] ...", same length at every level) so levels share no prompt, and the bare client, which
sends exactly the pipeline's prompts, sends them with a `cache_salt` of its own: the pipeline's cached
prompts are invisible to it, while it still shares the system prompt among its own requests, as the
pipeline does.

    python benchmarks/vllm_throughput.py                    # starts the CPU server (as the tests do)
    python benchmarks/vllm_throughput.py --url http://127.0.0.1:8000/v1 --records 64

Prints a markdown table on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from formwork.db.models import ModelCall, Result
from formwork.db.session import session_factory
from formwork.flows.prefect_env import apply_defaults
from formwork.schemas.budget import format_budget
from formwork.schemas.registry import Schema, load_schema
from formwork.tasks.prompts import formatting_messages, reasoning_messages
from formwork.tasks.settings import Settings

REPO = Path(__file__).resolve().parents[1]
log = logging.getLogger("vllm_throughput")
PEOPLE = ["Maria", "Tom", "Priya", "Lukas", "Chen", "Ana", "Ben", "Dara"]
ITEMS = [
    ("lunch with the client", "meals"),
    ("a taxi to the airport", "transport"),
    ("one night at the Ibis", "lodging"),
    ("a box of printer paper", "office"),
    ("the Figma subscription", "software"),
    ("train tickets to Lyon", "travel"),
]
MONEY = [("$", ""), ("", " EUR"), ("£", ""), ("", " CHF")]


def expense_texts(n: int) -> list[str]:
    """N short, varied, deterministic expense messages."""
    texts = []
    for i in range(n):
        who, (what, _), (before, after) = PEOPLE[i % 8], ITEMS[i % 6], MONEY[i % 4]
        amount = f"{12 + (i * 37) % 240}.{(i * 13) % 100:02d}"
        texts.append(f"{who} paid {before}{amount}{after} for {what} on 2024-0{1 + i % 9}-{10 + i % 18}.")
    return texts


def tagged(texts: list[str], tag: str) -> list[str]:
    """The same messages with a run's tag in front, so no run reuses another run's cached prompts."""
    return [f"[batch {tag}] {text}" for text in texts]


def write_jsonl(path: Path, texts: list[str], prefix: str) -> Path:
    path.write_text(
        "".join(json.dumps({"id": f"{prefix}{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    return path


# --- The server -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    url: str
    model: str
    started_here: bool


@contextmanager
def server(url: str | None, model: str | None) -> Iterator[Server]:
    """Use the server at `url`, or start the CPU server the way the test fixture does, and stop it."""
    if url:
        served = [m["id"] for m in httpx.get(f"{url.rstrip('/')}/models", timeout=10).json()["data"]]
        if model and model not in served:
            sys.exit(f"{url} does not serve {model!r}; it serves {served}")
        yield Server(url.rstrip("/"), model or served[0], False)
        return
    sys.path.insert(0, str(REPO))  # `tests` is no installed package
    from tests import vllm_fixture as fx  # the fixture's own helpers: convert once, launch, wait, stop

    model_dir = fx._model_dir()
    fx._ensure_model(model_dir)
    port = fx._free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log_path = Path(tempfile.mkdtemp(prefix="formwork-vllm-")) / "server.log"
    log.info("starting the CPU vLLM server on port %d (log %s), 1-2 minutes", port, log_path)
    with log_path.open("wb") as out:
        proc = subprocess.Popen(
            [
                "bash",
                str(REPO / "deploy" / "vllm" / "serve_cpu.sh"),
                str(model_dir),
                str(port),
                fx.MODEL_NAME,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        fx._wait_ready(proc, base_url, log_path, float(os.environ.get("FORMWORK_VLLM_START_TIMEOUT", "300")))
        yield Server(base_url, fx.MODEL_NAME, True)
    finally:
        fx._stop(proc)
    shutil.rmtree(log_path.parent)  # kept only when something failed


def server_version(url: str) -> str:
    try:
        return str(httpx.get(f"{url.removesuffix('/v1')}/version", timeout=10).json().get("version"))
    except (httpx.HTTPError, ValueError, AttributeError):
        return "unknown"


# --- One pipeline run, one bare run -----------------------------------------------------------------


@dataclass
class Measured:
    wall_s: float
    records: int
    load: float = 0.0  # 1-minute load average when the run started
    seconds: dict[str, float] = field(default_factory=dict)  # summed call durations per pass
    prompt_tokens: dict[str, int] = field(default_factory=dict)
    completion_tokens: dict[str, int] = field(default_factory=dict)
    finishes: Counter[str] = field(default_factory=Counter)  # "pass:finish"
    statuses: Counter[str] = field(default_factory=Counter)

    @property
    def per_s(self) -> float:
        return self.records / self.wall_s

    def add_call(self, pass_name: str, finish: str, prompt: int, completion: int, seconds: float) -> None:
        self.seconds[pass_name] = self.seconds.get(pass_name, 0.0) + seconds
        self.prompt_tokens[pass_name] = self.prompt_tokens.get(pass_name, 0) + prompt
        self.completion_tokens[pass_name] = self.completion_tokens.get(pass_name, 0) + completion
        self.finishes[f"{pass_name}:{finish}"] += 1


def configure(srv: Server, concurrency: int, reasoning_max_tokens: int, workdir: Path) -> Settings:
    """Point the settings at the server; everything else at its default, one attempt per record."""
    for name in Settings.model_fields:
        os.environ.pop(f"FORMWORK_{name.upper()}", None)
    os.environ.update(
        FORMWORK_CONFIG=str(workdir / "no-formwork.toml"),
        FORMWORK_ENGINE="vllm",
        FORMWORK_VLLM_URL=srv.url,
        FORMWORK_VLLM_MODEL=srv.model,
        FORMWORK_VLLM_MAX_CONCURRENCY=str(concurrency),
        FORMWORK_REASONING_MAX_TOKENS=str(reasoning_max_tokens),
        FORMWORK_MAX_ATTEMPTS="1",
    )
    return Settings()


def run_pipeline(source: Path, db_url: str) -> Measured:
    from formwork.flows.batch_extract import batch_extract

    session_factory(db_url)  # create and migrate the database before the clock starts, as in production
    load = os.getloadavg()[0]
    started = time.monotonic()
    summary = batch_extract(str(source), "expense", db_url=db_url)
    measured = Measured(time.monotonic() - started, summary.records, load)
    with session_factory(db_url)() as session:
        for call in session.scalars(select(ModelCall).where(ModelCall.run_id == summary.run_id)):
            measured.add_call(
                call.pass_name,
                call.finish_reason,
                call.prompt_tokens,
                call.completion_tokens,
                call.duration_s,
            )
        measured.statuses.update(
            session.scalars(select(Result.status).where(Result.run_id == summary.run_id)).all()
        )
    return measured


def bare_body(model: str, messages: list[dict[str, str]], max_tokens: int, **sampling: Any) -> dict[str, Any]:
    """The request the vLLM engine sends, written out by hand: same fields, same neutral values."""
    return {
        "model": model,
        "messages": messages,
        "max_completion_tokens": max_tokens,
        "top_p": 1.0,
        "top_k": -1,
        "min_p": 0.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        **sampling,
    }


def run_bare(srv: Server, schema: Schema, texts: list[str], settings: Settings, salt: str) -> Measured:
    """The same two requests per record from a plain thread pool: no Prefect, no validation, no DB."""
    concurrency = settings.vllm_max_concurrency
    format_tokens = settings.format_max_tokens or format_budget(schema.body)
    measured = Measured(0.0, len(texts), os.getloadavg()[0])
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    with httpx.Client(timeout=settings.vllm_timeout_s, limits=limits) as client:

        def post(body: dict[str, Any]) -> tuple[dict[str, Any], float]:
            started = time.monotonic()
            response = client.post(f"{srv.url}/chat/completions", json=body)
            response.raise_for_status()
            return response.json(), time.monotonic() - started

        def one(text: str) -> list[tuple[str, dict[str, Any], float]]:
            reasoning = bare_body(
                srv.model,
                reasoning_messages(schema, text),
                settings.reasoning_max_tokens,
                temperature=settings.reasoning_temperature,
                repetition_penalty=settings.reasoning_repetition_penalty,
                seed=1,  # the pipeline seeds attempt n with n
                cache_salt=salt,
            )
            notes, notes_s = post(reasoning)
            message = notes["choices"][0]["message"]
            notes_text = message.get("content") or message.get("reasoning") or ""
            formatting = bare_body(
                srv.model,
                formatting_messages(schema, text, notes_text),
                format_tokens,
                temperature=0.0,
                repetition_penalty=1.0,
                seed=0,
                structured_outputs={"json": schema.body},
                cache_salt=salt,
            )
            shaped, shaped_s = post(formatting)
            return [("reasoning", notes, notes_s), ("formatting", shaped, shaped_s)]

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            done = list(pool.map(one, texts))
        measured.wall_s = time.monotonic() - started
    for calls in done:
        for pass_name, reply, seconds in calls:
            usage = reply.get("usage") or {}
            finish = str(reply["choices"][0].get("finish_reason"))
            measured.add_call(
                pass_name, finish, usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0), seconds
            )
    return measured


# --- Report -------------------------------------------------------------------------------------------


def share(m: Measured) -> float:
    return m.seconds.get("formatting", 0.0) / m.seconds["reasoning"]


def ms_per_token(m: Measured, pass_name: str) -> float:
    return 1000 * m.seconds[pass_name] / max(1, m.completion_tokens[pass_name])


def report(args: argparse.Namespace, srv: Server, rows: list[tuple[int, Measured, Measured | None]]) -> str:
    lines = [
        f"vLLM {server_version(srv.url)} at {srv.url} serving `{srv.model}`"
        f" ({'started by this script' if srv.started_here else 'given by --url'});"
        f" {args.records} expense records, reasoning max_tokens {args.reasoning_max_tokens},"
        f" formatting max_tokens from the schema, one attempt per record;"
        f" {os.cpu_count()} CPUs, {platform.machine()}, load average before the run {args.load_before}.",
        "",
        "| concurrency | pipeline rec/s | bare rec/s | pipeline / bare | formatting / reasoning time"
        " | tokens out (reasoning / formatting) | ms per token out (reasoning / formatting)"
        " | statuses | formatting finishes | load at start (pipeline / bare) |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for concurrency, pipe, bare in rows:
        fmt_finishes = {k.split(":")[1]: v for k, v in pipe.finishes.items() if k.startswith("formatting:")}
        lines.append(
            f"| {concurrency} | {pipe.per_s:.3f} | {f'{bare.per_s:.3f}' if bare else '-'}"
            f" | {f'{pipe.per_s / bare.per_s:.0%}' if bare else '-'} | {share(pipe):.0%}"
            f" | {pipe.completion_tokens['reasoning']} / {pipe.completion_tokens.get('formatting', 0)}"
            f" | {ms_per_token(pipe, 'reasoning'):.0f} / {ms_per_token(pipe, 'formatting'):.0f}"
            f" | {json.dumps(dict(sorted(pipe.statuses.items())))}"
            f" | {json.dumps(dict(sorted(fmt_finishes.items())))}"
            f" | {pipe.load:.1f} / {f'{bare.load:.1f}' if bare else '-'} |"
        )
    compared = [(c, p, b) for c, p, b in rows if b]
    if compared:
        lines += ["", "Same work on both sides (the bare client's tokens beside the pipeline's):", ""]
        lines += ["| concurrency | prompt tokens pipeline / bare | completion tokens pipeline / bare |"]
        lines += ["|---:|---:|---:|"]
        for concurrency, pipe, bare in compared:
            lines.append(
                f"| {concurrency} | {sum(pipe.prompt_tokens.values())} / {sum(bare.prompt_tokens.values())}"
                f" | {sum(pipe.completion_tokens.values())} / {sum(bare.completion_tokens.values())} |"
            )
        ratios = [p.per_s / b.per_s for _, p, b in compared]
        lines += ["", f"Median pipeline / bare: {statistics.median(ratios):.0%} (target >= 90%)."]
    shares = [share(p) for _, p, _ in rows]
    lines += [f"Median formatting / reasoning time: {statistics.median(shares):.0%} (target <= 25%)."]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument(
        "--url", help="a running vLLM server's OpenAI base URL (ends in /v1); default: start one"
    )
    parser.add_argument("--model", help="served model name; default: the server's first")
    parser.add_argument("--records", type=int, default=32, help="expense records per run (default 32)")
    parser.add_argument("--reasoning-max-tokens", type=int, default=48, help="reasoning budget (default 48)")
    parser.add_argument(
        "--concurrency", default="1,2,4,8", help="comma-separated levels for the pipeline (default 1,2,4,8)"
    )
    parser.add_argument(
        "--bare",
        default="max",
        help="levels that also get a bare-client run: 'max' (default: the highest level), 'all', 'none', "
        "or a comma-separated list",
    )
    args = parser.parse_args(argv)
    args.levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    if args.bare == "max":
        args.bare_levels = {max(args.levels)}
    elif args.bare == "all":
        args.bare_levels = set(args.levels)
    elif args.bare == "none":
        args.bare_levels = set()
    else:
        args.bare_levels = {int(x) for x in args.bare.split(",") if x.strip()}
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress
    args.load_before = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    apply_defaults()  # before Prefect reads its settings
    from prefect.testing.utilities import prefect_test_harness

    from formwork.flows.prefect_env import without_heartbeat

    schema = load_schema("expense")
    texts = expense_texts(args.records)
    salt = f"bare-{time.time_ns()}"
    rows: list[tuple[int, Measured, Measured | None]] = []
    with tempfile.TemporaryDirectory(prefix="formwork-bench-") as tmp, server(args.url, args.model) as srv:
        workdir = Path(tmp)
        warmup = write_jsonl(workdir / "warmup.jsonl", tagged(texts[:2], "w"), "w")
        log.info("starting a temporary Prefect API")
        with prefect_test_harness(server_startup_timeout=180), without_heartbeat():
            configure(srv, 2, args.reasoning_max_tokens, workdir)
            log.info("warm-up run (2 records, not counted)")
            run_pipeline(warmup, f"sqlite:///{workdir / 'warmup.db'}")
            for concurrency in args.levels:
                settings = configure(srv, concurrency, args.reasoning_max_tokens, workdir)
                batch = tagged(texts, str(concurrency))
                source = write_jsonl(workdir / f"expenses-c{concurrency}.jsonl", batch, "e")
                pipe = run_pipeline(source, f"sqlite:///{workdir / f'c{concurrency}.db'}")
                log.info("concurrency %d: pipeline %.1f s (%.3f rec/s)", concurrency, pipe.wall_s, pipe.per_s)
                bare = None
                if concurrency in args.bare_levels:
                    bare = run_bare(srv, schema, batch, settings, f"{salt}-{concurrency}")
                    log.info("concurrency %d: bare %.1f s (%.3f rec/s)", concurrency, bare.wall_s, bare.per_s)
                rows.append((concurrency, pipe, bare))
        sys.stdout.write(report(args, srv, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
