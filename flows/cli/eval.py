"""`formwork eval GOLD.jsonl --schema S [--mode M | --compare a,b] [--limit N] [--half H]
[--calibrate [--export FOLDER] | --verify]`: score modes on gold, calibrate, or check a calibration.

The tables a report prints are flows.cli.eval_reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from formwork.flows.cli.common import (
    DbOption,
    database_in_environment,
    err,
    fail,
    open_database,
    out,
    settings_in_environment,
)
from formwork.flows.cli.eval_reports import print_reports
from formwork.flows.cli.preflight import ModelOption, checked_settings, chosen_reader
from formwork.tasks.evaluation.gold import HALVES


def _escalated(gold: list[Path], schema: str, from_run: int | None, first_run: int, mode: str | None, *,
               calibrate: bool, others: bool, target: float, claim: str, half: str | None, limit: int | None,
               db: str | None, reader: dict[str, Any]) -> None:  # fmt: skip
    """`--escalated-from`: calibrate a stronger reader on what a first reader escalates (flows.
    escalated_eval), from two stored eval runs; one line where they do not fit together."""
    from formwork.flows.escalated_eval import escalated_eval
    from formwork.schemas.registry import SchemaProblem
    from formwork.tasks.evaluation.gold import GoldProblem

    if not calibrate or from_run is None or others:
        fail("--escalated-from A goes with --calibrate --from-run B only: B the stronger reader's eval run, "
             "A the first reader's, on the same gold")  # fmt: skip
    url = open_database(db)
    try:
        with database_in_environment(url), settings_in_environment(reader):
            done = escalated_eval(gold, schema, from_run, first_run, mode=mode, target=target, claim=claim,
                                  half=half, limit=limit)  # type: ignore[arg-type]  # fmt: skip
    except (GoldProblem, SchemaProblem, ValueError) as exc:
        fail(str(exc))
    out.print(f"calibration {done['id']} stored, measured on {done['escalated']} ({done['covered']}):")
    for sentence in done["fields"].values():
        out.print(f"  {sentence}")
    out.print(f"  {done['rows']}")
    out.print(f"an escalated row's claims rest on both calibrations: together at {done['joint_level']:.0%}")


def eval_gold(
    gold: Annotated[
        list[Path], typer.Argument(help='one or more .jsonl of {"id", "text", "gold": {field: value}}')
    ],
    schema: Annotated[str, typer.Option("--schema", "-s", help="a built-in schema name or a .json file")],
    mode: Annotated[str | None, typer.Option(help="one mode (default: the `mode` setting)")] = None,
    compare: Annotated[
        str | None, typer.Option(help="several modes on the same records, e.g. two-pass,one-pass,prompt-json")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="score only the first N gold records")] = None,
    chart: Annotated[
        Path | None,
        typer.Option(help="write a chart (PNG) here, its numbers as .json beside it; no chart without it"),
    ] = None,
    calibrate: Annotated[
        bool, typer.Option(help="fit the score and store a threshold per field that certifies --target")
    ] = False,
    target: Annotated[
        float,
        typer.Option(
            min=0.5,
            max=0.999,
            help="each field's precision to certify (x-target overrides; fields together at 90% confidence)",
        ),
    ] = 0.95,
    verify: Annotated[
        bool,
        typer.Option(
            help="apply the calibration a run would apply and say, with the numbers, whether "
            "these records confirm its bound, break it, or do not contradict it"
        ),
    ] = False,
    half: Annotated[
        str | None,
        typer.Option(
            help="only this half of the gold set, split by a hash of each id: calibrate on one, "
            "verify on the other"
        ),
    ] = None,
    export: Annotated[
        Path | None,
        typer.Option(help="with --calibrate: write each stored calibration to this folder, to ship"),
    ] = None,
    measure: Annotated[
        bool, typer.Option(help="run measuring (nothing certified, nothing dropped), store the rows only")
    ] = False,
    from_run: Annotated[
        int | None,
        typer.Option(
            help="calibrate or verify on the rows a measured run (--measure) stored: no model call; "
            "--mode one-pass reads a two-readings run's notes-free reading, the one-pass call"
        ),
    ] = None,
    claim: Annotated[
        str,
        typer.Option(
            help="with --calibrate: per-field (each field its own claim), or pooled[:FIELD,FIELD] (one "
            "claim over the kept values of those fields together, every field if none named: "
            "'of the values kept in these fields, >= target are right', not a claim about any one)"
        ),
    ] = "per-field",
    escalated_from: Annotated[
        int | None,
        typer.Option(
            help="with --calibrate --from-run B: calibrate B's reader only on the gold records the first "
            "reader's eval run (this id) leaves unsure under its calibration, the ones its runs escalate; "
            "stored for escalations from that reader and calibration only"
        ),
    ] = None,
    db: DbOption = None,
    model: ModelOption = None,
) -> None:
    """Run gold records through the pipeline, score them, store the scores, print tables, and draw a chart
    where `--chart` names a file (none by default: no file appears in the folder it was run from)."""
    from formwork.flows.evaluate import evaluate
    from formwork.flows.prefect_env import cli_flows, explained
    from formwork.schemas.registry import SchemaProblem
    from formwork.tasks.engines.base import EngineError
    from formwork.tasks.evaluation.gold import GoldProblem

    if mode and compare:
        fail("use --mode or --compare, not both")
    reader = chosen_reader(model)
    if "mode" in reader and (mode or compare):
        fail("--model NAME@MODE names the mode: use it or --mode / --compare, not both")
    checked_settings(reader)  # an unknown or missing model: one line, before the model and Prefect
    if half is not None and half not in HALVES:
        fail(f"--half is {' or '.join(HALVES)}, not {half!r}")
    modes = [m.strip() for m in compare.split(",") if m.strip()] if compare else ([mode] if mode else None)
    if escalated_from is not None:
        _escalated(gold, schema, from_run, escalated_from, mode or reader.get("mode"), calibrate=calibrate,
                   others=bool(compare or verify or measure or export), target=target, claim=claim,
                   half=half, limit=limit, db=db, reader=reader)  # fmt: skip
        return
    shown = ", ".join(map(str, gold))
    does = f"replays run {from_run}'s stored readings, no model call" if from_run else "this runs the model"
    err.print(f"evaluating {shown} ({', '.join(modes or ['the configured mode'])}); {does}")
    url = open_database(db)  # a mistyped or unreachable database: one line, before the model and Prefect
    try:
        with (
            cli_flows(),
            explained(GoldProblem, SchemaProblem, EngineError, ValueError, ImportError),
            database_in_environment(url),
            settings_in_environment(reader),  # never parameters
        ):
            reports = evaluate(
                ",".join(map(str, gold)), schema, modes=modes, limit=limit,
                chart=str(chart) if chart else None,
                calibrate=calibrate, target=target, verify=verify, half=half,  # type: ignore[arg-type]
                export=str(export) if export else None, measure=measure, from_run=from_run, claim=claim,
            )  # fmt: skip
    except (GoldProblem, SchemaProblem, EngineError, ValueError, ImportError) as exc:
        fail(str(exc))
    print_reports(reports)
    for name, report in reports.items():
        if report.get("reading"):
            out.print(f"{name}: certified values counted on the {report['reading']} (the one-pass call); "
                      "outcomes and accuracy above are that run's own rows")  # fmt: skip
    if chart is not None and from_run is None:  # a replay of a stored run draws no chart
        out.print(f"chart: {chart} (numbers: {chart.with_suffix('.json')})")
