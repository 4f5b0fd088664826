"""Numbers written in words or native numerals, with their spans: text2num for the languages of
Europe, cn2an for Chinese and Japanese numerals.

- Number words (en, fr, es, pt, de, nl, da, it): text2num's `find_numbers` reads a stream of word
  tokens and says which tokens form each number, so the span is the words themselves. Its threshold
  keeps "one coffee" or "un café" from reading as amounts; ordinals ("third") are no amounts. Only
  the record's own languages are read (`language.languages`: "Otto paid the taxi" is English, and
  backs no Italian 8), and a capitalised word inside a name is no number ("the Elf Hotel", "Cafe
  Mille"): one after a word of the same sentence, or before another capitalised word. Number words
  joined by a hyphen to digits or a word are a name too ("7-Eleven" backs no 11, nor "Eleven-Madison"),
  unless that word is another number the text writes in words (a range, "ten-twelve") or a currency
  ("a twenty-five-dollar fare"); the hyphens inside a number ("forty-two", "vingt-cinq") are its own.
- Chinese and Japanese numerals: runs of 零一二…九十百千万亿 (两, 〇, 萬, 億, 壹贰…, digits before a
  unit: 1.2万, ３千) read by `cn2an.cn2an(run, "smart")`; colloquial money forms around it: 十二块五 is
  12.5 (块/元 then one digit: tenths), 三元五角 is 3.5. A single numeral reads only before a counter
  or currency (三元, 五个), since 一 also writes "together" (一起) and "a bit" (一下); an ordinal
  (第三) or a numeral before 月, 日, 点, 岁... (a date, a time, an age) is no amount. A run counts only
  next to a counter, a currency or a word of paying, or where a run with a unit closes its clause
  (午饭三百二: 十万火急 "most urgent", 八百屋 "greengrocer" are words), and a few
  idioms and shop names that hold a counter are never read (STOP). A run may leave out its leading 一
  (千五百 is 1500) and mix digits with units (２万４８００ is 24800).
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from functools import cache

from formwork.tasks.grounding.language import languages as detected
from formwork.tasks.grounding.reading import Reading, inside

WORD_LANGUAGES = ("en", "fr", "es", "pt", "de", "nl", "da", "it")
TOKEN = re.compile(r"\w+|[^\w\s]")
HAN = "零〇一二两三四五六七八九十百千万亿壹贰叁肆伍陆柒捌玖拾佰仟萬億兩"
DIGIT = "0-9０-９"
# A native numeral run, possibly led by digits (1.2万); then an optional 块/元 + tenths (+ 角/毛).
HAN_RUN = re.compile(
    rf"(?<![{HAN}{DIGIT}.．第])((?:[{DIGIT}]+(?:[.．][{DIGIT}]+)?)?[{HAN}]+(?:[{DIGIT}]+[{HAN}]+)*"
    rf"(?:(?<=[千万萬亿億])[{DIGIT}]+)?)"
    rf"(?:([块塊元圆])([一二三四五六七八九])(?:[角毛])?)?"
)
# A numeral before these is a date, a time, an age or a span of time, not an amount (十二月, 三点).
NOT_AMOUNT = re.compile(r"[月日号號点點时時分秒岁歲年周週]")
COUNTER = re.compile(
    r"日元|日圆|美元|欧元|英镑|港币|港元|人民币|[块塊元圆円个個件张張本杯位人次晚天份瓶台套箱枚冊泊名]"
)
# ...or after a currency or a word of paying: ¥三百, 花了三百二, 年费两万, 合計千五百.
CURRENCY_BEFORE = re.compile(
    r"(?:[¥￥$€£费費代]|人民币|日元|金额|金額|合计|合計|共计|总共|一共|花了|花费|付了|支付|借了|料金|价格|價格)[:：]?\s*$"
)
# ...or a run with a unit that closes its clause: 午饭三百二, 借了两万。 (not 十万火急, 八百屋).
CLOSES = re.compile(r"\s|$|[，。,.;；！!？?、)）]")
# Idioms and shop names whose numerals are no amount even beside a counter (三三两两人: "in twos and
# threes"; 五一: May Day; 八百屋: a greengrocer's).
STOP = re.compile("十万火急|三三两两|三三兩兩|一一|五一|八百屋")
MIXED = re.compile(r"^(?:(\d+)[亿億])?(?:(\d+)[万萬])?(?:(\d+)千)?(\d+)?$")  # 2万4800, after NFKC
# Capitalised words after a number word that do not make it a name: "Zwanzig Euro", "Cinq Euros".
CURRENCY_WORDS = frozenset(
    {"euro", "euros", "dollar", "dollars", "franken", "francs", "franc", "pfund", "kronen"}
)
UNIT = {"千": 3, "万": 4, "萬": 4, "亿": 8, "億": 8}
HYPHENS = "-\u2010\u2011"  # hyphen-minus, hyphen, non-breaking hyphen
RUN_BEFORE = re.compile(r"[^\W_]+$")  # the letters or digits just before a hyphen
RUN_AFTER = re.compile(r"[^\W_]+")
DIGIT_UNIT = re.compile(rf"^([{DIGIT}]+(?:[.．][{DIGIT}]+)?)([千万萬亿億])$")


class _Token:
    """A word token as text2num's `Token` protocol wants it, with its span in the text."""

    def __init__(self, match: re.Match[str]):
        self.word, self.span = match.group(), match.span()

    def text(self) -> str:
        return self.word

    def nt_separated(self, previous: _Token) -> bool:
        return False

    def not_a_number_part(self) -> bool:
        return False


def word_readings(text: str, languages: tuple[str, ...] | None = None) -> list[Reading]:
    """Every cardinal written in words, in any of `languages` (None: the text's own, as detected):
    "forty-two" -> 42 at its words."""
    wanted = tuple(
        code for code in (detected(text) if languages is None else languages) if code in WORD_LANGUAGES
    )
    if not wanted:
        return []
    from text_to_num import find_numbers

    tokens = [_Token(m) for m in TOKEN.finditer(text) if not m.group().isdigit()]
    found: dict[tuple[int, int], Reading] = {}
    for lang in wanted:
        for hit in find_numbers(tokens, lang):
            span = (tokens[hit.start].span[0], tokens[hit.end - 1].span[1])
            written = text[span[0] : span[1]]
            if hit.is_ordinal or not any(c.isalpha() for c in written) or _in_name(text, tokens, hit):
                continue
            found.setdefault(span, Reading(Decimal(hit.text), span, "normalised"))
    numbers = list(found)
    return [reading for span, reading in found.items() if not _hyphenated(text, span, numbers)]


def _hyphenated(text: str, span: tuple[int, int], numbers: list[tuple[int, int]]) -> bool:
    """Whether the number words at `span` are joined by a hyphen to digits or a word that is neither
    one of the text's other `numbers` in words nor a currency: part of a name, "7-Eleven"."""
    joined = []
    if span[0] >= 2 and text[span[0] - 1] in HYPHENS:
        before = RUN_BEFORE.search(text, max(0, span[0] - 41), span[0] - 1)
        joined += [before.span()] if before else []
    if span[1] < len(text) and text[span[1]] in HYPHENS:
        after = RUN_AFTER.match(text, span[1] + 1)
        joined += [after.span()] if after else []
    return any(not inside(run, numbers) and text[run[0] : run[1]].lower() not in CURRENCY_WORDS
               for run in joined)  # fmt: skip


def _in_name(text: str, tokens: list[_Token], hit: object) -> bool:
    """Whether a capitalised number word is part of a name: after a word of its own line and sentence
    ("Cafe Mille", "paid Otto"), or before another capitalised word ("Elf Hotel")."""
    start, end = hit.start, hit.end  # type: ignore[attr-defined]
    if not tokens[start].word.istitle():
        return False
    before = tokens[start - 1] if start > 0 else None
    if (
        before is not None
        and before.word[0].isalnum()
        and "\n" not in text[before.span[1] : tokens[start].span[0]]
    ):
        return True
    after = tokens[end] if end < len(tokens) else None
    gap = text[tokens[end - 1].span[1] : after.span[0]] if after else ""
    named = after is not None and after.word.istitle() and after.word.lower() not in CURRENCY_WORDS
    return named and "\n" not in gap


@cache
def _han_value(run: str) -> Decimal | None:
    import cn2an

    run = unicodedata.normalize("NFKC", run)
    exact = DIGIT_UNIT.match(run)
    if exact:
        return Decimal(exact.group(1)) * 10 ** UNIT[exact.group(2)]
    mixed = MIXED.match(run)
    if mixed and any(mixed.groups()):
        return sum(Decimal(g or 0) * 10**p for g, p in zip(mixed.groups(), (8, 4, 3, 0), strict=True))
    if run[0] in "百千万萬佰仟":
        run = "一" + run  # 千五百: the 一 a writer leaves out
    try:
        value = cn2an.cn2an(run, "smart")
    except (ValueError, KeyError, IndexError):
        return None
    return Decimal(str(value)).normalize() if float(value).is_integer() is False else Decimal(int(value))


def han_readings(text: str) -> list[Reading]:
    """Every Chinese or Japanese numeral: 三百二 -> 320, 十二块五 -> 12.5, 两万 -> 20000, 1.2万 -> 12000."""
    found = []
    stopped = [m.span() for m in STOP.finditer(text)]
    for m in HAN_RUN.finditer(text):
        run, _, tenths = m.groups()
        counted = COUNTER.match(text, m.end(1)) or CURRENCY_BEFORE.search(text, 0, m.start())
        counted = counted or (bool(set(run) & set("十百千万萬亿億拾佰仟")) and CLOSES.match(text, m.end()))
        if not counted or (NOT_AMOUNT.match(text, m.end()) and not COUNTER.match(text, m.end())):
            continue
        if any(start < m.end() and m.start() < end for start, end in stopped):
            continue
        if run.isdigit():
            continue  # plain digits are the digit reader's
        value = _han_value(run)
        if value is None:
            continue
        if tenths:
            value += Decimal(_han_value(tenths) or 0) / 10
        found.append(Reading(value, m.span() if tenths else m.span(1), "normalised"))
    return found
