"""Lines of a list that state no item: totals, taxes, tender and change, rounding, loyalty, counts.

A till prints after its items what the customer paid and how (CASH, VISA, "Betrag gegeben"), the
change, a rounding adjustment, the tax summary, points earned, the number of items and a thank-you;
read as items they are extras (on real OCR'd receipts the 1.5B read 13 such lines as items beside 32
and 40 real ones: issue 53). They are told apart by their words in the languages the project reads
(English, French, German, Spanish, Malay, Chinese and Japanese summaries), and from an item's
description that merely holds such a word by the word after it: "TOTAL SALES (EXCLUDING GST)",
"Tax 6%" and "CASH :" are summaries, "Cash register paper", "Tax book" and "PRO BALANCE LAMB 400GM"
are items, since the word after the summary word ("register", "book", "LAMB") names what is sold.
Malaysia's SST is no summary word: "RAMBUTAN BERAS SST 5% 10KG" is rice on a real receipt.
"""

from __future__ import annotations

import re

# A total, a balance carried or brought forward, change: a summary in a dated list too.
TOTALS = re.compile(
    r"(?i)\b(?:sub-?\s?total|totals?|balance|amount due|change|summe|gesamt|zwischensumme|saldo|montant"
    r"|importe|kontostand|übertrag|vortrag|solde|brought forward|carried forward|jumlah|baki)\b"
    r"|小\s*計|合\s*計|小\s*计|合\s*计|总\s*计|お\s*預\s*り|お\s*釣\s*り|本期"
)
TAXES = re.compile(r"(?i)\b(?:vat|tax|mwst|ust|gst|hst|tva|iva|cukai|impuesto|\w*steuer)\b|消\s*費\s*税")
# What a till prints after the items: how it was paid, rounding, loyalty, the count, a thank-you.
# No totals: in a dated list (a statement, a folio) a payment is a line of its own, read with its credit
# mark ("13.04.24 Payment Mastercard **** 5521").
TENDER = re.compile(
    r"(?i)\b(?:cash|tunai|visa|master\s?card|amex|maestro|eftpos|credit card|debit card|paid by"
    r"|card payment|tender(?:ed)?|bezahlt|gegeben|rückgeld|bargeld|ec-karte|espèces|rendu|monnaie"
    r"|carte bancaire|efectivo|entregado|cambio|pagado|rounding(?: adj\w*)?"
    r"|round(?:ed)? ?(?:adj\w*|amt|off)|arrondi|rundung|redondeo|pembundaran"
    r"|loyalty|points? (?:earned|balance|redeemed|missed)|punktestand"
    r"|item count|no\.? of items|number of items|tot\.? qty|anzahl artikel|nombre d'articles|total qty"
    r"|thank you|terima kasih|merci|danke|gracias)\b"
)
# A discount or promotion under an item ("ITEM PROMO @12.99", "ITEM DISCOUNT"): part of the item above,
# no item of its own, and no end of the list (items follow it).
ADJUSTMENTS = re.compile(r"(?i)\b(?:discount|promo(?:tion)?|rabatt|remise|descuento|potongan|you saved)\b")
# Words that may follow a summary word in a summary: qualifiers, the other summary words, currencies.
# Any other word of three letters or more after it names what is sold.
_FOLLOWERS = """
    sub grand net gross final total totals sales amount amt due payable paid pay payment tendered
    tender received change cash card credit debit visa rounding round rounded adj adjustment after
    before incl including inclusive inc excl excluding exclusive exc excluded summary code rate invoice
    qty quantity items item count balance tax vat gst service this for you thank your our with and
    points earned redeemed missed loyalty member bonus new old previous opening closing brought carried
    forward alter alt neuer neu ancien nouveau anterior nuevo actual montant solde importe summe gesamt
    betrag zahlen payer pagar ttc simplified soll haben blatt page seite feuille hoja per auf from vom
    von zum zur bis des aux del the include includes included claims saving savings stamp stamps
    returned receipt info information details myr eur usd gbp sgd chf jpy cny rmb cad aud sek nok dkk
    pln inr
"""
BESIDE = frozenset(_FOLLOWERS.split())
# A registration number's line ("GST ID : 001609584640", "GST REG NO"): a header field, no summary.
NUMBERS = frozenset({"id", "no", "nr", "reg", "registration", "number", "nummer", "numéro"})
TOTAL = re.compile(r"(?i)(?:sub-?\s?)?totals?")
WORD = re.compile(r"[A-Za-zÀ-ɏ]+")  # Latin words: Chinese and Japanese write summaries unspaced


def _describes(text: str, end: int) -> bool:
    """Whether the word right after a summary word (ending at `end`) names what is sold: three letters
    or more and not a word a summary uses ("Tax book", "Cash register paper", "PRO BALANCE LAMB" are
    items). The word before it says nothing: "NETT TOTAL", "City tax" and "Sales tax" are summaries."""
    after = WORD.match(text[end:].lstrip(" :.-–(/@#*"))
    if after is None:
        return False
    word = after.group().lower()
    return word in NUMBERS or (len(word) >= 3 and word not in BESIDE)


def states(pattern: re.Pattern[str], text: str) -> bool:
    """Whether `text` holds a word of `pattern` that reads as a summary, not inside a description. A
    total is one whatever follows it ("TOTAL DISCOUNT", "TOTAL FACTURE : 56.00 DH")."""
    return any(TOTAL.fullmatch(m.group()) or not _describes(text, m.end()) for m in pattern.finditer(text))
