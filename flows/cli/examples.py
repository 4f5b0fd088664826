"""`formwork examples [--run N | --model NAME[@MODE]] [--count 3] [--out FILE]`: the run's schema again,
carrying solved examples from rows a person settled (flows.examples says which rows, and why never an
audit's). The schema comes out as a file to read, change and pass as `--schema FILE`, never applied
behind the user's back: examples change every prompt, so the calibrations of the schema without them no
longer apply, and the command says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from formwork.flows.cli.common import DbOption, chosen_run, err, fail, opened, out
from formwork.schemas.examples import MAX_EXAMPLES


def examples(
    run: Annotated[int | None, typer.Option("--run", help="a run id (default: the latest run)")] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="NAME[@MODE]: the latest run of this reader")
    ] = None,
    count: Annotated[
        int, typer.Option(min=1, max=MAX_EXAMPLES, help="how many examples to add (each is in every prompt)")
    ] = 3,
    max_chars: Annotated[
        int, typer.Option("--max-chars", min=20, help="leave out records whose text is longer than this")
    ] = 800,
    output: Annotated[
        Path | None, typer.Option("--out", help="write the schema here (default: print it)")
    ] = None,
    db: DbOption = None,
) -> None:
    """Write the run's schema with solved examples taken from rows a person settled (corrections first)."""
    from formwork.db.models import Run
    from formwork.flows.examples import chosen, settled_rows, with_examples

    with opened(db) as session:
        run_id = chosen_run(session, run, model)
        stored = session.get(Run, run_id)
        body = stored.schema_body if stored else None
        found = settled_rows(session, run_id)
    if not body:
        fail(f"run {run_id} stored no schema body (a run from before 0002): run the records again")
    if not found:
        fail(
            f"no row of run {run_id} is settled by a person yet: review its unsure values (`formwork review "
            f"--unsure --run {run_id}`), settle them (`formwork settle FILE`), then ask again"
        )
    picked = chosen(found, count, max_chars)
    if not picked:
        fail(f"every settled row of run {run_id} is longer than --max-chars {max_chars}: raise it")
    written, skipped = with_examples(body, picked, f"run {run_id}'s schema")
    if len(skipped) == len(picked):
        fail("no settled row makes an example: " + "; ".join(skipped))
    text = json.dumps(written, ensure_ascii=False, indent=2) + "\n"
    if output is None:
        out.print(text, end="", markup=False, highlight=False, soft_wrap=True)
    else:
        output.write_text(text, encoding="utf-8")
    for reason in skipped:
        err.print(f"left out {reason}", markup=False, highlight=False)
    added = len(picked) - len(skipped)
    where = f"written to {output}" if output else "printed"
    err.print(
        f"{added} example(s) from rows a person settled, {where} as schema {written.get('title')!r}"
        + (f" x-version {written['x-version']}" if "x-version" in written else "")
        + ". Run with `--schema FILE`. Its prompts differ from the schema's, so no calibration measured "
        "without these examples applies to it: audit a run of it (`formwork audit`) to certify its values.",
        markup=False,
        highlight=False,
    )
