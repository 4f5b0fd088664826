"""The eval chart: outcome bars per mode beside per-field accuracy per mode, in one PNG.

matplotlib is imported only here, with the Agg backend (no display on a server). The numbers drawn
are written beside the image as JSON (same name, `.json`), so a test or a reader can check that the
picture shows the measured values and not a placeholder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from formwork.tasks.evaluation.scoring import OUTCOMES


def plotted_values(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the chart draws: outcome counts and per-field accuracy, per mode."""
    fields = sorted({key for report in reports.values() for key in report["field_accuracy"]})
    return {
        "modes": list(reports),
        "outcomes": {mode: [r["outcomes"][name] for name in OUTCOMES] for mode, r in reports.items()},
        "fields": fields,
        "field_accuracy": {
            mode: [r["field_accuracy"].get(key, 0.0) for key in fields] for mode, r in reports.items()
        },
    }


def write_chart(reports: dict[str, dict[str, Any]], path: str | Path, title: str) -> Path:
    """Draw the chart for these reports (mode -> Report.as_dict()) to `path`; return it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = plotted_values(reports)
    modes, fields = values["modes"], values["fields"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / max(len(modes), 1)
    for index, mode in enumerate(modes):
        offset = [x + index * width for x in range(len(OUTCOMES))]
        left.bar(offset, values["outcomes"][mode], width, label=mode)
        offset = [x + index * width for x in range(len(fields))]
        right.bar(offset, values["field_accuracy"][mode], width, label=mode)
    left.set_xticks(
        [x + 0.4 - width / 2 for x in range(len(OUTCOMES))], [o.replace("_", " ") for o in OUTCOMES]
    )
    left.set_ylabel("records")
    left.set_title("outcomes")
    right.set_xticks([x + 0.4 - width / 2 for x in range(len(fields))], fields, rotation=30)
    right.set_ylim(0, 1)
    right.set_ylabel("share correct")
    right.set_title("per-field accuracy")
    left.legend()
    figure.suptitle(title)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    path.with_suffix(".json").write_text(json.dumps(values, indent=1))
    return path
