"""Write the irregular long gold documents of examples/gold/long/: lists written as banks, tills and people
really write them, with the gold each states.

benchmarks/make_long_gold.py writes lists a program printed, one item a line. These are the other
kind, each with what makes a list hard to read item by item (issue 43):
- a card statement: a summary block with amounts, payments and a refund among the lines, wrapped
  descriptions, foreign-currency notes under a line, a page break that repeats the header, a pending
  section that is not part of the statement, thousands separators, dates without a year (the record's
  meta gives the statement's date);
- a supermarket receipt read by OCR: a product's weight or multi-buy on a line of its own under its
  name, noise inside words and numbers (`l` for 1, `O` for 0, `S` for 5), totals, tender and change;
- a Japanese supermarket receipt: full-width digits, a quantity line under its product, tax marks,
  小計/合計/お預り/お釣り;
- a mail thread, newest first: To and Cc lines naming people who never write, a person who writes
  twice (signed once in full, once with a first name), a sender whose name is only in the From
  header, a reply quoting the message before it.
Written as held out, measured once (BENCHMARKS section 34), then looked at to change the rules, so now
irregular sets like the others: a German account statement (debits and credits marked S and H,
two-line booking texts), a hotel folio laid out in spaced columns with a page break and a payment
among the charges. The held-out sets are written by benchmarks/make_held_out_gold.py (with this
script's mail thread, where a forwarded message brings in a person who never writes to the thread).

A value that OCR noise leaves unreadable ("£1.6O") is null in the gold: the text does not state a
number there, and a value is only ever taken from what the text states. Every other value is written
with the text, so the judge given the gold must find it (`benchmarks/long_texts.py --judge-only`).

    .venv/bin/python benchmarks/make_irregular_gold.py
"""

from __future__ import annotations

from typing import Any

from make_long_gold import write  # benchmarks/, beside this script

Row = dict[str, Any]


def _money(amount: float, thousands: str = ",", decimal: str = ".") -> str:
    whole, cents = f"{amount:,.2f}".split(".")
    return whole.replace(",", thousands) + decimal + cents


# -- a UK card statement -------------------------------------------------------------------------------

PURCHASES = [  # day, description as printed on its first line, amount, lines printed under it
    ("06 May", "TESCO STORES 2041 LONDON", 34.17, []),
    ("07 May", "TFL TRAVEL CH TFL.GOV.UK/CP", 7.80, []),
    ("08 May", "PRET A MANGER KINGS CROSS", 9.45, []),
    ("09 May", "AMAZON.CO.UK*7Y2HH04", 23.99, ["AMAZON.CO.UK/BILL"]),
    ("10 May", "SHELL ISLINGTON 4432", 61.20, []),
    (
        "11 May",
        "HOTEL ZUERICH AM LIMMAT",
        212.48,
        ["ZURICH CHE", "CHF 234.00 @ 1.1013 NON-STERLING FEE 5.81"],
    ),
    ("12 May", "SBB CFF FFS ZURICH HB", 48.63, ["CHF 53.00 @ 1.0899"]),
    ("14 May", "BRITISH AIRWAYS 1252222", 1084.20, ["LONDON GBR", "PASSENGER O'CONNOR/JAMES"]),
    ("15 May", "WAITROSE 512 ANGEL", 52.36, []),
    ("16 May", "NETFLIX.COM", 10.99, []),
    ("17 May", "DELIVEROO LONDON", 23.40, []),
    ("18 May", "BOOTS 1186 ISLINGTON", 12.75, []),
    ("20 May", "JOHN LEWIS OXFORD ST", 89.00, []),
    ("21 May", "UBER *TRIP HELP.UBER.COM", 14.32, []),
    ("22 May", "ITSU ANGEL", 8.95, []),
    ("23 May", "VODAFONE LTD", 30.00, ["DIRECT DEBIT REF 77120-4"]),
    ("24 May", "TESCO STORES 2041 LONDON", 41.06, []),
    ("25 May", "SPOTIFY P1F2A7C4E1", 11.99, []),
    ("27 May", "SAINSBURYS S/MKTS 0611", 27.18, []),
    ("28 May", "THE BREAKFAST CLUB N1", 19.50, []),
    ("29 May", "APPLE.COM/BILL", 2.99, []),
    ("30 May", "TFL TRAVEL CH TFL.GOV.UK/CP", 9.60, []),
    ("01 Jun", "WH SMITH KINGS CROSS", 6.49, []),
    ("03 Jun", "PRET A MANGER KINGS CROSS", 7.15, []),
]


def _statement_line(day: str, description: str, amount: str) -> str:
    return f"{day}   {description:<44}{amount:>11}"


def statement_uk() -> Row:
    total = round(sum(p[2] for p in PURCHASES), 2)
    payments = [
        ("07 May", "PAYMENT RECEIVED - THANK YOU", "-1,250.00"),
        ("15 May", "REFUND AMAZON.CO.UK*2K4LL91", "-23.99 CR"),
    ]
    previous, credits = 1250.00, 1273.99
    header = "Date     Description                                        Amount (GBP)"
    lines = [
        "NORTHGATE BANK plc                                   Credit Card Statement",
        "Card holder: JAMES O'CONNOR                          Card number: **** **** **** 4417",
        "Statement date: 05 June 2024                         Statement period: 06 May - 04 June 2024",
        "",
        "Your account summary                                         GBP",
        f"Previous balance                                        {_money(previous):>9}",
        f"Payments and credits                                   -{_money(credits):>9}",
        f"New purchases                                           {_money(total):>9}",
        f"New balance                                             {_money(previous - credits + total):>9}",
        "Minimum payment due 25 June 2024                           48.73",
        "",
        header,
        "",
        "PAYMENTS AND CREDITS",
        *(_statement_line(*p) for p in payments),
        "",
        "PURCHASES",
    ]
    for n, (day, description, amount, under) in enumerate(PURCHASES):
        if n == 14:  # the page ends, and the next repeats the bank's header and the columns
            lines += [
                "",
                "                                                            Page 1 of 2",
                "\f",
                "NORTHGATE BANK plc    Credit Card Statement    JAMES O'CONNOR    Page 2 of 2",
                header,
                "PURCHASES (continued)",
            ]
        lines.append(_statement_line(day, description, _money(amount)))
        lines += [f"         {line}" for line in under]
    lines += [
        "",
        f"Total new purchases                                          {_money(total):>9}",
        "",
        "PENDING TRANSACTIONS (not yet posted, not included in this statement)",
        _statement_line("04 Jun", "DELIVEROO LONDON", "18.40"),
        _statement_line("04 Jun", "UBER *TRIP HELP.UBER.COM", "11.72"),
        _statement_line("05 Jun", "WAITROSE 512 ANGEL", "27.35"),
        "",
        "Interest rate: purchases 24.9% p.a. (variable). Please see overleaf.",
    ]
    expenses = [
        {"date": f"2024-{'05' if day.endswith('May') else '06'}-{day[:2]}", "description": d, "amount": a}
        for day, d, a, _ in PURCHASES
    ]
    gold = {"holder": "JAMES O'CONNOR", "currency": "GBP", "total": total, "expenses": expenses}
    return {"id": "long-statement-uk", "text": "\n".join(lines), "meta": {"reference_date": "2024-06-05"},
            "gold": gold}  # fmt: skip


# -- an OCR'd supermarket receipt ----------------------------------------------------------------------

GROCERIES = [  # printed name, quantity, amount, how the amount is printed, the line under the name
    ("SAINSBURYS BASICS MILK 2PT", None, 1.15, "£1.15", None),
    ("HOVIS SEED SENSATIONS 800G", None, None, "£1.6O", None),
    ("BANANAS LOOSE", 0.915, 0.67, "£0.67", "0.915 kg @ £0.73/kg"),
    ("JS FREE RANGE EGGS 12", None, 3.25, "£3.25", None),
    ("CATHEDRAL CITY MATURE 350G", 2, 5.50, "£5.50", "2 @ £2.75"),
    ("JS BASMATI RICE 1KG", None, None, "£l.85", None),
    ("HEINZ BAKED BEANS 4PK", None, 3.20, "£3.20", None),
    ("JS ORGANIC CARROTS 1KG", None, 0.95, "£0.95", None),
    ("WARBURTONS CRUMPETS 6PK", None, 1.00, "£1.00", None),
    ("RED ONIONS LOOSE", 0.484, 0.53, "£0.53", "0.484 kg @ £1.10/kg"),
    ("ANCHOR SPREADABLE 500G", None, 3.75, "£3.75", None),
    ("JS GREEK STYLE YOGURT", 3, 3.60, "£3.60", "3 @ £1.20"),
    ("TROPICANA ORANGE 1.4L", None, 3.50, "£3.50", None),
    ("PG TIPS 80 BAGS", None, None, "£2.8S", None),
    ("JS CHICKEN BREAST FILLETS", None, 4.95, "£4.95", None),
    ("LURPAK SLIGHTLY SALTED", None, 2.15, "£2.15", None),
    ("DOVE CREAM BAR 4PK", None, 2.25, "£2.25", None),
    ("FAIRY LIQUID ORIGINAL", None, 1.50, "£1.50", None),
    ("ANDREX CLASSIC CLEAN 9", None, 4.50, "£4.50", None),
    ("JS AVOCADO RIPE & READY", 2, 1.80, "£1.80", "2 @ £0.90"),
    ("MCVITIES DIGESTIVES 400G", None, 1.29, "£1.29", None),
    ("JS GARLIC BULBS 4PK", None, 0.69, "£0.69", None),
    ("BIRDS EYE GARDEN PEAS", None, 2.00, "£2.00", None),
    ("ROWSE SQUEEZY HONEY", None, 2.75, "£2.75", None),
    ("JS SPINACH 240G", None, 1.10, "£1.10", None),
    ("DOLMIO BOLOGNESE SAUCE", None, 2.40, "£2.40", None),
    ("JS SPAGHETTI 500G", 2, 1.40, "£1.40", "2 @ £0.70"),
    ("BAGGED CARRIER BAG", None, 0.10, "£0.10", None),
]
OCR_NAMES = {
    "JS ORGANIC CARROTS 1KG": "JS 0RGANIC CARR0TS 1KG",
    "ANCHOR SPREADABLE 500G": "ANCH0R SPREADABLF 500G",
    "MCVITIES DIGESTIVES 400G": "MCVIT1ES DIGESTIVES 400G",
}


def receipt_ocr() -> Row:
    lines = [
        "        SAINSBURY'S",
        "      Islington Local",
        "     123 Upper Street",
        "      London N1 1QP",
        "   VAT No. GB 660 4548 36",
        "",
    ]
    items = []
    for name, quantity, amount, printed, under in GROCERIES:
        shown = OCR_NAMES.get(name, name)
        if under and under[0].isdigit() and "kg" in under:  # weighed: name, then weight and price
            lines += [shown, f"  {under:<26}{printed:>8}"]
        elif under:  # a multi-buy: the price of all, then how many at what each
            lines += [f"{shown:<28}{printed:>8}", f"  {under}"]
        else:
            lines.append(f"{shown:<28}{printed:>8}")
        items.append({"description": shown, "quantity": quantity, "amount": amount})
    total = round(sum(p[2] for p in GROCERIES if p[2] is not None) + 1.60 + 1.85 + 2.85, 2)  # OCR'd ones too
    counted = sum(p[1] if isinstance(p[1], int) else 1 for p in GROCERIES)  # articles, as tills count them
    lines += [
        "",
        f"  {counted} BALANCE DUE            £{total:.2f}",
        "",
        f"VISA DEBIT                  £{total:.2f}",
        "CHANGE                       £0.00",
        "************4417",
        "CONTACTLESS  AUTH 083311",
        "",
        "Nectar points earned: 46",
        "You saved £1.35 with Nectar Prices",
        "",
        "03/06/24 18:42  S0412 R05  #2231",
        "  Thank you for shopping at Sainsbury's",
    ]
    gold = {"merchant": "SAINSBURY'S", "date": "2024-06-03", "total": total, "currency": "GBP",
            "items": items}  # fmt: skip
    return {"id": "long-receipt-ocr", "text": "\n".join(lines), "gold": gold}


# -- a Japanese supermarket receipt --------------------------------------------------------------------

SUPER_JA = [  # name as printed, quantity, amount, the quantity line under it (or None)
    ("国産若鶏もも肉", None, 598, None),
    ("牛乳　１０００ｍｌ", 2, 476, "２コ×単１１９"),
    ("バナナ", None, 198, None),
    ("絹ごし豆腐", 3, 174, "３コ×単５８"),
    ("たまご　Ｌサイズ　１０個", None, 258, None),
    ("食パン　６枚切", None, 168, None),
    ("キャベツ", None, 148, None),
    ("玉ねぎ　３個入", None, 198, None),
    ("納豆　３パック", 2, 176, "２コ×単８８"),
    ("豚バラ薄切り", None, 486, None),
    ("トマト", None, 258, None),
    ("にんじん", None, 128, None),
    ("ヨーグルト　プレーン", None, 158, None),
    ("味噌　750g", None, 298, None),
    ("醤油　１Ｌ", None, 248, None),
    ("緑茶　２Ｌ", 2, 316, "２コ×単１５８"),
    ("ポテトチップス", None, 98, None),
    ("冷凍うどん　５食", None, 298, None),
    ("鮭切身", None, 398, None),
    ("ほうれん草", None, 158, None),
    ("レジ袋　Ｌ", None, 5, None),
]


def _wide(number: int | str) -> str:
    return str(number).translate(str.maketrans("0123456789,", "０１２３４５６７８９，"))


def receipt_ja_super() -> Row:
    lines = [
        "　　　イオン　品川シーサイド店",
        "　東京都品川区東品川４－１２－５",
        "　　ＴＥＬ　０３－５７１５－２２１１",
        "",
        "２０２４年　６月　２日（日）　１８：４２",
        "レジ０１２　責任者　佐藤",
        "　　　　　　領　収　証",
    ]
    items = []
    for name, quantity, amount, under in SUPER_JA:
        mark = "" if name.startswith("レジ袋") else "※"
        lines.append(f"{name}　　　　　¥{_wide(amount)}{mark}")
        if under:
            lines.append(f"　{under}")
        items.append({"description": name, "quantity": quantity, "amount": amount})
    total = sum(i["amount"] for i in items)
    tax = round(total * 8 / 108)
    lines += [
        "",
        f"小　計　　　　　　　　¥{_wide(f'{total:,}')}",
        f"（８％対象　　　　　　¥{_wide(f'{total - 5:,}')}）",
        f"（内消費税等　　　　　¥{_wide(tax)}）",
        f"合　計　　　　　　　　¥{_wide(f'{total:,}')}",
        "お預り　　　　　　　　¥１０，０００",
        f"お釣り　　　　　　　　¥{_wide(f'{10000 - total:,}')}",
        "",
        "※印は軽減税率（８％）適用商品",
        f"買上点数　{_wide(sum(i['quantity'] or 1 for i in items))}点",
        "ＷＡＯＮポイント　　１８Ｐ",
    ]
    gold = {"merchant": "イオン　品川シーサイド店", "date": "2024-06-02", "total": total, "currency": "JPY",
            "items": items}  # fmt: skip
    return {"id": "long-receipt-ja-super", "text": "\n".join(lines), "gold": gold}


# -- a mail thread -----------------------------------------------------------------------------------


def thread_irregular() -> Row:
    messages = [
        (
            "From: Dana Whitfield <dana.whitfield@corvel-logistics.com>\n"
            "To: Marcus Bell <m.bell@fieldline.com>\n"
            "Cc: ops-team@corvel-logistics.com, Priya Nair <priya.nair@fieldline.com>\n"
            "Date: Tue, 4 Jun 2024 16:05:11 +0100\n"
            "Subject: Re: Pallet collection Thursday\n\n"
            "Marcus, Thursday 8am works. The driver will call from the gate.\n\n"
            "Dana\n"
        ),
        (
            "From: Marcus Bell <m.bell@fieldline.com>\n"
            "To: Dana Whitfield <dana.whitfield@corvel-logistics.com>\n"
            "Cc: ops-team@corvel-logistics.com\n"
            "Date: Tue, 4 Jun 2024 14:47:52 +0100\n"
            "Subject: Re: Pallet collection Thursday\n\n"
            "Can we make it 8am instead of 10? Loading bay 2 is free then.\n\n"
            "Sent from my iPhone\n"
        ),
        (
            "From: Oskar Lindqvist <oskar.lindqvist@nordvagen.se>\n"
            "To: Dana Whitfield <dana.whitfield@corvel-logistics.com>\n"
            "Date: Tue, 4 Jun 2024 11:20:03 +0200\n"
            "Subject: Re: Pallet collection Thursday\n\n"
            "Hi Dana, the customs papers for the 12 pallets are attached. Please forward to the driver.\n\n"
            "Med vänlig hälsning / Kind regards\n"
            "Oskar Lindqvist\n"
            "Export Coordinator | Nordvägen Trading AB\n"
            "Tel. +46 31 709 44 12\n"
            "oskar.lindqvist@nordvagen.se\n\n"
            "On Mon, 3 Jun 2024 at 17:32, Dana Whitfield <dana.whitfield@corvel-logistics.com> wrote:\n"
            "> Hi Oskar, could you send the customs papers before Thursday?\n"
            "> Thanks,\n"
            "> Dana\n"
        ),
        (
            "From: Priya Nair <priya.nair@fieldline.com>\n"
            "To: Dana Whitfield <dana.whitfield@corvel-logistics.com>\n"
            "Date: Mon, 3 Jun 2024 15:10:40 +0100\n"
            "Subject: Re: Pallet collection Thursday\n\n"
            "Hello Dana,\n\nI will be away on Thursday; Marcus will meet your driver.\n\n"
            "Best wishes,\n"
            "Priya Nair\n"
            "Operations Manager\n"
            "Fieldline Foods Ltd\n"
            "M: 07700 900461\n"
        ),
        (
            "From: Dana Whitfield <dana.whitfield@corvel-logistics.com>\n"
            "To: Priya Nair <priya.nair@fieldline.com>\n"
            "Date: Mon, 3 Jun 2024 09:02:15 +0100\n"
            "Subject: Pallet collection Thursday\n\n"
            "Dear Priya,\n\nWe can collect the 12 pallets on Thursday at 10am. Please confirm.\n\n"
            "Kind regards,\n"
            "Dana Whitfield\n"
            "Account Manager\n"
            "Corvel Logistics\n"
            "T: +44 20 3808 1150\n"
            "dana.whitfield@corvel-logistics.com\n"
        ),
    ]
    contacts = [
        {"name": "Dana Whitfield", "email": "dana.whitfield@corvel-logistics.com",
         "phone": "+44 20 3808 1150", "organization": "Corvel Logistics"},
        {"name": "Marcus Bell", "email": "m.bell@fieldline.com", "phone": None, "organization": None},
        {"name": "Oskar Lindqvist", "email": "oskar.lindqvist@nordvagen.se", "phone": "+46 31 709 44 12",
         "organization": "Nordvägen Trading AB"},
        {"name": "Priya Nair", "email": "priya.nair@fieldline.com", "phone": "07700 900461",
         "organization": "Fieldline Foods Ltd"},
    ]  # fmt: skip
    text = "\n".join(messages).rstrip()
    return {"id": "long-thread-irregular", "text": text, "gold": {"contacts": contacts}}


# -- held out: never read by the unit finder while its rules were tuned --------------------------------

KONTO = [  # day, booking kind, payee and purpose lines, amount, S (debit) or H (credit)
    (
        "02.05.",
        "Kartenzahlung girocard",
        ["REWE Markt GmbH Mannheim", "2024-05-01T18:22 Karte 1"],
        45.90,
        "S",
    ),
    ("03.05.", "Lastschrift", ["Stadtwerke Mannheim", "Abschlag Strom Mai Mandat SWM-4471"], 89.00, "S"),
    ("03.05.", "Dauerauftrag", ["Hausverwaltung Keller", "Miete Mai Whg 3 OG"], 1150.00, "S"),
    ("06.05.", "Gutschrift", ["Muster AG", "Gehalt Mai 2024"], 3412.55, "H"),
    ("06.05.", "Kartenzahlung girocard", ["dm-drogerie markt Mannheim"], 23.45, "S"),
    ("07.05.", "Lastschrift", ["Telekom Deutschland GmbH", "Kd-Nr 5512 0087 Rechnung 05/24"], 39.95, "S"),
    ("08.05.", "Kartenzahlung girocard", ["Tankstelle Aral Mannheim-Neckarau"], 71.18, "S"),
    ("10.05.", "Kartenzahlung girocard", ["IKEA Mannheim"], 212.99, "S"),
    ("13.05.", "Gutschrift", ["Amazon EU S.a r.l.", "Erstattung 302-4471185"], 19.99, "H"),
    ("14.05.", "Lastschrift", ["Allianz Versicherungs-AG", "Kfz-Haftpflicht 2. Quartal"], 127.40, "S"),
    ("15.05.", "Kartenzahlung girocard", ["Edeka Zentrum Mannheim"], 58.32, "S"),
    ("17.05.", "Überweisung", ["Dr. med. Heike Brandt", "Rechnung 2024-117 Privatpraxis"], 86.50, "S"),
    ("21.05.", "Kartenzahlung girocard", ["Deutsche Bahn Fernverkehr", "Mannheim-Frankfurt"], 34.90, "S"),
    ("22.05.", "Kartenzahlung girocard", ["REWE Markt GmbH Mannheim"], 62.07, "S"),
    ("24.05.", "Lastschrift", ["Netflix International B.V."], 13.99, "S"),
    ("27.05.", "Bargeldauszahlung", ["Geldautomat Sparkasse P2", "Mannheim Paradeplatz"], 100.00, "S"),
    ("28.05.", "Kartenzahlung girocard", ["Apotheke am Wasserturm"], 17.85, "S"),
    ("29.05.", "Kartenzahlung girocard", ["dm-drogerie markt Mannheim"], 11.20, "S"),
    ("31.05.", "Entgelt", ["Kontoführungsentgelt Mai"], 6.95, "S"),
]


def konto_held_out() -> Row:
    """A German account statement: debits (S) are the expenses, credits (H) are not; two-line booking
    texts whose payee stands under the booking kind; a page break with the balance carried over."""

    def amount(value: float, side: str) -> str:
        return f"{_money(value, '.', ','):>12} {side}"

    lines = [
        "Sparkasse Rhein Neckar Nord",
        "Kontoauszug 5/2024                                              Blatt 1 von 2",
        "Girokonto 7012345678   IBAN DE44 6705 0505 0070 1234 56",
        "Dr. Katrin Vogel, Augustaanlage 12, 68165 Mannheim",
        "",
        "Bu-Tag  Wert   Vorgang                                           Betrag EUR",
        f"                alter Kontostand vom 30.04.2024            {amount(2345.67, 'H')}",
    ]
    balance = 2345.67
    for n, (day, kind, purpose, value, side) in enumerate(KONTO):
        if n == 10:
            lines += [
                f"                Übertrag auf Blatt 2                      {amount(balance, 'H')}",
                "\f",
                "Sparkasse Rhein Neckar Nord      Kontoauszug 5/2024      Blatt 2 von 2",
                "Bu-Tag  Wert   Vorgang                                           Betrag EUR",
                f"                Übertrag von Blatt 1                      {amount(balance, 'H')}",
            ]
        lines.append(f"{day}  {day}  {kind:<42}{amount(value, side)}")
        lines += [f"                {text}" for text in purpose]
        balance += value if side == "H" else -value
    debits = round(sum(v for *_, v, s in KONTO if s == "S"), 2)
    lines += [
        "",
        f"                Summe Soll                                {amount(debits, 'S')}",
        f"                neuer Kontostand vom 31.05.2024            {amount(round(balance, 2), 'H')}",
        "",
        "Bitte prüfen Sie Ihren Kontoauszug. Einwendungen sind innerhalb von sechs Wochen zu erheben.",
    ]
    expenses = [
        {"date": f"2024-05-{day[:2]}", "description": purpose[0], "amount": value}
        for day, _, purpose, value, side in KONTO
        if side == "S"
    ]
    gold = {"holder": "Dr. Katrin Vogel", "currency": "EUR", "total": debits, "expenses": expenses}
    return {"id": "long-statement-konto", "text": "\n".join(lines), "meta": {"reference_date": "2024-05-31"},
            "gold": gold}  # fmt: skip


SWISS = "'"  # Swiss thousands: 2'345.50
FOLIO = [  # day, description, quantity, amount
    ("09.04.24", "Accommodation Superior Double", 1, 420.00),
    ("09.04.24", "City tax", 2, 7.00),
    ("09.04.24", "Bellevue Bar", 1, 64.50),
    ("10.04.24", "Breakfast buffet", 2, 76.00),
    ("10.04.24", "Accommodation Superior Double", 1, 420.00),
    ("10.04.24", "City tax", 2, 7.00),
    ("10.04.24", "Minibar", 1, 18.50),
    ("11.04.24", "Breakfast buffet", 2, 76.00),
    ("11.04.24", "Laundry service", 1, 32.00),
    ("11.04.24", "Accommodation Superior Double", 1, 420.00),
    ("11.04.24", "City tax", 2, 7.00),
    ("11.04.24", "Restaurant VUE dinner", 1, 186.00),
    ("12.04.24", "Breakfast buffet", 2, 76.00),
    ("12.04.24", "Parking garage", 1, 35.00),
    ("12.04.24", "Accommodation Superior Double", 1, 420.00),
    ("12.04.24", "City tax", 2, 7.00),
    ("13.04.24", "Breakfast buffet", 2, 76.00),
    ("13.04.24", "Telephone", 1, 3.50),
]


def folio_held_out() -> Row:
    """A hotel folio in spaced columns: charges are its items, the payment a credit; the second page
    repeats the hotel's header and the columns."""
    total = round(sum(a for *_, a in FOLIO), 2)
    columns = "Date        Description                          Qty       Charges      Credits"
    lines = [
        "                 HOTEL BELLEVUE PALACE BERN",
        "          Kochergasse 3-5, 3011 Bern, Switzerland",
        "                                                        INVOICE / RECHNUNG",
        "Guest: Mr. Daniel Okafor                      Room: 412",
        "Arrival: 09.04.2024    Departure: 13.04.2024    Folio No. 88213",
        "",
        columns,
    ]
    for n, (day, description, quantity, amount) in enumerate(FOLIO):
        if n == 11:
            lines += [
                "                                                      continued on page 2",
                "",
                "HOTEL BELLEVUE PALACE BERN        Folio No. 88213        Page 2/2",
                columns,
            ]
        lines.append(f"{day}    {description:<36}{quantity:>3}   {_money(amount, SWISS):>11}")
    paid = _money(total, SWISS)
    lines += [
        f"13.04.24    Payment Mastercard **** 5521                             {paid:>11}",
        "",
        f"            Total                                  CHF {paid:>11}  {paid:>11}",
        "            Balance                                CHF        0.00",
        "",
        "VAT 3.8% (accommodation) and 8.1% included. CHE-105.912.337 MWST",
        "Thank you for staying with us.",
    ]
    items = [{"description": d, "quantity": q, "amount": a} for _, d, q, a in FOLIO]
    gold = {"merchant": "HOTEL BELLEVUE PALACE BERN", "date": "2024-04-13", "total": total, "currency": "CHF",
            "items": items}  # fmt: skip
    return {"id": "long-receipt-folio", "text": "\n".join(lines), "gold": gold}


def thread_held_out() -> Row:
    """A thread where a forwarded message brings in a person who never writes to it, Outlook's header
    block beside Gmail's, a sign-off in German, and a person named only in a Cc line."""
    messages = [
        (
            "From: Arjun Mehta <arjun.mehta@tessellate.co.uk>\n"
            "Sent: Wednesday, June 12, 2024 2:31 PM\n"
            "To: Lena Hoffmann <l.hoffmann@kranich-bau.de>\n"
            "Cc: Sofia Marquez <s.marquez@tessellate.co.uk>\n"
            "Subject: RE: WG: Site visit Leipzig\n\n"
            "Hi Lena,\n\nThe 20th works for me. I will bring the drone survey.\n\n"
            "Arjun Mehta | Senior Surveyor\nTessellate Surveys Ltd\n+44 113 496 0734\n"
        ),
        (
            "From: Lena Hoffmann <l.hoffmann@kranich-bau.de>\n"
            "Sent: Wednesday, 12 June 2024 10:14\n"
            "To: Arjun Mehta <arjun.mehta@tessellate.co.uk>\n"
            "Subject: WG: Site visit Leipzig\n\n"
            "Hi Arjun, see below from our structural engineer. Can you join on the 20th?\n\n"
            "Viele Grüße / Best regards\n"
            "Lena Hoffmann\n"
            "Projektleitung | Kranich Bau GmbH\n"
            "Tel. +49 341 555 2087\n\n"
            "---------- Forwarded message ---------\n"
            "From: Jonas Weber <weber@statik-weber.de>\n"
            "Date: Tue, 11 Jun 2024 at 16:40\n"
            "Subject: Ortstermin Leipzig\n"
            "To: Lena Hoffmann <l.hoffmann@kranich-bau.de>\n\n"
            "Hallo Lena,\n\nder 20.06. um 9 Uhr passt. Bitte den Zugang zum Dach organisieren.\n\n"
            "Mit freundlichen Grüßen\n"
            "Dipl.-Ing. Jonas Weber\n"
            "Ingenieurbüro Weber\n"
            "Mobil 0171 555 3321\n"
        ),
    ]
    contacts = [
        {"name": "Arjun Mehta", "email": "arjun.mehta@tessellate.co.uk", "phone": "+44 113 496 0734",
         "organization": "Tessellate Surveys Ltd"},
        {"name": "Lena Hoffmann", "email": "l.hoffmann@kranich-bau.de", "phone": "+49 341 555 2087",
         "organization": "Kranich Bau GmbH"},
        {"name": "Jonas Weber", "email": "weber@statik-weber.de", "phone": "0171 555 3321",
         "organization": "Ingenieurbüro Weber"},
    ]  # fmt: skip
    return {
        "id": "long-thread-forwarded",
        "text": "\n".join(messages).rstrip(),
        "gold": {"contacts": contacts},
    }


def main() -> None:
    sets = {
        "statement-irregular": [statement_uk(), konto_held_out()],
        "receipt-irregular": [receipt_ocr(), receipt_ja_super(), folio_held_out()],
        "thread_contacts-irregular": [thread_irregular()],
    }
    write(sets)


if __name__ == "__main__":
    main()
