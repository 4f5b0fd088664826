"""Numbers written in words or native numerals, with their spans: text2num for the languages of
Europe, cn2an for Chinese and Japanese numerals.

- Number words (en, fr, es, pt, de, nl, da, it): text2num's `find_numbers` reads a stream of word
  tokens and says which tokens form each number, so the span is the words themselves. Its threshold
  keeps "one coffee" or "un café" from reading as amounts; ordinals ("third") are no amounts.
- Chinese and Japanese numerals: runs of 零一二…九十百千万亿 (两, 〇, 萬, 億, 壹贰…, digits before a
  unit: 1.2万, ３千) read by `cn2an.cn2an(run, "smart")`; colloquial money forms around it: 十二块五 is
  12.5 (块/元 then one digit: tenths), 三元五角 is 3.5. A single numeral reads only before a counter
  or currency (三元, 五个), since 一 also writes "together" (一起) and "a bit" (一下); an ordinal
  (第三) or a numeral before 月, 日, 点, 岁... (a date, a time, an age) is no amount.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from functools import cache

from formwork.tasks.grounding.reading import Reading

WORD_LANGUAGES = ("en", "fr", "es", "pt", "de", "nl", "da", "it")
TOKEN = re.compile(r"\w+|[^\w\s]")
HAN = "零〇一二两三四五六七八九十百千万亿壹贰叁肆伍陆柒捌玖拾佰仟萬億兩"
DIGIT = "0-9０-９"
# A native numeral run, possibly led by digits (1.2万); then an optional 块/元 + tenths (+ 角/毛).
HAN_RUN = re.compile(
    rf"(?<![{HAN}{DIGIT}.．第])((?:[{DIGIT}]+(?:[.．][{DIGIT}]+)?)?[{HAN}]+(?:[{DIGIT}]+[{HAN}]+)*)"
    rf"(?:([块塊元圆])([一二三四五六七八九])(?:[角毛])?)?"
)
# A numeral before these is a date, a time, an age or a span of time, not an amount (十二月, 三点).
NOT_AMOUNT = re.compile(r"[月日号號点點时時分秒岁歲年周週]")
COUNTER = re.compile(r"[块塊元圆円个個件张張本杯位人次晚天份瓶台套箱]")
UNIT = {"千": 3, "万": 4, "萬": 4, "亿": 8, "億": 8}
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


def word_readings(text: str, languages: tuple[str, ...] = WORD_LANGUAGES) -> list[Reading]:
    """Every cardinal written in words, in any of `languages`: "forty-two" -> 42 at its words."""
    from text_to_num import find_numbers

    tokens = [_Token(m) for m in TOKEN.finditer(text) if not m.group().isdigit()]
    found: dict[tuple[int, int], Reading] = {}
    for lang in languages:
        for hit in find_numbers(tokens, lang):
            span = (tokens[hit.start].span[0], tokens[hit.end - 1].span[1])
            written = text[span[0] : span[1]]
            if hit.is_ordinal or not any(c.isalpha() for c in written):
                continue
            found.setdefault(span, Reading(Decimal(hit.text), span, "normalised"))
    return list(found.values())


@cache
def _han_value(run: str) -> Decimal | None:
    import cn2an

    run = unicodedata.normalize("NFKC", run)
    exact = DIGIT_UNIT.match(run)
    if exact:
        return Decimal(exact.group(1)) * 10 ** UNIT[exact.group(2)]
    try:
        value = cn2an.cn2an(run, "smart")
    except (ValueError, KeyError, IndexError):
        return None
    return Decimal(str(value)).normalize() if float(value).is_integer() is False else Decimal(int(value))


def han_readings(text: str) -> list[Reading]:
    """Every Chinese or Japanese numeral: 三百二 -> 320, 十二块五 -> 12.5, 两万 -> 20000, 1.2万 -> 12000."""
    found = []
    for m in HAN_RUN.finditer(text):
        run, _, tenths = m.groups()
        if (len(run) == 1 and not COUNTER.match(text, m.end(1))) or NOT_AMOUNT.match(text, m.end()):
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
