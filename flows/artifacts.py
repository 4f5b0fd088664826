"""What a run shows in Prefect's UI: its summary table, and a link to its review page.

Record outcomes live in Formwork's tables; these artifacts are a window on them for whoever watches
the Prefect server (a nightly deployment has no terminal to print a summary to). The review page is
written only when `review_dir` is set (a folder the team can open); otherwise the artifact says how
to write it. Publishing is best effort: a run never fails because its artifacts could not be made.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.orm import Session

from formwork.db.queries import RunSummary

logger = logging.getLogger(__name__)


def publish_run(sessions: Callable[[], Session], summary: RunSummary, review_dir: Path | None) -> Path | None:
    """Publish the run's table (and review page link) as Prefect artifacts; return the page, if written."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

    page = None
    try:
        create_table_artifact(
            key=f"formwork-run-{summary.run_id}",
            table=[{"what": what, "count": count} for what, count in summary.rows()],
            description=f"run {summary.run_id}: {summary.schema}, {summary.records} records, {summary.state}",
        )
        if review_dir is None:
            command = f"formwork review --run {summary.run_id} --out run-{summary.run_id}.html"
            create_markdown_artifact(
                key=f"formwork-review-{summary.run_id}",
                markdown=f"Review this run: `{command}` (set `review_dir` to have every run write its "
                "page and link it here).",
            )
            return None
        page = write_review(sessions, summary.run_id, review_dir)
        create_link_artifact(
            key=f"formwork-review-{summary.run_id}", link=page.resolve().as_uri(), link_text=page.name,
            description=f"the review page of run {summary.run_id}",
        )  # fmt: skip
    except Exception:  # the UI's window is optional; the run's rows are already stored
        logger.warning("run %s: could not publish its artifacts", summary.run_id, exc_info=True)
    return page


def reader_of(sessions: Callable[[], Session]) -> Callable[[], Session]:
    """The reading sessions of the database that `sessions` writes to (db.session.reader_factory)."""
    from formwork.db.session import reader_factory

    with sessions() as session:  # no statement runs, so no transaction (and no lock) begins
        url = session.get_bind().url.render_as_string(hide_password=False)
    return reader_factory(url)


def write_review(sessions: Callable[[], Session], run_id: int, folder: Path) -> Path:
    """Write run `run_id`'s review page into `folder` as run-N.html; return its path."""
    from formwork.flows.review import load_review, render_review

    with reader_of(sessions)() as session:  # a read: on SQLite it must not take the write lock
        items = load_review(session, run_id)
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / f"run-{run_id}.html"
    page.write_text(render_review(items, f"formwork run {run_id}"), encoding="utf-8")
    return page
