"""Read input records from JSONL, CSV, .txt/.eml/.mbox files or a folder of them, losing nothing.

Every non-blank line, CSV row, file or mail message becomes exactly one `InputRecord`. A bad one is not
skipped and does not stop the run: it becomes a record with a `problem`, stored and given a `failed`
result with that reason, so the summary and the results table show it. Two lines never merge: an id
used twice gives the later line its own key and a problem that names the line that had the id first.
Keys are always storable (valid UTF-8, no NUL, at most 200 characters); texts and meta have invalid
UTF-8 and lone surrogates replaced (U+FFFD) and NULs removed (PostgreSQL cannot store them), each with
a warning in the record's meta. Only a source that cannot be read at all raises `SourceProblem`, before
any record is yielded. Files are read as streams, a line or a message at a time.

The readers live beside it in tasks/sources/; this module is the public face the flows import.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from formwork.tasks.sources.csv import read_csv
from formwork.tasks.sources.files import FILE_SUFFIXES, read_file, read_folder
from formwork.tasks.sources.jsonl import read_jsonl
from formwork.tasks.sources.keys import KeyBook
from formwork.tasks.sources.records import InputRecord, SourceProblem

__all__ = ["InputRecord", "SourceProblem", "read_records"]

TABLE_READERS = {".jsonl": read_jsonl, ".ndjson": read_jsonl, ".csv": read_csv}


def read_records(source: str | Path, *, follow_symlinks: bool = False) -> Iterator[InputRecord]:
    """Yield every record of `source`; raise SourceProblem now if the source as a whole is unusable.

    In a folder, symbolic links are followed only when `follow_symlinks` is true (a link can point
    outside the folder); a link given as `source` itself is what the caller asked for, so it is read.
    """
    path = Path(source)
    book = KeyBook()
    if path.is_dir():
        try:
            os.scandir(path).close()
        except OSError as exc:
            raise SourceProblem(f"the folder {str(source)!r} cannot be read: {exc.strerror}") from exc
        return read_folder(path, book, follow_symlinks=follow_symlinks)
    if not path.exists():
        raise SourceProblem(f"input {str(source)!r} does not exist")
    if not path.is_file():
        raise SourceProblem(f"input {str(source)!r} is neither a file nor a folder")
    suffix = path.suffix.lower()
    if suffix in TABLE_READERS:
        return TABLE_READERS[suffix](path, book)
    if suffix in FILE_SUFFIXES:
        return read_file(path, path.name, book)
    raise SourceProblem(
        f"{path}: unknown input format; use .jsonl, .csv, .txt, .eml, .mbox or a folder of such files"
    )
