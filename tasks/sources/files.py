"""File inputs: .txt, .eml and .mbox files, alone or in a folder read recursively.

A folder is walked without following symbolic links unless asked: a link could read a file outside the
folder (a password file, another customer's data). What is not a regular file (a directory named
`x.txt`, a dangling link, a FIFO that would block) is skipped with a warning in the log; a file that
cannot be read, or whose name cannot be a key, is a record with a problem.
"""

from __future__ import annotations

import codecs
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from formwork.tasks.sources.keys import KeyBook, readable, safe_key
from formwork.tasks.sources.mail import message_record, split_mbox
from formwork.tasks.sources.records import InputRecord, Warnings, clean_text, decode, finished, joined

FILE_SUFFIXES = (".txt", ".eml", ".mbox")
log = logging.getLogger(__name__)


def read_folder(root: Path, book: KeyBook, follow_symlinks: bool = False) -> Iterator[InputRecord]:
    for path, name in _walk(root, "", follow_symlinks, {_identity(root.stat())}):
        yield from read_file(path, name, book)


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _walk(folder: Path, prefix: str, follow: bool, seen: set[tuple[int, int]]) -> Iterator[tuple[Path, str]]:
    """(path, name relative to the root) of every input file, in name order; `seen` stops link loops."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as exc:
        log.warning("skipped the folder %s: %s", readable(prefix or str(folder), 300), exc.strerror)
        return
    for entry in entries:
        name = prefix + entry.name
        wanted = entry.name.lower().endswith(FILE_SUFFIXES)
        if entry.is_symlink() and not follow:
            if wanted or entry.is_dir():
                log.warning(
                    "did not follow the symbolic link %s (follow_symlinks=True reads it)", readable(name)
                )
            continue
        try:
            info = entry.stat()
        except OSError:
            log.warning("skipped %s: a dangling symbolic link", readable(name))
            continue
        if stat.S_ISDIR(info.st_mode):
            if _identity(info) in seen:
                log.warning("skipped %s: a folder already read (a symbolic link loop)", readable(name))
                continue
            seen.add(_identity(info))
            yield from _walk(Path(entry.path), name + "/", follow, seen)
        elif wanted and stat.S_ISREG(info.st_mode):
            yield Path(entry.path), name
        elif wanted:
            log.warning("skipped %s: not a regular file", readable(name))


def read_file(path: Path, name: str, book: KeyBook) -> Iterator[InputRecord]:
    """The records of one input file; `name` (its path in the folder) is its key."""
    if path.suffix.lower() == ".mbox":
        yield from _mailbox(path, name, book)
        return
    where = readable(name)
    key, problem = book.claim(name, safe_key(name), where, "file name")
    meta = {"file": where}
    try:
        raw = path.read_bytes()
    except OSError as exc:
        unreadable = f"{where} cannot be read: {exc.strerror}"
        yield finished(InputRecord(key, "", meta, joined(problem, unreadable)), where, Warnings())
        return
    if path.suffix.lower() == ".eml":
        yield message_record(raw, key, where, meta, problem)
        return
    warnings = Warnings()
    yield finished(InputRecord(key, _file_text(raw, warnings), meta, problem), where, warnings)


def _file_text(raw: bytes, warnings: Warnings) -> str:
    """A text file as Unicode: a UTF-8 byte-order mark dropped, UTF-16 and UTF-32 decoded by theirs."""
    for encoding, boms in (
        ("utf-32", (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)),
        ("utf-16", (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)),
    ):
        if raw.startswith(boms):
            return clean_text(raw.decode(encoding, errors="replace"), warnings)
    return decode(raw.removeprefix(codecs.BOM_UTF8), warnings)


def _mailbox(path: Path, name: str, book: KeyBook) -> Iterator[InputRecord]:
    """One record per message, keyed `name#N` (N from 1, in file order)."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        where = readable(name)
        key, problem = book.claim(name, safe_key(name), where, "file name")
        unreadable = f"{where} cannot be read: {exc.strerror}"
        yield InputRecord(key, "", {"file": where}, joined(problem, unreadable))
        return
    with handle:
        index = 0
        for index, (raw, framed) in enumerate(split_mbox(handle), start=1):
            where = f"{readable(name)}#{index}"
            key, problem = book.claim(f"{name}#{index}", safe_key(f"{name}#{index}"), where, "file name")
            meta = {"file": readable(name), "message": index}
            if framed:
                yield message_record(raw, key, where, meta, problem)
            else:
                stray = f"{where}: the text before the first 'From ' line is not a message (is this an mbox?)"
                text = decode(raw, warnings := Warnings())
                yield finished(InputRecord(key, text, meta, joined(problem, stray)), where, warnings)
        if index == 0:
            log.warning("%s holds no message", readable(name))
