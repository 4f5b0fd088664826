"""Mail inputs: .eml files and .mbox mailboxes are parsed, not read as raw text (issue 7, point 21)."""

from __future__ import annotations

from pathlib import Path

from formwork.tasks.sources import read_records
from tests.test_sources import assert_storable

QUOTED_PRINTABLE = b"""\
From: =?utf-8?q?Ren=C3=A9e_Dupont?= <renee@example.org>
To: sales@example.com
Date: Tue, 04 Mar 2025 09:12:00 +0100
Subject: =?utf-8?q?Caf=C3=A9_order?=
Message-ID: <qp-1@example.org>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable

Bonjour, deux caf=C3=A9s =C3=A0 4 EUR.
--=20
Ren=C3=A9e Dupont, +33 1 23 45 67 89
"""

HTML_ONLY_BASE64 = b"""\
From: Ben <ben@example.org>
Subject: Receipt
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

--b1
Content-Type: text/html; charset=iso-8859-1
Content-Transfer-Encoding: base64

PGh0bWw+PGhlYWQ+PHN0eWxlPnB7Y29sb3I6cmVkfTwvc3R5bGU+PC9oZWFkPjxib2R5PjxwPlRh
eGkgMjAgJmV1cm87PC9wPjxwPkNhZukgNCBFVVI8L3A+PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0
PjwvYm9keT48L2h0bWw+
--b1
Content-Type: application/pdf; name="r.pdf"
Content-Disposition: attachment; filename="r.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--b1--
"""

ATTACHMENT_ONLY = b"""\
From: scanner@example.org
Subject: Scan
MIME-Version: 1.0
Content-Type: application/pdf
Content-Transfer-Encoding: base64

JVBERi0xLjQK
"""

UNKNOWN_CHARSET = b"""\
From: x@example.org
Subject: odd
Content-Type: text/plain; charset=x-no-such-charset

Taxi 20 EUR
"""


def body(record) -> str:
    """The message's text below the From/To/Date/Subject lines the reader puts on top."""
    return (
        record.text.split("\n\n", 1)[1]
        if record.text.startswith(("From: ", "To: ", "Date: ", "Subject: "))
        else record.text
    )


def test_an_eml_file_is_decoded_with_its_headers_in_the_meta(tmp_path: Path) -> None:
    (tmp_path / "a.eml").write_bytes(QUOTED_PRINTABLE)
    (record,) = read_records(tmp_path)
    assert record.key == "a.eml" and record.problem is None
    assert body(record) == "Bonjour, deux cafés à 4 EUR.\n-- \nRenée Dupont, +33 1 23 45 67 89\n"
    assert record.text.startswith("From: Renée Dupont <renee@example.org>\nTo: sales@example.com\n")
    assert record.meta == {
        "file": "a.eml",
        "from": "Renée Dupont <renee@example.org>",
        "to": "sales@example.com",
        "date": "Tue, 04 Mar 2025 09:12:00 +0100",
        "subject": "Café order",
        "message_id": "<qp-1@example.org>",
        "reference_date": "2025-03-04",
    }


def test_html_is_turned_into_text_without_scripts_or_styles(tmp_path: Path) -> None:
    path = tmp_path / "receipt.eml"
    path.write_bytes(HTML_ONLY_BASE64)
    (record,) = read_records(path)
    assert record.problem is None
    assert body(record).split() == ["Taxi", "20", "€", "Café", "4", "EUR"]
    assert record.meta["subject"] == "Receipt"


def test_a_message_without_a_text_part_is_a_record_with_a_problem(tmp_path: Path) -> None:
    (tmp_path / "scan.eml").write_bytes(ATTACHMENT_ONLY)
    (record,) = read_records(tmp_path)
    assert record.problem == "scan.eml: the message has no text/plain or text/html part"
    assert record.meta["subject"] == "Scan"


def test_an_unknown_charset_is_read_as_utf8_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "odd.eml").write_bytes(UNKNOWN_CHARSET)
    (record,) = read_records(tmp_path)
    assert body(record) == "Taxi 20 EUR\n" and record.problem is None
    assert record.meta["warnings"] == ["unknown charset 'x-no-such-charset'; the body was read as UTF-8"]


def test_an_mbox_yields_one_record_per_message(tmp_path: Path) -> None:
    box = tmp_path / "inbox.mbox"
    box.write_bytes(
        b"From renee@example.org Tue Mar  4 09:12:00 2025\n"
        + QUOTED_PRINTABLE
        + b"\nFrom ben@example.org Tue Mar  4 10:00:00 2025\n"
        + b"From: Ben <ben@example.org>\nSubject: Lunch\n\nLunch 12 USD\n>From the office.\n"
        + b"\nFrom scanner@example.org Tue Mar  4 11:00:00 2025\n"
        + ATTACHMENT_ONLY
    )
    records = list(read_records(box))
    assert_storable(records)
    assert [r.key for r in records] == ["inbox.mbox#1", "inbox.mbox#2", "inbox.mbox#3"]
    assert records[0].meta["subject"] == "Café order" and records[0].meta["message"] == 1
    assert body(records[1]) == "Lunch 12 USD\nFrom the office.\n" and records[1].problem is None
    assert records[2].problem == "inbox.mbox#3: the message has no text/plain or text/html part"


def test_an_mbox_in_a_folder_and_text_before_its_first_message(tmp_path: Path) -> None:
    (tmp_path / "a.eml").write_bytes(QUOTED_PRINTABLE)
    (tmp_path / "old.mbox").write_bytes(
        b"stray line\n\nFrom x Tue Mar  4 09:12:00 2025\nSubject: s\n\nBus 2 EUR\n"
    )
    (tmp_path / "empty.mbox").write_bytes(b"")
    records = list(read_records(tmp_path))
    assert [r.key for r in records] == ["a.eml", "old.mbox#1", "old.mbox#2"]
    assert "before the first 'From ' line" in records[1].problem
    assert body(records[2]) == "Bus 2 EUR\n" and records[2].problem is None


def test_headers_with_bytes_that_are_not_utf8_are_cleaned(tmp_path: Path) -> None:
    (tmp_path / "latin.eml").write_bytes(b"From: Ren\xe9e <r@example.org>\nSubject: caf\xe9\n\nTaxi 20 EUR\n")
    (record,) = read_records(tmp_path)
    assert_storable([record])
    assert body(record) == "Taxi 20 EUR\n" and "\ufffd" in record.meta["subject"]


def _dated(header: str) -> bytes:
    return (
        f"From: Tom <tom@example.org>\nDate: {header}\nSubject: Taxi\nContent-Type: text/plain\n\n"
        "Taxi yesterday, 30 EUR\n"
    ).encode()


def test_a_date_header_no_mail_was_sent_on_is_no_reference_date(tmp_path: Path) -> None:
    """A Date header in 2038 or in 1970 would have "yesterday" read against a day that never was: the
    record gets no reference date, and its meta and warnings say why."""
    from formwork.schemas.registry import load_schema
    from formwork.tasks.calls import ExtractOptions

    for name, header, why in [
        ("future.eml", "Tue, 19 Jan 2038 03:14:07 +0000", "2038-01-19 is in the future"),
        ("epoch.eml", "Thu, 01 Jan 1970 00:00:00 +0000", "1970-01-01 is before 1980"),
    ]:
        (tmp_path / name).write_bytes(_dated(header))
        (record,) = read_records(tmp_path / name)
        assert "reference_date" not in record.meta, record.meta
        assert why in record.meta["reference_date_refused"] and record.meta["warnings"] == [
            record.meta["reference_date_refused"]
        ]
        grammar = ExtractOptions().formatting_grammar(load_schema("expense"), record.text, record.meta)
        dates = grammar["properties"]["date"].get("enum", [])
        assert not [d for d in dates if d and d != why[:10]], dates  # "yesterday" names no day now
    (tmp_path / "fine.eml").write_bytes(_dated("Mon, 10 Jun 2024 09:00:00 +0200"))
    (record,) = read_records(tmp_path / "fine.eml")
    assert record.meta["reference_date"] == "2024-06-10" and "reference_date_refused" not in record.meta


def test_a_reference_date_outside_the_window_is_refused_wherever_it_comes_from() -> None:
    from datetime import date, timedelta

    from formwork.tasks.grounding.anchors import anchored_reference, unlikely_reference

    today = date.today()
    assert anchored_reference({"reference_date": "2038-01-19"}, "reference_date") == (None, None)
    assert anchored_reference({"reference_date": "1975-05-01"}, "reference_date") == (None, None)
    assert anchored_reference({"reference_date": "2024-06-10"}, "reference_date") == (
        date(2024, 6, 10),
        "meta reference_date",
    )
    assert unlikely_reference(today + timedelta(days=1)) is None  # a sender's clock a day ahead
    assert unlikely_reference(today + timedelta(days=2)) is not None
