"""Each run shows itself in Prefect: its summary table and a link to the review page it wrote."""

from __future__ import annotations

import pytest

from formwork.flows.batch_extract import batch_extract

pytestmark = pytest.mark.slow


def test_a_run_publishes_its_summary_and_review_page(
    prefect_harness, monkeypatch, write_jsonl, db_url, tmp_path
):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    monkeypatch.setenv("FORMWORK_REVIEW_DIR", str(tmp_path / "reviews"))
    source = write_jsonl([{"id": "empty", "text": ""}, "{broken"])  # no model call needed: bad input
    summary = batch_extract(str(source), "expense", db_url=db_url)
    page = tmp_path / "reviews" / f"run-{summary.run_id}.html"
    assert page.is_file() and "line-2" in page.read_text() and "the text is empty" in page.read_text()
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[f"formwork-run-{summary.run_id}",
                                                                        f"formwork-review-{summary.run_id}"]))
        )  # fmt: skip
    by_type = {artifact.type: artifact for artifact in found}
    assert {"table", "markdown"} <= set(by_type)  # Prefect stores a link artifact as markdown
    assert "status failed" in str(by_type["table"].data) and "2" in str(by_type["table"].data)
    assert page.resolve().as_uri() in str(by_type["markdown"].data)
