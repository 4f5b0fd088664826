"""What a command can refuse in a second, before Prefect or a model starts: a missing input, an unknown or
broken schema, a model that is unknown or not installed, settings that do not validate. Each of these
took a `formwork run` 40 to 60 seconds to report, the ephemeral Prefect server started first; checked
here, the error line comes before anything is started (the flow checks them again, for deployments).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from formwork.flows.cli.common import err, fail

if TYPE_CHECKING:
    from formwork.tasks.settings import Settings


ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="NAME[@MODE]: a model from `formwork models` on the embedded engine, in MODE when given (the "
        "1.5B: the mode its calibrations are for). Default: the 1.5B in one-pass mode once installed",
    ),
]


def chosen_reader(model: str | None) -> dict[str, str]:
    """The settings `--model NAME[@MODE]` stands for (none without it); a malformed one is refused."""
    from formwork.tasks.reader_choice import ModelChoiceProblem, model_choice

    if model is None:
        return {}
    try:
        return model_choice(model)
    except ModelChoiceProblem as exc:
        fail(str(exc))


def checked_settings(overrides: dict[str, str]) -> Settings:
    """The settings a command's flow will read (these overrides over the environment and formwork.toml),
    with its embedded model known and installed: its file is only looked for, not hashed (the engine
    checks the hash when it opens the model)."""
    from pydantic import ValidationError

    from formwork.tasks.engines.models import ModelUnavailable, known, model_file, not_installed
    from formwork.tasks.settings import Settings

    try:
        settings = Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        fail(f"settings are invalid: {exc}")
    if settings.engine == "local" and settings.local_model:
        try:
            model = known(settings.local_model)
            if not model_file(model).is_file():
                raise not_installed(model, model_file(model))
        except (ModelUnavailable, FileNotFoundError) as exc:
            fail(str(exc))
    if note := settings.default_note():
        err.print(f"note: {note}", soft_wrap=True, markup=False)
    return settings


def checked_run(source: str, schema: str, follow_symlinks: bool, overrides: dict[str, str]) -> Settings:
    """A `formwork run`'s input, schema and reader checked, each mistake one line (exit 2)."""
    from formwork.schemas.registry import SchemaProblem, load_checked_schema
    from formwork.tasks.sources import SourceProblem, read_records
    from formwork.tasks.sources.sql import is_database_url

    settings = checked_settings(overrides)
    try:
        if not is_database_url(source):
            read_records(source, follow_symlinks=follow_symlinks)  # refuses a missing or unreadable input
        load_checked_schema(schema)
    except (SourceProblem, SchemaProblem, ImportError, OSError) as exc:
        fail(str(exc))
    return settings
