"""Folder inputs: odd entries are warnings, odd names are records with a problem, and symlinks are not
followed unless asked (issue 7, points 8 and 15)."""

from __future__ import annotations

import logging
import os

from formwork.tasks.sources import read_records
from tests.test_sources import assert_storable


def test_a_directory_named_like_a_text_file_and_a_dangling_link_are_warnings(tmp_path, caplog) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "x.txt").mkdir()
    (inbox / "x.txt" / "inner.txt").write_text("Inner note")
    (inbox / "gone.txt").symlink_to(tmp_path / "nowhere.txt")
    os.mkfifo(inbox / "pipe.txt")  # opening it would block for ever
    (inbox / "a.txt").write_text("Jane Doe, jane@example.org")
    with caplog.at_level(logging.WARNING):
        records = list(read_records(inbox))
    assert [r.key for r in records] == ["a.txt", "x.txt/inner.txt"]
    warned = caplog.text
    assert "gone.txt" in warned and "symbolic link" in warned
    assert "pipe.txt" in warned and "not a regular file" in warned


def test_symlinks_out_of_the_folder_are_not_followed_unless_asked(tmp_path, caplog) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "password.txt").write_text("hunter2")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.txt").write_text("Jane Doe")
    (inbox / "leak.txt").symlink_to(secret / "password.txt")
    (inbox / "leakdir").symlink_to(secret, target_is_directory=True)
    with caplog.at_level(logging.WARNING):
        records = list(read_records(inbox))
    assert [r.key for r in records] == ["a.txt"]
    assert "hunter2" not in {r.text for r in records}
    assert "leak.txt" in caplog.text and "leakdir" in caplog.text

    followed = list(read_records(inbox, follow_symlinks=True))
    assert [r.key for r in followed] == ["a.txt", "leak.txt", "leakdir/password.txt"]


def test_following_a_symlink_loop_ends(tmp_path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("Jane Doe")
    (tmp_path / "sub" / "loop").symlink_to(tmp_path, target_is_directory=True)
    records = list(read_records(tmp_path, follow_symlinks=True))
    assert [r.key for r in records] == ["sub/a.txt"]


def test_a_file_name_that_is_not_utf8_is_a_record_with_a_problem(tmp_path) -> None:
    os.mkdir(os.fsencode(tmp_path / "in"))
    with open(os.path.join(os.fsencode(tmp_path / "in"), b"caf\xe9.txt"), "wb") as handle:
        handle.write(b"Lunch 12 EUR")
    (tmp_path / "in" / "ok.txt").write_text("Taxi 20 EUR")
    records = list(read_records(tmp_path / "in"))
    assert_storable(records)
    assert len(records) == 2
    bad = next(r for r in records if r.problem)
    assert bad.problem == "caf\ufffd.txt: the file name is not valid UTF-8 (rename the file)"
    assert bad.key.startswith("caf\ufffd.txt~") and bad.text == "Lunch 12 EUR"


def test_a_path_over_200_characters_gets_a_safe_key(tmp_path) -> None:
    deep = tmp_path / ("d" * 120) / ("e" * 120)
    deep.mkdir(parents=True)
    (deep / "note.txt").write_text("Jane Doe")
    (record,) = read_records(tmp_path)
    assert_storable([record])
    assert "characters; a key holds at most 200" in record.problem


def test_single_text_and_mail_files_are_inputs_too(tmp_path) -> None:
    note = tmp_path / "note.txt"
    note.write_text("Jane Doe, jane@example.org")
    (record,) = read_records(note)
    assert (record.key, record.text) == ("note.txt", "Jane Doe, jane@example.org")
