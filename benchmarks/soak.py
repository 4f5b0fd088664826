"""Soaks on PostgreSQL: every record one result, every paid call stored once, no claim left behind.

Issue 54's definition of done asks that review 5's soaks still hold after this round changed how calls
are stored (each answered call is written within about a second of its answer by db/writer.py's
`EarlyCalls`, then updated when its record's result is stored), SIGTERM handling and the queue. This
script reproduces two of them with real parts except the model:

- `outage`: N records, W real `formwork run` processes on the same input and the same PostgreSQL
  database (docs/production.md: two workers given one source split it through record claims), the
  database stopped for `--down-s` seconds once half the results are stored, then started again
  (tests/postgres_fixture.py's `OwnServer`, the project's own throwaway server);
- `memory`: N records in one `formwork run`, its resident memory sampled every 0.5 s.

The model is a stand-in: tests/misbehaving_server.py's OpenAI-style server in mode "ok", answering the
start-up probe and then one valid chat_tag reply to every call, at once. A real model cannot read
thousands of records in minutes on two cores, and what is under test is the storing, not the reading.
The server counts the calls it answered (the calls paid for); the database is then asked what it kept.

    nice -n 10 .venv/bin/python benchmarks/soak.py outage --records 2000 --workers 2 --down-s 17
    nice -n 10 .venv/bin/python benchmarks/soak.py memory --records 10000

Exits 1 when a count does not hold (a record without exactly one result, calls made != calls stored, a
call stored twice, a claim left, a run not finished).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine.url import make_url

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.misbehaving_server import MisbehavingServer
from tests.postgres_fixture import SCRIPTS, OwnServer, _let_postgres_in

REPLY = '{"speaker":null,"emotion":"happy","reply":"Great!"}'  # a valid chat_tag row
PROBE = '{"answer":"yes"}'  # the engine's start-up probe: an enum it must stay inside


class CountingServer(MisbehavingServer):
    """The misbehaving server in mode "ok", answering the probe as the probe and every other call with a
    chat_tag row; it counts the chat calls it answered instead of keeping every request."""

    def __init__(self) -> None:
        super().__init__("ok")
        self.requests = deque(maxlen=20)  # type: ignore[assignment]  # bounded: thousands of calls
        self.calls = 0
        self.probes = 0
        self._count = threading.Lock()

    def answer(self, path: str, body: dict[str, Any] | None) -> tuple[int, str]:
        if path != "/v1/chat/completions":
            return super().answer(path, body)
        probe = '"answer"' in json.dumps(
            (body or {}).get("response_format") or (body or {}).get("structured_outputs")
        )
        with self._count:
            if probe:
                self.probes += 1
            else:
                self.calls += 1
        self.content = PROBE if probe else REPLY
        return super().answer(path, body)


def _query(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one query on a plain connection of its own; [] while the server is down or unmigrated."""
    parsed = make_url(url)
    try:
        with psycopg.connect(host=parsed.host, port=parsed.port, user=parsed.username, dbname=parsed.database,
                             connect_timeout=2) as connection:  # fmt: skip
            return connection.execute(sql).fetchall()
    except psycopg.Error:
        return []


def _count(url: str, sql: str) -> int:
    rows = _query(url, sql)
    return int(rows[0][0]) if rows else 0


def _postgres() -> OwnServer:
    """A PostgreSQL server of the soak's own, started (deploy/postgres/install.sh finds or installs it)."""
    installed = subprocess.run(
        ["bash", str(SCRIPTS / "install.sh")], capture_output=True, text=True, check=True
    )
    root = Path(tempfile.mkdtemp(prefix="formwork-soak-pg-"))
    _let_postgres_in(root, root)
    server = OwnServer(Path(installed.stdout.strip().splitlines()[-1]), root)
    server.start()
    return server


def _input(folder: Path, records: int) -> Path:
    """N distinct chat lines (distinct texts: each is its own record)."""
    path = folder / "input.jsonl"
    with path.open("w") as handle:
        for i in range(records):
            handle.write(
                json.dumps({"id": f"r{i}", "text": f"Thanks so much, that made my day! (message {i})"})
            )
            handle.write("\n")
    return path


def _env(folder: Path, base_url: str, name: str) -> dict[str, str]:
    """The stand-in server as a vLLM engine, two-pass (two calls a record), calibration off (a sure row is
    ok: the storing is under test), each worker with its own ephemeral Prefect API."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("FORMWORK_", "PREFECT_"))}
    return env | {
        "FORMWORK_CONFIG": str(folder / "no-formwork.toml"), "FORMWORK_ENGINE": "vllm",
        "FORMWORK_VLLM_URL": base_url, "FORMWORK_VLLM_MODEL": "fake-model", "FORMWORK_MODE": "two-pass",
        "FORMWORK_CALIBRATION": "false", "FORMWORK_MAX_ATTEMPTS": "1",
        "PREFECT_HOME": str(folder / f"prefect-{name}"),
    }  # fmt: skip


def _start(folder: Path, source: Path, url: str, base_url: str, name: str, chunk: int) -> subprocess.Popen:
    formwork = Path(sys.executable).with_name("formwork")
    command = ["nice", "-n", "10", str(formwork), "run", str(source), "--schema", "chat_tag", "--db", url,
               "--chunk-size", str(chunk), "--wait"]  # fmt: skip
    log = (folder / f"{name}.log").open("w")
    env = _env(folder, base_url, name)
    return subprocess.Popen(
        command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
    )


def _outage(server: OwnServer, url: str, at: int, down_s: float, said: dict[str, float]) -> threading.Thread:
    """Stop the database once `at` results are stored, start it `down_s` later."""

    def run() -> None:
        while _count(url, "SELECT count(*) FROM results") < at:
            time.sleep(0.2)
        server.stop()
        said["stopped"] = time.monotonic()
        time.sleep(down_s)
        server.start()
        said["down_s"] = time.monotonic() - said["stopped"]

    thread = threading.Thread(target=run, name="outage", daemon=True)
    thread.start()
    return thread


class Peak:
    """The resident memory of one process, sampled every 0.5 s: (seconds since start, MB) pairs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.samples = pid, []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        start = time.monotonic()
        status = Path(f"/proc/{self.pid}/status")
        while True:
            try:
                line = next(x for x in status.read_text().splitlines() if x.startswith("VmRSS:"))
            except (OSError, StopIteration):
                return
            self.samples.append((time.monotonic() - start, int(line.split()[1]) / 1024))
            time.sleep(0.5)


def _worker_pid(nice: subprocess.Popen) -> int:
    """`nice` execs formwork in place, so the Popen's pid is the worker's."""
    return nice.pid


def _writes(url: str, table: str) -> list[int]:
    """Rows the server counted written to `table` (pg_stat_user_tables, kept across a fast restart): what
    storing each call early and updating it with its result costs."""
    time.sleep(1.5)  # the backends flush their counts at most once a second
    query = f"SELECT n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables WHERE relname = '{table}'"
    rows = _query(url, query)
    return list(rows[0]) if rows else []


def _tally(url: str, records: int, made: int) -> dict[str, Any]:
    """What the database kept, against what was made."""
    twice = "SELECT 1 FROM model_calls GROUP BY record_id, run_id, pass_name, attempt HAVING count(*) > 1"
    duplicates = _count(url, f"SELECT count(*) FROM ({twice}) AS d")
    return {
        "records": _count(url, "SELECT count(*) FROM records"),
        "input records": records,
        "results": _count(url, "SELECT count(*) FROM results"),
        "records with one result": _count(
            url,
            "SELECT count(*) FROM (SELECT record_id FROM results "
            "GROUP BY record_id HAVING count(*) = 1) AS one",
        ),
        "records without a result": _count(
            url, "SELECT count(*) FROM records WHERE id NOT IN (SELECT record_id FROM results)"
        ),
        "calls made (server)": made,
        "calls stored (model_calls)": _count(url, "SELECT count(*) FROM model_calls"),
        "calls stored twice (record, run, pass, attempt)": duplicates,
        "records paid by more than one run": _count(
            url,
            "SELECT count(*) FROM (SELECT record_id FROM model_calls "
            "GROUP BY record_id HAVING count(DISTINCT run_id) > 1) AS m",
        ),
        "claims left": _count(url, "SELECT count(*) FROM record_claims"),
        "model_calls rows inserted / updated / deleted": _writes(url, "model_calls"),
        "results rows inserted / updated / deleted": _writes(url, "results"),
        "statuses": dict(_query(url, "SELECT status, count(*) FROM results GROUP BY status")),
        "runs": [
            f"{run_id} {state}" for run_id, state in _query(url, "SELECT id, state FROM runs ORDER BY id")
        ],
    }


def _held(tally: dict[str, Any], records: int) -> list[str]:
    """Each count that does not hold, in words."""
    wrong = []
    if not tally["records"] == tally["results"] == tally["records with one result"] == records:
        wrong.append("not every record has exactly one result")
    if tally["calls made (server)"] != tally["calls stored (model_calls)"]:
        wrong.append("calls made != calls stored")
    if tally["calls stored twice (record, run, pass, attempt)"]:
        wrong.append("a call stored twice")
    if tally["claims left"]:
        wrong.append("claims left")
    if any(not run.endswith(" finished") for run in tally["runs"]):
        wrong.append("a run not finished")
    return wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("soak", choices=["outage", "memory"])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument(
        "--workers", type=int, default=2, help="outage: `formwork run` processes on one input"
    )
    parser.add_argument("--down-s", type=float, default=17.0, help="outage: seconds the database is down")
    parser.add_argument("--chunk-size", type=int, default=100)
    parser.add_argument("--keep", action="store_true", help="keep the logs folder (printed)")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="formwork-soak-"))
    source = _input(folder, args.records)
    server = _postgres()
    url = server.url
    said: dict[str, float] = {}
    peak: Peak | None = None
    try:
        with CountingServer() as model:
            workers = args.workers if args.soak == "outage" else 1
            began = time.monotonic()
            outage = (
                _outage(server, url, args.records // 2, args.down_s, said) if args.soak == "outage" else None
            )
            processes = []
            for i in range(workers):
                processes.append(
                    _start(folder, source, url, model.base_url, f"worker{i + 1}", args.chunk_size)
                )
                if args.soak == "memory":
                    peak = Peak(_worker_pid(processes[-1]))
            codes = [process.wait() for process in processes]
            wall = time.monotonic() - began
            if outage is not None:
                outage.join(timeout=120)
            tally = _tally(url, args.records, model.calls)
            tally |= {
                "probe calls (not counted)": model.probes,
                "exit codes": codes,
                "wall s": round(wall, 1),
            }
            if said:
                tally["database down s"] = round(said.get("down_s", -1), 1)
            if peak is not None and peak.samples:
                rss = [mb for _, mb in peak.samples]
                quarter = [rss[int(len(rss) * q)] for q in (0.25, 0.5, 0.75)] + [rss[-1]]
                tally["worker RSS MB peak"] = round(max(rss))
                tally["worker RSS MB at 1/4, 1/2, 3/4, end"] = [round(mb) for mb in quarter]
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)
    for key, value in tally.items():
        print(f"{key}: {value}")
    wrong = _held(tally, args.records)
    if outage is not None and "down_s" not in said:
        wrong.append("the database was never stopped under the runs")
    print(f"logs: {folder}" if args.keep or wrong else "")
    if not (args.keep or wrong):
        shutil.rmtree(folder, ignore_errors=True)
    if wrong:
        print("DOES NOT HOLD: " + "; ".join(wrong))
        sys.exit(1)
    print("held")


if __name__ == "__main__":
    main()
