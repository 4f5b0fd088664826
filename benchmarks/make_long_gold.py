"""Write the long gold documents of examples/gold/long/: texts too long for one prompt, gold by construction.

Three kinds, each in English and in Chinese or Japanese, written as people receive them:
- a shop receipt of 60+ line items (a printed table in English; lines with 点 and ¥ in Japanese);
- a monthly card statement of 30 expenses with the statement's total;
- a mail thread of 5 messages, each signed, one quoting an earlier message (its signature read twice).
Every value in the gold is generated with the text, so it is exactly what the text states: the judge,
given the gold, must find it all. Run it again to rewrite the files (the output is deterministic):

    .venv/bin/python benchmarks/make_long_gold.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "examples" / "gold" / "long"
THINGS = [
    "Wood screws 4x40", "Wall plugs 8mm", "Masking tape 30m", "Paint roller 18cm", "Sandpaper P120",
    "Cable ties 200mm", "Light bulb E27 LED", "Extension cord 5m", "Work gloves L", "Spirit level 60cm",
    "Drill bit set", "Hinge 50mm brass", "Door handle steel", "Silicone white", "Brush 50mm",
    "Padlock 40mm", "Hose clip 20-32", "Wire 1.5mm 10m", "Wood glue 250g", "Hook rail oak",
]  # fmt: skip
THINGS_JA = [
    "ボールペン黒", "付箋ミニ", "ノートA5", "クリアファイル", "消しゴム", "シャープ芯", "マスキングテープ",
    "ホッチキス針", "定規15cm", "修正テープ", "封筒長3", "のり", "はさみ", "蛍光ペン黄", "メモ帳",
]  # fmt: skip
SHOPS = ["Taxi Lyon Part-Dieu", "Cafe Bellecour", "Hotel Mercure Lyon", "SNCF Lyon-Paris", "Monoprix Lyon",
         "Parking Perrache", "Brasserie Georges", "Uber Lyon", "Fnac Bellecour",
         "Pharmacie du Rhone"]  # fmt: skip
SHOPS_ZH = ["北京首都机场出租车", "星巴克国贸店", "全季酒店", "滴滴出行", "海底捞王府井店", "中国铁路12306",
            "京东商城", "停车场东直门", "麦当劳西单店", "美团外卖"]  # fmt: skip


def receipt_en(rng: random.Random) -> dict:
    items = []
    lines = ["HARDWARE CORNER LTD", "12 Mill Road, Cambridge CB1 2AD", "Date: 2024-03-14  Till 3",
             "", "| Item | Qty | Amount |", "|---|---|---|"]  # fmt: skip
    for n in range(64):
        name = f"{THINGS[n % len(THINGS)]} #{n + 1:02d}"
        qty = rng.randint(1, 4)
        amount = round(qty * rng.randint(99, 1999) / 100, 2)
        items.append({"description": name, "quantity": qty, "amount": amount})
        lines.append(f"| {name} | {qty} | {amount:.2f} |")
    total = round(sum(i["amount"] for i in items), 2)
    lines += ["", f"TOTAL GBP {total:.2f}", "Paid by card. Thank you for shopping with us!"]
    gold = {"merchant": "HARDWARE CORNER LTD", "date": "2024-03-14", "total": total, "currency": "GBP",
            "items": items}  # fmt: skip
    return {"id": "long-receipt-en", "text": "\n".join(lines), "gold": gold}


def receipt_ja(rng: random.Random) -> dict:
    items, lines = [], ["ロフト渋谷店", "2024年3月14日 14:32", "領収書", ""]
    for n in range(60):
        name = f"{THINGS_JA[n % len(THINGS_JA)]}{n + 1:02d}"
        qty = rng.randint(1, 3)
        amount = qty * rng.randint(1, 40) * 10
        items.append({"description": name, "quantity": qty, "amount": amount})
        lines.append(f"{name}　{qty}点　¥{amount}")
    total = sum(i["amount"] for i in items)
    lines += ["", f"合計　¥{total}", "お買い上げありがとうございました"]
    gold = {
        "merchant": "ロフト渋谷店",
        "date": "2024-03-14",
        "total": total,
        "currency": "JPY",
        "items": items,
    }
    return {"id": "long-receipt-ja", "text": "\n".join(lines), "gold": gold}


def statement(rng: random.Random, chinese: bool) -> dict:
    expenses, lines = [], []
    holder = "王芳" if chinese else "Marie Dubois"
    lines += (
        [f"信用卡账单 2024年5月 持卡人：{holder}", ""]
        if chinese
        else [
            f"Card statement, May 2024. Card holder: {holder}",
            "Date        Where                      Amount",
        ]
    )
    for n in range(30):
        day = 1 + n
        shop = (SHOPS_ZH if chinese else SHOPS)[rng.randrange(10)]
        amount = round(rng.randint(350, 18000) / 100, 2)
        expenses.append({"date": f"2024-05-{day:02d}", "description": shop, "amount": amount})
        lines.append(
            f"2024年5月{day}日 {shop} {amount:.2f}元"
            if chinese
            else f"2024-05-{day:02d}  {shop}  {amount:.2f} EUR"
        )
    total = round(sum(e["amount"] for e in expenses), 2)
    lines += ["", f"本期合计：{total:.2f}元" if chinese else f"Total of this statement: {total:.2f} EUR"]
    gold = {"holder": holder, "currency": "CNY" if chinese else "EUR", "total": total, "expenses": expenses}
    return {"id": f"long-statement-{'zh' if chinese else 'en'}", "text": "\n".join(lines), "gold": gold}


PEOPLE = [
    ("Anna Schmidt", "anna.schmidt@nordlicht-logistik.de", "+49 40 3861 2290", "Nordlicht Logistik GmbH"),
    ("Tom Becker", "t.becker@harbourline.co.uk", "+44 20 7946 0321", "Harbourline Shipping"),
    ("Priya Raman", "priya.raman@veltrix.io", "+1 415 555 0142", "Veltrix Inc."),
    ("Luis Ortega", "lortega@andes-cargo.cl", "+56 2 2345 6789", "Andes Cargo"),
    ("Keiko Sato", "k.sato@minato-trading.jp", "+81 3 5555 0199", "Minato Trading"),
]
PEOPLE_JA = [
    ("佐藤 健一", "k.sato@sakura-butsuryu.jp", "03-5555-0101", "さくら物流株式会社"),
    ("鈴木 美咲", "suzuki.m@aoba-shoji.co.jp", "06-6555-0202", "青葉商事株式会社"),
    ("高橋 翔", "s.takahashi@hikari-denki.jp", "052-555-0303", "ひかり電機株式会社"),
    ("田中 由美", "tanaka@midori-foods.jp", "011-555-0404", "みどり食品株式会社"),
    ("伊藤 大輔", "d.ito@kaze-systems.jp", "092-555-0505", "風システムズ株式会社"),
]


def thread(japanese: bool) -> dict:
    people = PEOPLE_JA if japanese else PEOPLE
    body = (
        (
            "お世話になっております。来週の出荷予定について確認させてください。数量と納期に変更があれば"
            "ご連絡ください。よろしくお願いいたします。"
        )
        if japanese
        else (
            "Thanks for the update on the shipment. Could you confirm the pallet count and the pickup window "
            "for next Tuesday? We need the customs papers two days ahead, and the driver needs the gate code."
        )
    )
    messages = []
    for n, (name, email, phone, org) in enumerate(people):
        sender = f"From: {name} <{email}>\nSubject: Re: shipment {4410 + n}\n\n{body}\n\n"
        signature = (
            f"{org}\n{name}\nTEL: {phone}\nMail: {email}"
            if japanese
            else f"Best regards,\n{name}\n{org}\nPhone: {phone}\n{email}"
        )
        messages.append(sender + signature)
    quoted = "\n".join(f"> {line}" for line in messages[0].split("\n"))
    messages[2] += f"\n\n{'以下、引用' if japanese else 'Earlier in this thread:'}\n{quoted}"
    contacts = [{"name": n, "email": e, "phone": p, "organization": o} for n, e, p, o in people]
    text = "\n\n".join(reversed(messages))  # newest first, as mail clients show a thread
    contacts.sort(key=lambda contact: text.index(contact["email"]))  # in order of first appearance
    key = "ja" if japanese else "en"
    return {"id": f"long-thread-{key}", "text": text, "gold": {"contacts": contacts}}


def main() -> None:
    rng = random.Random(30)
    OUT.mkdir(parents=True, exist_ok=True)
    sets = {
        "receipt": [receipt_en(rng), receipt_ja(rng)],
        "statement": [statement(rng, False), statement(rng, True)],
        "thread_contacts": [thread(False), thread(True)],
    }
    write(sets)


def write(sets: dict[str, list[dict]]) -> None:
    """Each set of documents as `NAME.jsonl` in examples/gold/long/, one document a line."""
    for name, rows in sets.items():
        with (OUT / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(name, [len(row["text"]) for row in rows])


if __name__ == "__main__":
    main()
