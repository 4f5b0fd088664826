"""Relative and year-less dates in Chinese, Japanese and Korean, resolved against a reference date.

dateparser reads some of these (昨天, 前天, 9月28日) but not others (上周五, 本周一, 8号, 上个月25号,
昨晚), and misreads 10月2日 as 2010-02-08 (FINDINGS.md), so all of them are read here, from a small
table tested per language:
- relative days and their parts: 今天 今早 今晨 今晚 / 昨天 昨晚 昨夜 / 前天 / 大前天 / 明天 / 后天 (zh);
  今日 今朝 今晩 今夜 / 昨日 昨晩 / 一昨日 / 明日 (ja); 오늘 / 어제 어젯밤 지난밤 / 그저께 / 내일 (ko);
- weekdays relative to the week (weeks start on Monday): 上周五, 本周一, 这周三, 下星期二, 先週の金曜日,
  지난주 금요일, 이번 주 월요일, 다음주 화요일;
- month-day and day-only forms: 9月28日, 8号, 上个月25号, taking the year (and month) from the
  reference date: the nearest such date not after it, unless the text names the month (上个月, 本月);
  in a text written in Han or kana, a month/day with a slash too (10/6 is 6 October, as Japanese and
  Chinese write it);
- days and weeks before or after: 3日前, 三天前, 2週間前, 5天后.
Every reading is `derived`: without the reference date none of them names a day.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date, timedelta

from formwork.tasks.grounding.ordinal_days import latest_day, nearest_not_after
from formwork.tasks.grounding.reading import Reading

NUMERAL = {c: n for n, c in enumerate("〇一二三四五六七八九")} | {"十": 10, "两": 2, "兩": 2}

DAYS = {
    "大前天": -3, "前天": -2, "昨天": -1, "昨晚": -1, "昨夜": -1, "今天": 0, "今晚": 0, "今早": 0,
    "今晨": 0, "明天": 1, "后天": 2, "後天": 2, "一昨日": -2, "おととい": -2, "昨日": -1, "きのう": -1,
    "昨晩": -1, "今日": 0, "きょう": 0, "今朝": 0, "今晩": 0, "今夜": 0, "明後日": 2, "明日": 1,
    "あした": 1, "그저께": -2, "그제": -2, "어제": -1, "어젯밤": -1, "어젯저녁": -1, "지난밤": -1,
    "오늘": 0, "내일": 1, "모레": 2,
}  # fmt: skip
RELATIVE_DAY = re.compile("|".join(sorted(DAYS, key=len, reverse=True)))
WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
           "月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5,
           "월": 0, "화": 1, "수": 2, "목": 3, "금": 4, "토": 5, "일": 6}  # fmt: skip
WEEK_SHIFT = {"上": -1, "上个": -1, "上個": -1, "本": 0, "这": 0, "这个": 0, "這": 0, "下": 1, "下个": 1,
              "先": -1, "今": 0, "来": 1, "지난": -1, "저번": -1, "이번": 0, "다음": 1}  # fmt: skip
# 上周五, 本周一, 这个星期三, 下礼拜天; Japanese 先週の金曜日, 今週月曜. Bare 周五 / 金曜日: this week's,
# or last week's when that day is still to come.
ZH_WEEK = re.compile(r"(上个|上個|这个|下个|上|本|这|這|下)?(?:周|週|星期|礼拜|禮拜)([一二三四五六日天])")
JA_WEEK = re.compile(r"(先|今|来)?(?:週の?)?([月火水木金土日])曜日?")
# Korean 지난주 금요일 (last week's Friday), 이번 주 월요일, 다음주 화요일; bare 금요일 as bare 周五.
KO_WEEK = re.compile(r"(?:(지난|저번|이번|다음)\s*주\s*)?([월화수목금토일])요일")
MONTH_DAY = re.compile(
    r"(?<![\d年月])(上个月|上個月|上月|本月|这个月|這個月|(\d{1,2})\s*月)?\s*(\d{1,2})\s*(日|号|號)(?!\d)"
)

# 3日前, 三天前, 2週間前, 一周后: N days or weeks before (前) or after (後, 后) the reference date.
SHIFTED = re.compile(
    r"(?<![\d０-９一二三四五六七八九十])([0-9０-９]{1,3}|[一二两兩三四五六七八九十]{1,3})\s*"
    r"(日|天|週間|周間|周|週|星期|个星期|個星期)\s*(前|以前|之前|後|后|以后|以後|之后)"
)
MONTH_SLASH = re.compile(r"(?<![\d/.])(\d{1,2})/(\d{1,2})(?![\d/])")
CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def _count(written: str) -> int | None:
    """3, ３ or 三 / 十二 / 二十 as a number (up to 99), or None."""
    written = unicodedata.normalize("NFKC", written)
    if written.isdigit():
        return int(written)
    if "十" in written:
        tens, _, units = written.partition("十")
        return NUMERAL.get(tens, 1 if not tens else -100) * 10 + NUMERAL.get(units, 0 if not units else -100)
    return NUMERAL.get(written) if len(written) == 1 else None


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
        return nearest_not_after(reference, int(month), day)
    return latest_day(reference, day)  # as "the 8th" alone: this month's, else the month before


def month_day_spans(text: str) -> list[tuple[int, int]]:
    """Where a year-less 9月28日 or 8号 is written: its digits are a date, never an amount."""
    spans = [m.span() for m in MONTH_DAY.finditer(text)] + [m.span() for m in SHIFTED.finditer(text)]
    return spans + [m.span() for m in _slashed(text)]


def _slashed(text: str) -> list[re.Match[str]]:
    """The month/day slashes (10/6) of a text written in Han or kana that name a real month and day."""
    if not CJK.search(text):
        return []
    return [m for m in MONTH_SLASH.finditer(text) if _valid(2000, int(m.group(1)), int(m.group(2)))]


def cjk_readings(text: str, reference: date | None, anchor: str | None) -> list[Reading]:
    """Every CJK relative or year-less date of `text`, resolved against `reference` (none without one)."""
    if reference is None:
        return []
    found = [
        Reading(reference + timedelta(days=DAYS[m.group()]), m.span(), "derived", anchor)
        for m in RELATIVE_DAY.finditer(text)
    ]
    for m in [*ZH_WEEK.finditer(text), *JA_WEEK.finditer(text), *KO_WEEK.finditer(text)]:
        found.append(
            Reading(_weekday(reference, m.group(1), WEEKDAY[m.group(2)]), m.span(), "derived", anchor)
        )
    for m in MONTH_DAY.finditer(text):
        if m.group(4) == "日" and not m.group(1):
            continue  # a bare 3日 is as often "3 days" (三日間) as the 3rd
        day = _month_day(reference, m.group(1) if not m.group(2) else None, m.group(2), int(m.group(3)))
        if day:
            found.append(Reading(day, m.span(), "derived", anchor))
    for m in _slashed(text):
        day = _month_day(reference, None, m.group(1), int(m.group(2)))
        if day:
            found.append(Reading(day, m.span(), "derived", anchor))
    for m in SHIFTED.finditer(text):
        count = _count(m.group(1))
        if count is not None and count >= 0:
            days = count * (1 if m.group(2) in "日天" else 7) * (-1 if "前" in m.group(3) else 1)
            found.append(Reading(reference + timedelta(days=days), m.span(), "derived", anchor))
    return found
