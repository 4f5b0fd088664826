"""Relative and year-less dates in Chinese, Japanese and Korean, resolved against a reference date.

dateparser reads some of these (昨天, 前天, 9月28日) but not others (上周五, 本周一, 8号, 上个月25号,
昨晚), and misreads 10月2日 as 2010-02-08 (FINDINGS.md), so all of them are read here, from a small
table tested per language:
- relative days: 今天 / 昨天 昨晚 / 前天 / 大前天 / 明天 / 后天 (zh); 今日 昨日 一昨日 明日 (ja); 오늘 어제
  그저께 내일 (ko);
- weekdays relative to the week (weeks start on Monday): 上周五, 本周一, 这周三, 下星期二, 先週の金曜日;
- month-day and day-only forms: 9月28日, 8号, 上个月25号, taking the year (and month) from the
  reference date: the nearest such date not after it, unless the text names the month (上个月, 本月).
Every reading is `derived`: without the reference date none of them names a day.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from formwork.tasks.grounding.reading import Reading

DAYS = {
    "大前天": -3, "前天": -2, "昨天": -1, "昨晚": -1, "昨夜": -1, "今天": 0, "今晚": 0, "今早": 0,
    "明天": 1, "后天": 2, "後天": 2, "一昨日": -2, "おととい": -2, "昨日": -1, "きのう": -1, "今日": 0,
    "きょう": 0, "明後日": 2, "明日": 1, "あした": 1, "그저께": -2, "그제": -2, "어제": -1, "오늘": 0,
    "내일": 1, "모레": 2,
}  # fmt: skip
RELATIVE_DAY = re.compile("|".join(sorted(DAYS, key=len, reverse=True)))
WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
           "月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5}  # fmt: skip
WEEK_SHIFT = {"上": -1, "上个": -1, "上個": -1, "本": 0, "这": 0, "这个": 0, "這": 0, "下": 1, "下个": 1,
              "先": -1, "今": 0, "来": 1}  # fmt: skip
# 上周五, 本周一, 这个星期三, 下礼拜天; Japanese 先週の金曜日, 今週月曜. Bare 周五 / 金曜日: this week's,
# or last week's when that day is still to come.
ZH_WEEK = re.compile(r"(上个|上個|这个|下个|上|本|这|這|下)?(?:周|週|星期|礼拜|禮拜)([一二三四五六日天])")
JA_WEEK = re.compile(r"(先|今|来)?(?:週の?)?([月火水木金土日])曜日?")
MONTH_DAY = re.compile(
    r"(?<![\d年月])(上个月|上個月|上月|本月|这个月|這個月|(\d{1,2})\s*月)?\s*(\d{1,2})\s*(日|号|號)(?!\d)"
)


def _month_back(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 - months
    return index // 12, index % 12 + 1


def _valid(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _weekday(reference: date, shift: str | None, weekday: int) -> date:
    monday = reference - timedelta(days=reference.weekday())
    if shift is None:  # a bare weekday: the nearest one not after the reference
        day = monday + timedelta(days=weekday)
        return day if day <= reference else day - timedelta(days=7)
    return monday + timedelta(days=7 * WEEK_SHIFT[shift] + weekday)


def _month_day(reference: date, named: str | None, month: str | None, day: int) -> date | None:
    """The date a year-less 9月28日, 8号 or 上个月25号 means: in the named month, else the nearest not
    after the reference."""
    if named:
        back = 1 if named.startswith("上") else 0
        return _valid(*_month_back(reference, back), day)
    if month:
        this_year = _valid(reference.year, int(month), day)
        if this_year is None or this_year <= reference:
            return this_year
        return _valid(reference.year - 1, int(month), day)
    for back in range(3):  # this month, else the month before (31号 on the 2nd: two months back)
        found = _valid(*_month_back(reference, back), day)
        if found and found <= reference:
            return found
    return None


def month_day_spans(text: str) -> list[tuple[int, int]]:
    """Where a year-less 9月28日 or 8号 is written: its digits are a date, never an amount."""
    return [m.span() for m in MONTH_DAY.finditer(text)]


def cjk_readings(text: str, reference: date | None, anchor: str | None) -> list[Reading]:
    """Every CJK relative or year-less date of `text`, resolved against `reference` (none without one)."""
    if reference is None:
        return []
    found = [
        Reading(reference + timedelta(days=DAYS[m.group()]), m.span(), "derived", anchor)
        for m in RELATIVE_DAY.finditer(text)
    ]
    for m in ZH_WEEK.finditer(text):
        found.append(
            Reading(_weekday(reference, m.group(1), WEEKDAY[m.group(2)]), m.span(), "derived", anchor)
        )
    for m in JA_WEEK.finditer(text):
        found.append(
            Reading(_weekday(reference, m.group(1), WEEKDAY[m.group(2)]), m.span(), "derived", anchor)
        )
    for m in MONTH_DAY.finditer(text):
        if m.group(4) == "日" and not m.group(1):
            continue  # a bare 3日 is as often "3 days" (三日間) as the 3rd
        day = _month_day(reference, m.group(1) if not m.group(2) else None, m.group(2), int(m.group(3)))
        if day:
            found.append(Reading(day, m.span(), "derived", anchor))
    return found
