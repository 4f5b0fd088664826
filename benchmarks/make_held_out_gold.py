"""Write the held-out long gold documents of examples/gold/long/ (`*-held-out.jsonl`), with the gold each
states: lists the unit finder's rules were never tuned on, measured once after they were fixed.

The first held-out set (a Sparkasse statement, a hotel folio) showed what the rules lacked (a year
only in the header, money in marked `H` or in a Credits column, a dated tax line), and once the rules
were changed for them they were no longer held out: they moved to the irregular sets
(benchmarks/make_irregular_gold.py). These were written on 2026-12-05 after that change, before any
model read them:
- a French account statement: `Débit` and `Crédit` columns, days `02/05` with the year only in the
  header, amounts written `1 234,56`, a salary and a refund in the credit column, balances and a
  total of the movements;
- a US card statement: transaction and posting days `05/02` month first, a "Payments and Other
  Credits" section with amounts `-500.00`, a fee and interest section, a purchase with its
  foreign-currency note on the next line;
- a hardware shop's invoice in spaced columns, `Qty Description Unit price Amount`, products whose
  names carry numbers (`CAT6 5m`, `M8x40`), VAT and a total.

    .venv/bin/python benchmarks/make_held_out_gold.py
"""

from __future__ import annotations

from typing import Any

from make_irregular_gold import thread_held_out  # benchmarks/, beside this script
from make_long_gold import write

Row = dict[str, Any]

RELEVE = [  # day/month, label, amount, is it money in
    ("02/05", "PAIEMENT CB MONOPRIX PARIS 11", 38.42, False),
    ("03/05", "PRLV SEPA EDF CLIENTS PARTICULIERS", 74.00, False),
    ("03/05", "PRLV SEPA FREE MOBILE", 19.99, False),
    ("06/05", "VIR SEPA RECU SALAIRE AVRIL ACME SAS", 2845.10, True),
    ("07/05", "PAIEMENT CB SNCF INTERNET", 112.00, False),
    ("09/05", "RETRAIT DAB BNP PARIS REPUBLIQUE", 60.00, False),
    ("13/05", "PAIEMENT CB FNAC PARIS", 1249.00, False),
    ("14/05", "AVOIR CB FNAC PARIS", 49.99, True),
    ("16/05", "PRLV SEPA LOYER SCI DES LILAS", 1150.00, False),
    ("21/05", "PAIEMENT CB PHARMACIE DU MARCHE", 23.80, False),
    ("24/05", "PAIEMENT CB BOULANGERIE PAUL", 8.60, False),
    ("28/05", "COTISATION CARTE VISA PREMIER", 11.25, False),
]

US = [  # trans, post, description, amount, note under it
    ("05/02", "05/03", "STARBUCKS STORE 10442 SEATTLE WA", 6.45, None),
    ("05/04", "05/06", "AMAZON.COM*RT4K21 AMZN.COM/BILL WA", 48.97, None),
    ("05/07", "05/08", "SHELL OIL 57442011 PORTLAND OR", 52.10, None),
    ("05/11", "05/13", "AIR CANADA 0142188876 MONTREAL", 412.60, "CAD 563.00 X 0.73286 (EXCHG RATE)"),
    ("05/15", "05/16", "WHOLE FOODS MKT 10233 SEATTLE WA", 87.34, None),
    ("05/19", "05/20", "UBER *TRIP HELP.UBER.COM CA", 23.18, None),
    ("05/23", "05/24", "COSTCO WHSE #0001 SEATTLE WA", 214.76, None),
    ("05/27", "05/28", "NETFLIX.COM LOS GATOS CA", 15.49, None),
]

INVOICE = [  # quantity, description, unit price
    (2, "Cable CAT6 5m grey", 7.90),
    (1, "Drill bit set HSS 19pcs", 24.50),
    (4, "Wall plug S8 (50 pack)", 3.20),
    (10, "Hex bolt M8x40 zinc", 0.45),
    (1, "Spirit level 60cm", 18.99),
    (3, "Masking tape 38mm x 50m", 2.85),
    (2, "LED bulb E27 9W warm", 4.60),
    (1, "Extension lead 4-way 3m", 16.40),
]


def _fr(amount: float) -> str:
    return f"{amount:,.2f}".replace(",", " ").replace(".", ",")


def releve_held_out() -> Row:
    """A French account statement: the debit column holds the expenses, the credit column money in."""
    lines = [
        "BANQUE POPULAIRE RIVES DE PARIS",
        "RELEVE DE COMPTE COURANT N° 00412 557801 K",
        "M. ou Mme Julien MARCHAND, 14 rue des Lilas, 75019 Paris",
        "Période du 01/05/2024 au 31/05/2024",
        "",
        f"{'Date    Libellé':<52}{'Débit':>14}{'Crédit':>15}",  # amounts stand right under their column
        f"{'        SOLDE CREDITEUR AU 30/04/2024':<52}{'':>14}{_fr(1532.18):>15}",
    ]
    for day, label, amount, money_in in RELEVE:
        column = f"{'':>14}{_fr(amount):>15}" if money_in else f"{_fr(amount):>14}"
        lines.append(f"{day}   {label:<44}{column}")
    debits = round(sum(a for *_, a, money_in in RELEVE if not money_in), 2)
    credits = round(sum(a for *_, a, money_in in RELEVE if money_in), 2)
    lines += [
        "",
        f"{'        TOTAL DES MOUVEMENTS':<52}{_fr(debits):>14}{_fr(credits):>15}",
        f"{'        NOUVEAU SOLDE CREDITEUR AU 31/05/2024':<52}{'':>14}{_fr(1532.18 - debits + credits):>15}",
    ]
    expenses = [
        {"date": f"2024-{day[3:]}-{day[:2]}", "description": label, "amount": amount}
        for day, label, amount, money_in in RELEVE
        if not money_in
    ]
    gold = {"holder": "Julien MARCHAND", "currency": "EUR", "total": debits, "expenses": expenses}
    return {"id": "long-statement-releve", "text": "\n".join(lines), "meta": {}, "gold": gold}


def card_us_held_out() -> Row:
    """A US card statement: month-first days without a year, payments as negative amounts in a section
    of their own, a foreign-currency note under a purchase, fees and interest apart."""
    lines = [
        "CASCADE FEDERAL CREDIT UNION                      VISA SIGNATURE STATEMENT",
        "ERIN MCALLISTER                                   Account ending in 8832",
        "Statement Closing Date 06/01/2024                 Payment Due Date 06/26/2024",
        "",
        "Previous Balance          $1,204.33",
        "Payments and Credits        -$1,204.33",
        "Purchases                   +$860.89",
        "New Balance                  $860.89",
        "",
        "Trans  Post   Description                                       Amount",
        "PAYMENTS AND OTHER CREDITS",
        "05/09  05/09  ONLINE PAYMENT - THANK YOU                      -1,204.33",
        "PURCHASES AND ADJUSTMENTS",
    ]
    for trans, post, description, amount, note in US:
        lines.append(f"{trans}  {post}  {description:<44}{amount:>12,.2f}")
        if note:
            lines.append(f"              {note}")
    purchases = round(sum(a for *_, a, _ in US), 2)
    lines += [
        "TOTAL PURCHASES FOR THIS PERIOD                                   " + f"{purchases:,.2f}",
        "FEES CHARGED",
        "TOTAL FEES FOR THIS PERIOD                                         0.00",
        "INTEREST CHARGED",
        "TOTAL INTEREST FOR THIS PERIOD                                     0.00",
    ]
    expenses = [
        {"date": f"2024-{trans[:2]}-{trans[3:]}", "description": description, "amount": amount}
        for trans, _, description, amount, _ in US
    ]
    gold = {"holder": "ERIN MCALLISTER", "currency": "USD", "total": purchases, "expenses": expenses}
    return {"id": "long-statement-card-us", "text": "\n".join(lines), "meta": {}, "gold": gold}


def invoice_held_out() -> Row:
    """A hardware shop's invoice in spaced columns; product names carry numbers of their own."""
    lines = [
        "HARTLEY & SONS BUILDERS MERCHANTS LTD",
        "Unit 4, Canal Road Trading Estate, Leeds LS12 2PL",
        "VAT reg. GB 284 1193 07",
        "",
        "INVOICE 2024-11873                                  Date: 17/06/2024",
        "Customer: Marsh Lane Joinery",
        "",
        "Qty  Description                          Unit price      Amount",
    ]
    items = []
    for quantity, description, price in INVOICE:
        amount = round(quantity * price, 2)
        lines.append(f"{quantity:>3}  {description:<35}{price:>10.2f}{amount:>12.2f}")
        items.append({"description": description, "quantity": quantity, "amount": amount})
    net = round(sum(item["amount"] for item in items), 2)
    vat = round(net * 0.2, 2)
    lines += [
        "",
        f"{'Subtotal':>52}{net:>12.2f}",
        f"{'VAT 20%':>52}{vat:>12.2f}",
        f"{'Total GBP':>52}{net + vat:>12.2f}",
        "",
        "Payment within 30 days to Sort code 40-12-55, account 61228194.",
    ]
    gold = {"merchant": "HARTLEY & SONS BUILDERS MERCHANTS LTD", "date": "2024-06-17",
            "total": round(net + vat, 2), "currency": "GBP", "items": items}  # fmt: skip
    return {"id": "long-receipt-invoice", "text": "\n".join(lines), "meta": {}, "gold": gold}


def main() -> None:
    write(
        {
            "statement-held-out": [releve_held_out(), card_us_held_out()],
            "receipt-held-out": [invoice_held_out()],
            "thread_contacts-held-out": [thread_held_out()],
        }
    )


if __name__ == "__main__":
    main()
