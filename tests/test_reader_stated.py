"""Only what the text states, and every value it does (issue 27): each example is judged by `judge`
and offered (or not) by `ExtractOptions.formatting_grammar`, as a model under grounded decoding meets it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines.base import Completion
from formwork.tasks.validate import judge

EXPENSE = load_schema("expense")
GROUNDED = ExtractOptions(grounded_decoding=True)
BLANK = {"who": None, "date": None, "amount": 0, "currency": "other", "category": "other", "project": None}


def offered(text: str, field: str, meta: dict[str, Any] | None = None) -> list[Any]:
    """The values the grounded grammar lets the model write at `field` ([] when it is left open)."""
    node = GROUNDED.formatting_grammar(EXPENSE, text, meta)["properties"][field]
    return node.get("enum", [])


def accepted(text: str, field: str, value: Any, meta: dict[str, Any] | None = None) -> bool:
    """Whether the judge finds `value` at `field` in `text` (no error names the field)."""
    data = {**BLANK, field: value}
    done = Completion(json.dumps(data, ensure_ascii=False), "stop", 1, 1, 0.1, "m")
    verdict = judge(EXPENSE, text, Completion("", "stop", 1, 1, 0.1, "m"), done, meta=meta)
    return not [e for e in verdict.errors if e.startswith(field + " ")]


def sent(day: str) -> dict[str, str]:
    return {"reference_date": day}


# (text, field, meta, right values, wrong values)
CASES = [
    # a number read as a group is never also its tail (issue 41 point 7), whatever groups it
    ("Hôtel Lutetia, 2 nuits : 1 250,00 EUR", "amount", None, [1250, 2], [250]),
    ("Hotel Marriott Warszawa, razem 1 250,00 EUR", "amount", None, [1250], [250]),
    ("Hotell Stockholm, totalt 1\u2009250 SEK", "amount", None, [1250], [250]),
    ("Hôtel Lyon, total 1\u202f250,00 EUR", "amount", None, [1250], [250]),
    ("Hôtel Lyon, total 1\u00a0250,00 EUR", "amount", None, [1250], [250]),
    ("Zimmer Zürich, total 1'250.50 CHF", "amount", None, [1250.5], [250.5]),
    ("Zimmer Zürich, total 1'250.00 CHF", "amount", None, [1250], [250]),
    ("Hotel Berlin, gesamt 1.250,00 EUR", "amount", None, [1250], [250]),
    ("Hotel Warszawa, razem 12 500 000 PLN", "amount", None, [12500000], [500, 500000]),
    # a number word joined to a word or digits by a hyphen is a name (issue 41 point 13)
    ("Bought snacks at 7-Eleven for the team meeting, paid 4 USD", "amount", None, [4], [11]),
    ("Coffee at 7-Eleven with Maria, 4 dollars", "amount", None, [4], [11]),
    ("Lunch at Eleven-Madison with the client, 40 dollars", "amount", None, [40], [11]),
    ("Taxi to the airport with Maria, forty-two dollars", "amount", None, [42], [40, 2]),
    ("Taxi to the airport with Maria, twenty-five euros", "amount", None, [25], []),
    ("A twenty-five-dollar taxi ride to the airport with Maria", "amount", None, [25], []),
    ("Taxi pour l'aéroport avec Marie, vingt-cinq euros", "amount", None, [25], []),
    ("Taxi Zürich 03.06.2024 30 CHF", "amount", None, [30], []),
    ("Taxi Zürich 03.06.2024 30 CHF", "date", None, ["2024-06-03"], []),
    ("Hotel 12 March, 95 EUR + city tax 5 EUR, total 100 EUR", "date", None, [], ["1995-03-12"]),
    ("Hotel 12 March, 95 EUR + city tax 5 EUR, total 100 EUR", "amount", None, [95, 100], []),
    ("Dinner on 31 December, 80 EUR", "date", sent("2024-01-02"), ["2023-12-31"], ["1980-12-31"]),
    ("| Drill bit set #51 | 2 | 14.10 |", "date", None, [], ["2051-09-02"]),  # "set": Italian September
    ("2026년 1월 28일 팀 회식 비용 총 452,000원", "date", None, ["2026-01-28"], []),
    ("| Taxi | 3 June 2024 | 30 EUR |", "date", None, ["2024-06-03"], []),
    ("Taxi\tset 2\t2024", "date", None, [], ["2024-09-02"]),  # cells read apart
    ("Dinner on 31 December, 80 EUR", "amount", sent("2024-01-02"), [80], []),
    ("Booked the hotel for June, 300 EUR", "date", sent("2024-06-10"), [], ["2024-06-10", "2024-06-01"]),
    ("Taxi next Monday to the airport", "date", sent("2024-12-30"), ["2025-01-06"], ["2024-12-23"]),
    ("Taxi last Monday to the airport", "date", sent("2024-12-30"), ["2024-12-23"], ["2025-01-06"]),
    ("Taxi Mon 3 June", "date", sent("2024-06-10"), ["2024-06-03"], ["2024-03-10"]),
    ("Taxi 3 days ago", "date", sent("2024-03-02"), ["2024-02-28"], ["2023-08-02"]),
    ("Taxi, ago", "date", sent("2024-03-02"), [], ["2023-08-02", "2024-03-02"]),
    ("Otto paid the taxi", "amount", None, [], [8]),
    ("Dinner near the fire station", "amount", None, [], [4]),
    ("Room at the Elf Hotel", "amount", None, [], [11]),
    ("Lunch at Cafe Mille", "amount", None, [], [1000]),
    ("Otto euro per il taxi", "amount", None, [8], []),
    ("Taxi to the airport, thirty-five euros", "amount", None, [35], []),
    ("十万火急的快递", "amount", None, [], [100000]),
    ("周末三三两两去吃饭", "amount", None, [], [3322]),
    ("周末三三两两人去吃饭", "amount", None, [], [3322]),
    ("八百屋で野菜", "amount", None, [], [800]),
    ("五一节去吃饭", "amount", None, [], [51]),
    ("打车三十五元", "amount", None, [35], []),
    ("3日前にタクシー代 1200円", "date", sent("2024-10-08"), ["2024-10-05"], ["2024-10-03"]),
    ("三日前にタクシー代 1200円", "date", sent("2024-10-08"), ["2024-10-05"], []),
    ("タクシー代千五百円", "amount", None, [1500], [500]),
    ("ホテル代２万４８００円", "amount", None, [24800], [20000, 4800]),
    ("10/6 タクシー 1500円", "date", sent("2024-10-08"), ["2024-10-06"], ["2024-06-10"]),
    ("10/6 タクシー 1500円", "amount", sent("2024-10-08"), [1500], [10, 6]),
    # a weekday's abbreviation alone is a word of its language, unless the text marks it as one
    ("Kaffee mit Anna, 12 EUR", "date", sent("2025-11-20"), [], ["2025-11-19"]),  # German "with"
    ("Mon ami a payé le taxi, 12 EUR", "date", sent("2025-11-20"), [], ["2025-11-17"]),  # French "my"
    ("Die Rechnung für das Taxi, 12 EUR", "date", sent("2025-11-20"), [], ["2025-11-18"]),
    ("My son paid the taxi, 12 EUR", "date", sent("2025-11-20"), [], ["2025-11-16"]),
    ("Mar 12 EUR for the taxi", "date", sent("2025-11-20"), [], ["2025-03-20", "2025-11-18"]),
    ("Lyft from SFO $48.12 (Tue), for the kickoff", "date", sent("2025-03-12"), ["2025-03-11"], []),
    ("Taxi Fri. 23 EUR", "date", sent("2025-11-20"), ["2025-11-14"], []),
    ("Taxi Fri 2 May 2025, 23 EUR", "date", sent("2025-11-20"), ["2025-05-02"], ["2025-11-14"]),
    ("Sat 3 hours in the lounge, coffee 4 EUR", "date", sent("2025-11-20"), [], ["2025-03-20"]),  # a Thursday
    ("Room 12, June rate 95 EUR", "date", sent("2025-11-20"), [], ["2025-06-12"]),
    # two days off, and Polish (issue 27's relative dates)
    ("Vorgestern Taxi zum Messegelände, 23,60 €", "date", sent("2025-05-14"), ["2025-05-12"], []),
    ("Almoço no Porto, 86,40 €, anteontem", "date", sent("2025-09-17"), ["2025-09-15"], []),
    ("Kawa w kawiarni, 32,50 zł, wczoraj", "date", sent("2025-11-20"), ["2025-11-19"], []),
    ("Bilet PKP 169 zł, 7 marca 2025", "date", None, ["2025-03-07"], []),
    # a numeric date after an amount and its full stop: "85.37. 01" is no date and hides none
    ("stapler $12.49. Total $85.37. 01/07/2025", "date", None, ["2025-01-07", "2025-07-01"], []),
    ("stapler $12.49. Total $85.37. 01/07/2025", "amount", None, [85.37, 12.49], [2025, 7]),
    ("Total 85.37. 01.07.2025", "date", None, ["2025-01-07"], []),
    ("Total $12.30. 01/07/2025", "date", None, ["2025-01-07"], ["2001-12-30"]),  # a separator twice alike
    ("Beleg 3. 5. 2024, 12 EUR", "date", None, ["2024-05-03"], []),
    # a date word written with an apostrophe, ' or ’, is one word (exp-310)
    ("Déjeuner sur le pouce : 14,90 €, aujourd'hui, Inès", "date", sent("2025-11-18"), ["2025-11-18"], []),
    ("Déjeuner : 14,90 €, aujourd’hui, Inès", "date", sent("2025-11-18"), ["2025-11-18"], ["2025-11-19"]),
    ("Aujourd’hui, taxi pour l’aéroport : 32 €", "date", sent("2025-11-18"), ["2025-11-18"], []),
    ("Taxi d’hui, 32 €", "date", sent("2025-11-18"), [], ["2025-11-18"]),  # "hui" alone is no day
    # Korean weeks (exp-127): 지난주 금요일 is last week's Friday
    ("지난주 금요일 64,000원", "date", sent("2026-02-10"), ["2026-02-06"], ["2026-02-13", "2026-01-30"]),
    ("무슨 요일에 택시 12,000원", "date", sent("2026-02-10"), [], ["2026-02-09"]),  # no weekday named
    # a part of a day names its day (exp-182, exp-235, exp-194, exp-223)
    ("I paid $42 for the cab last night", "date", sent("2025-11-05"), ["2025-11-04"], ["2025-11-05"]),
    ("Dinner on me last night w/ the Oracle folks, $212.45", "date", sent("2025-02-27"), ["2025-02-26"], []),
    ("Oyster top-up £20 this morning. - Priya Patel", "date", sent("2025-06-23"), ["2025-06-23"], []),
    ("Grabbed coffee for the panel this morning, $23.60", "date", sent("2025-05-07"), ["2025-05-07"], []),
    # a day of the month alone as an ordinal: the latest on or before the reference (exp-236)
    (
        "Heathrow parking on the 3rd? £64.50",
        "date",
        sent("2025-03-10"),
        ["2025-03-03"],
        ["2025-02-03", "2025-03-10"],
    ),
    ("Can you add my Heathrow parking on the 3rd? £64.50", "amount", sent("2025-03-10"), [64.5], [3]),
    ("Can you add my Heathrow parking on the 3rd? £64.50", "date", None, [], ["2025-03-03"]),
    ("Dinner on the 21st with Bob, 80 EUR", "date", sent("2025-03-10"), ["2025-02-21"], ["2025-03-21"]),
    ("Taxi on the 31st, 12 EUR", "date", sent("2025-03-02"), ["2025-01-31"], ["2025-03-31"]),
    ("Monday the 3rd, taxi 20 EUR", "date", sent("2025-03-10"), ["2025-03-03"], ["2025-03-10"]),
    ("The room on the 3rd floor, 120 EUR", "date", sent("2025-03-10"), [], ["2025-03-03"]),
    ("Stapler, the 3rd item, 5 EUR", "date", sent("2025-03-10"), [], ["2025-03-03"]),
    ("3rd party fees 20 EUR", "date", sent("2025-03-10"), [], ["2025-03-03"]),
    ("Taxi on 3rd Street, 12 EUR", "date", sent("2025-03-10"), [], ["2025-03-03"]),
    ("Taxi 3 to the airport, 12 EUR", "date", sent("2025-03-10"), [], ["2025-03-03"]),  # a bare number
    ("Taxi on the 3rd of May, 20 EUR", "date", sent("2025-03-10"), ["2024-05-03"], ["2025-03-03"]),
    ("Taxi May the 3rd, 20 EUR", "date", sent("2025-03-10"), [], ["2025-03-03"]),
    ("Parken am 3., 12 EUR", "date", sent("2025-03-10"), ["2025-03-03"], []),
    ("Parken am 3. Mai, 12 EUR", "date", sent("2025-03-10"), ["2024-05-03"], ["2025-03-03"]),
    ("Am 3. Tag Parken, 12 EUR", "date", sent("2025-03-10"), [], ["2025-03-03"]),
    ("Parking le 3, 12 €", "date", sent("2025-03-10"), ["2025-03-03"], []),
    ("Parking le 1er à Roissy, 12 €", "date", sent("2025-03-10"), ["2025-03-01"], []),
    ("Parking le 3 mars, 12 €", "date", sent("2025-05-10"), ["2025-03-03"], ["2025-05-03"]),
    ("Parking : j'en prends le 3 €", "date", sent("2025-03-10"), [], ["2025-03-03"]),
    ("Taxi el día 3, 12 €", "date", sent("2025-03-10"), ["2025-03-03"], []),
    ("Taxi el día 3 de marzo, 12 €", "date", sent("2025-05-10"), ["2025-03-03"], ["2025-05-03"]),
    ("Táxi no dia 3, 12 €", "date", sent("2025-03-10"), ["2025-03-03"], []),
]

# (text, the day it names against Wednesday 2025-10-08 or None, days it must not offer nor back)
PARTS_OF_A_DAY = [
    ("Taxi home last night, 31 EUR", "2025-10-07", ["2025-10-08"]),
    ("Coffee this morning, 4 EUR", "2025-10-08", ["2025-10-07"]),
    ("Parking this afternoon, 6 EUR", "2025-10-08", []),
    ("Dinner tonight with the team, 80 EUR", "2025-10-08", ["2025-10-09"]),
    ("Lunch earlier today, 12 EUR", "2025-10-08", []),
    ("Hotel, the last night of the trip, 120 EUR", None, ["2025-10-07"]),  # an ordinal, not yesterday
    ("Taxi gestern Abend, 23 EUR", "2025-10-07", []),
    ("Taxi heute Morgen zum Bahnhof, 23 EUR", "2025-10-08", ["2025-10-09"]),  # Morgen: morning
    ("Taxi gestern Morgen, 23 EUR", "2025-10-07", ["2025-10-09"]),
    ("Taxi am Montag Morgen, 23 EUR", "2025-10-06", ["2025-10-09"]),
    ("Guten Morgen, Taxi zum Bahnhof 23 EUR", None, ["2025-10-09"]),
    ("Taxi morgen früh, 23 EUR", "2025-10-09", []),  # morgen: tomorrow
    ("Hotel letzte Nacht, 120 EUR", "2025-10-07", []),
    ("Die letzte Nacht im Hotel, 120 EUR", None, ["2025-10-07"]),
    ("Taxi hier soir, 23 €", "2025-10-07", []),
    ("Café ce matin, 4 €", "2025-10-08", []),
    ("Dîner ce soir, 40 €", "2025-10-08", []),
    ("Taxi anoche, 23 €", "2025-10-07", ["2025-10-08"]),
    ("Café esta mañana, 4 €", "2025-10-08", ["2025-10-09"]),  # mañana: morning
    ("Taxi ayer por la mañana, 23 €", "2025-10-07", ["2025-10-09"]),
    ("Taxi a las 9 de la mañana, 23 €", None, ["2025-10-09"]),
    ("Taxi ieri sera, 23 €", "2025-10-07", []),
    ("Caffè stamattina, 4 €", "2025-10-08", []),
    ("Táxi ontem à noite, 23 €", "2025-10-07", []),
    ("Café hoje de manhã, 4 €", "2025-10-08", []),
    ("Taxi gisteravond, 23 euro", "2025-10-07", []),
    ("Koffie vanochtend, 4 euro", "2025-10-08", []),
    ("Goede morgen! Taxi 23 euro", None, ["2025-10-09"]),
    ("Taksówka wczoraj wieczorem, 23 zł", "2025-10-07", []),
    ("Kawa dziś rano, 4 zł", "2025-10-08", []),
    ("昨晚打车 35元", "2025-10-07", []),
    ("今天早上咖啡 20元", "2025-10-08", []),
    ("今朝のタクシー 1200円", "2025-10-08", []),
    ("昨晩のタクシー 1200円", "2025-10-07", []),
    ("어젯밤 택시 18,400원", "2025-10-07", []),
    ("오늘 아침 커피 4,500원", "2025-10-08", []),
]


@pytest.mark.parametrize(("text", "field", "meta", "right", "wrong"), CASES)
def test_the_text_backs_what_it_states_and_nothing_else(
    text: str, field: str, meta: dict[str, Any] | None, right: list[Any], wrong: list[Any]
) -> None:
    choices = offered(text, field, meta)
    for value in right:
        assert value in choices and accepted(text, field, value, meta), (value, choices)
    for value in wrong:
        assert value not in choices and not accepted(text, field, value, meta), (value, choices)


@pytest.mark.parametrize(("text", "day", "wrong"), PARTS_OF_A_DAY)
def test_a_part_of_a_day_names_its_day(text: str, day: str | None, wrong: list[str]) -> None:
    meta = sent("2025-10-08")
    choices = offered(text, "date", meta)
    if day:
        assert day in choices and accepted(text, "date", day, meta), choices
        assert day not in offered(text, "date") and not accepted(text, "date", day)  # none without it
    for value in wrong:
        assert value not in choices and not accepted(text, "date", value, meta), (value, choices)


def test_a_date_the_text_does_not_state_leaves_only_null() -> None:
    assert offered("Booked the hotel for June, 300 EUR", "date", sent("2024-06-10")) == []
    assert offered("Hotel 12 March, 95 EUR + city tax 5 EUR, total 100 EUR", "date") == []


def test_the_grammar_offers_a_grouped_run_whole_and_two_numbers_apart() -> None:
    choices = offered("Hôtel Lutetia, 2 nuits : 1 250,00 EUR", "amount")
    assert 1250 in choices and 250 not in choices
    assert {1234, 567} <= set(offered("Ticket 1234 567 EUR", "amount"))  # no group: two numbers
