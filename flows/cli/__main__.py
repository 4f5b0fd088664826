"""`python -m formwork.flows.cli`: the CLI without its console script (a venv not on PATH, a debugger)."""

from formwork.flows.cli import app

app()
