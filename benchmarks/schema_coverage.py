"""How many real-world JSON Schemas Formwork accepts, and whether it ever promises what it cannot keep.

The schemas are read from where pip installed them (nothing third-party is committed):

    pip install --no-deps --target /tmp/fw-schemas cfn-lint check-jsonschema jupyterlab nbformat
    python benchmarks/schema_coverage.py /tmp/fw-schemas [--cfn-every 19] [--jsonl out.jsonl]
    python benchmarks/schema_coverage.py /tmp/fw-schemas --real-vocab out.jsonl --files A.json B.json

Sources: check-jsonschema's vendored SchemaStore schemas (CI configs, compose, renovate, ...),
JupyterLab's settings schemas, nbformat's notebook schemas, and every Nth AWS CloudFormation resource
schema from cfn-lint. For each: accepted as is, accepted after normalising, refused (with the reason),
crashed (goal 0). Each accepted schema is then probed (schemas/probe.py, no model): a keyword the
grammar lets through that the report does not list as "checked after" is a broken promise (goal 0).
Compile time is XGrammar's GrammarCompiler on the probe's 257-token vocabulary, first and cached;
`--real-vocab` times the embedded engine's own compile (SmolLM2's 49,152 tokens) for the files named.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path

from formwork.schemas.probe import _compiler, probe
from formwork.schemas.registry import SchemaProblem, load_schema


def collect(root: Path, cfn_every: int) -> list[Path]:
    files = sorted((root / "check_jsonschema" / "builtin_schemas").rglob("*.json"))
    files += sorted((root / "jupyterlab" / "schemas").rglob("*.json"))
    files += sorted(p for p in (root / "nbformat").rglob("*.json") if "schema" in p.name)
    files += sorted((root / "cfnlint" / "data" / "schemas" / "resources").glob("*.json"))[::cfn_every]
    return files


def check(path: Path) -> dict:
    row: dict = {"file": str(path)}
    try:
        schema = load_schema(path)
    except SchemaProblem as exc:
        return {**row, "outcome": "refused", "reason": str(exc).split("\n  ")[-1][:200]}
    except Exception as exc:  # what the benchmark exists to find: any crash is a bug
        return {**row, "outcome": "crashed", "reason": f"{type(exc).__name__}: {exc}"[:200]}
    report = schema.normalised
    row["outcome"] = "accepted after normalising" if report.changed else "accepted as is"
    grammar = json.dumps(schema.grammar_body)
    try:
        started = time.perf_counter()
        _compiler().compile_json_schema(grammar, any_whitespace=False)
        row["compile_first_ms"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        _compiler().compile_json_schema(grammar, any_whitespace=False)
        row["compile_cached_ms"] = (time.perf_counter() - started) * 1000
        result = probe(schema.grammar_body, schema.checked_body, samples=16, max_tokens=1500)
    except Exception as exc:  # a grammar body XGrammar cannot compile would fail every record
        return {**row, "outcome": "crashed", "reason": f"compile: {exc}"[:200]}
    claimed = " ".join(report.checked_after)
    row["finished_samples"] = result.finished
    row["broken_promises"] = sorted(k for k in result.violated if k != "(not JSON)" and k not in claimed)
    return row


def real_vocab(files: list[Path], out: Path) -> None:
    """The embedded engine's first and cached compile of each file's grammar body, one line each."""
    from formwork.tasks.engines.local import LocalEngine

    grammars = LocalEngine(slots=1)._grammar()  # the engine's own compiler, vocabulary and settings
    with out.open("a") as sink:
        for path in files:
            body = load_schema(path).grammar_body
            started = time.perf_counter()
            grammars.matcher(body)
            first = time.perf_counter() - started
            started = time.perf_counter()
            grammars.matcher(body)
            row = {"file": path.name, "first_s": first, "cached_s": time.perf_counter() - started}
            sink.write(json.dumps(row) + "\n")
            sink.flush()  # a slow schema's predecessors are kept if the run is cut


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--cfn-every", type=int, default=19)
    parser.add_argument("--jsonl", type=Path)
    parser.add_argument("--real-vocab", type=Path, help="append SmolLM2-vocabulary compile times here")
    parser.add_argument("--files", type=Path, nargs="*", help="with --real-vocab: the schemas to time")
    args = parser.parse_args()
    if args.real_vocab:
        return real_vocab(args.files or [], args.real_vocab)
    rows = [check(path) for path in collect(args.root, args.cfn_every)]
    if args.jsonl:
        args.jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    outcomes = Counter(r["outcome"] for r in rows)
    accepted = outcomes["accepted as is"] + outcomes["accepted after normalising"]
    broken = [r for r in rows if r.get("broken_promises")]
    print(f"schemas: {len(rows)}")
    for outcome in ("accepted as is", "accepted after normalising", "refused", "crashed"):
        print(f"  {outcome}: {outcomes[outcome]}")
    print(f"  accepted: {accepted / len(rows):.1%}")
    print(f"  accepted with a keyword let through and not reported as checked after: {len(broken)}")
    unprobed = [r for r in rows if r.get("finished_samples") == 0]
    print(f"  accepted, but no sampled document finished within 1,500 bytes (unprobed): {len(unprobed)}")
    for row in broken:
        print(f"    {row['file']}: {row['broken_promises']}")
    reasons = Counter(r["reason"].split(":", 1)[-1].split("'")[0].strip()[:70] for r in rows if "reason" in r)
    for reason, count in reasons.most_common(8):
        print(f"  refused/crashed {count}x: {reason}")
    for key in ("compile_first_ms", "compile_cached_ms"):
        values = sorted(r[key] for r in rows if key in r)
        if values:
            p90 = values[int(0.9 * (len(values) - 1))]
            print(f"  {key}: median {statistics.median(values):.2f}, p90 {p90:.2f}, max {values[-1]:.2f}")


if __name__ == "__main__":
    main()
