"""A person's name is offered without a company's legal form, a company's name without its website
(readers r8) and held to the name its own domain spells (r10, tasks.grounding.sites), an address whole
and not cut at a comma or above its postcode (r9, r11, tasks.grounding.kinds), through the grammar a
real record's formatting pass gets."""

from __future__ import annotations

from formwork.schemas.registry import load_schema
from formwork.tasks.grounding.absent import SPELLINGS
from formwork.tasks.grounding.candidates import grounded_body
from formwork.tasks.grounding.kinds import continued, incorporated, joined
from formwork.tasks.grounding.sites import spelled_out, website

SIGNATURE = """Best regards,
Klaus Becker
Berger Elektro GmbH
Serrurier - Witmark
Mining Operator"""
WEBSITES = """Super Place - superplace.com
Mining Operator
miningoperator.fr
Booked through reservio.com"""


def _offered(text: str) -> dict[str, list]:
    contact = load_schema("contact")
    body = grounded_body(contact.grammar_body, text, checked=contact.checked_body)
    return {field: node.get("enum", []) for field, node in body["properties"].items()}


def test_a_company_is_no_persons_name_and_keeps_its_legal_form() -> None:
    """The 1.5B wrote "Berger Elektro GmbH" and "Nordlys Energi AS" for a contact's name (calibration
    records): a person field is offered no span that ends with a legal form; the company field is."""
    offered = _offered(SIGNATURE)
    assert "Klaus Becker" in offered["name"]
    assert not [v for v in offered["name"] if isinstance(v, str) and incorporated(v)]
    assert "Berger Elektro GmbH" in offered["organization"]


def test_a_company_is_offered_without_the_website_that_spells_it() -> None:
    """The 1.5B wrote "Super Place - superplace.com", "Serrurier - Witmark" and "miningoperator.fr" for
    organizations the signature also writes as names: those spans leave the field, the names stay,
    and a website the text spells no name for stays (it may be all the text gives)."""
    assert "Witmark" in _offered(SIGNATURE)["organization"]
    assert "Serrurier - Witmark" not in _offered(SIGNATURE)["organization"]
    organizations = _offered(WEBSITES.replace("Super Place - ", ""))["organization"]
    assert "Mining Operator" in organizations and "miningoperator.fr" not in organizations
    assert "reservio.com" in _offered("Booked through reservio.com")["organization"]  # no name spells it


def test_a_company_the_texts_own_web_domain_names_holds_the_field() -> None:
    """The 1.5B took the role ("Serrurier"), a city or another line for an organization the text's
    web domain names ("Witmark" beside witmark.com; JDR calibration records): where a span writes
    that name, only such spans are offered; a quoted message's company does not count (readers r10)."""
    organizations = _offered(SIGNATURE + "\nklaus@witmark.com")["organization"]
    assert "Witmark" in organizations and "Berger Elektro GmbH" not in organizations
    assert "Mining Operator" not in organizations and "Serrurier" not in organizations
    assert not [v for v in _offered(WEBSITES)["organization"] if v and "reservio" in v]  # an address
    assert "Super Place" in _offered(WEBSITES)["organization"]
    quoted = SIGNATURE.replace("Serrurier - Witmark\n", "") + "\n\nJo <jo@witmark.com> wrote:\n> Jo, Witmark"
    assert "Berger Elektro GmbH" in _offered(quoted)["organization"]


def test_what_a_span_is() -> None:
    assert incorporated("FastShip Inc.") and incorporated("Nordlys Energi AS") and incorporated("ACME S.A.")
    assert not incorporated("Thomas As") and not incorporated("Maria Sa") and not incorporated("GmbH")
    assert website("miningoperator.fr") and website("https://www.superplace.com/contact")
    assert not website("ECOSWAY.COM") and not website("J. Smith") and not website("12.50")
    assert joined("Rainbow Records / rainbowrecords.com") and joined("Serrurier - Witmark")
    assert not joined("ECOSWAY.COM SDN BHD") and not joined("Hill-Behan") and not joined("Marks & Spencer")
    text = "Clinique Gemco\nmail: jo@cabinet-simon.fr\ngemco.com\ncabinet-simon.fr"
    assert spelled_out("gemco.com", text) and not spelled_out("cabinet-simon.fr", text)
    assert spelled_out("jasmin-lilas.com", "Jasmin et Lilas\njasmin-lilas.com")  # a hyphen for "et"
    assert not spelled_out("jasmin-lilas.com", "Jasmin, fleuriste\nLilas\njasmin-lilas.com")


RECEIPT = """KEDAI BUKU MAJU SDN BHD
(CO. NO. 123456-X)
NO 12, JALAN MAWAR 3,
TAMAN MELATI, 53100
KUALA LUMPUR.
TEL: 03-4021 5566
TOTAL RM 12.50
CASH RM 20.00"""


def test_an_address_laid_out_in_lines_is_offered_as_whole_lines_and_in_a_sentence_as_words() -> None:
    """The 1.5B took "JALAN AIR PANAS" of a receipt's "NO 290, JALAN AIR PANAS, SETAPAK, 53200, KUALA
    LUMPUR." (SROIE calibration half): on a receipt an address is offered only as whole lines and
    runs of them; in a sentence, where no line holds it alone, its words stay on offer."""
    receipt = load_schema("shop_receipt")
    offered = grounded_body(receipt.grammar_body, RECEIPT, checked=receipt.checked_body)
    addresses = [v for v in offered["properties"]["address"]["enum"] if v not in (None, *SPELLINGS)]
    assert "NO 12, JALAN MAWAR 3,\nTAMAN MELATI, 53100\nKUALA LUMPUR." in addresses
    assert "JALAN MAWAR 3" not in addresses and "TAMAN MELATI" not in addresses
    assert "NO 12, JALAN MAWAR 3," not in addresses  # the comma goes on to the next line (readers r9)
    assert all(line in RECEIPT.splitlines() or "\n" in line for line in addresses)
    prose = "Bought two notebooks at Kedai Maju, 12 Jalan Mawar, Kuala Lumpur for RM 12.50 today."
    inline = grounded_body(receipt.grammar_body, prose, checked=receipt.checked_body)
    assert "12 Jalan Mawar" in inline["properties"]["address"]["enum"]


def test_an_address_does_not_end_at_a_comma_the_next_line_goes_on_from() -> None:
    """20 of the 46 receipt addresses the 1.5B read wrong at r8 stopped at a line ending with a comma
    (SROIE calibration half): such lines are offered only with the next, unless the next is a labelled
    line of its own, after which a gold address may end with its comma."""
    assert continued("NO 12, JALAN MAWAR 3,", RECEIPT)
    assert not continued("NO 12, JALAN MAWAR 3,\nTAMAN MELATI, 53100\nKUALA LUMPUR.", RECEIPT)
    labelled = RECEIPT.replace("53100\nKUALA LUMPUR.\n", "53100,\n")  # "TEL: 03-4021 5566" follows
    assert not continued("NO 12, JALAN MAWAR 3,\nTAMAN MELATI, 53100,", labelled)
    receipt = load_schema("shop_receipt")
    offered = grounded_body(receipt.grammar_body, labelled, checked=receipt.checked_body)
    assert "NO 12, JALAN MAWAR 3,\nTAMAN MELATI, 53100," in offered["properties"]["address"]["enum"]
    assert not continued("SHAH ALAM,", "SHAH ALAM,\n\nTHANK YOU")  # a blank line ends it
    assert continued("TAMAN MELATI, 53100", RECEIPT)  # below "NO 12, JALAN MAWAR 3,": not a start
    street = "LOT 5, JALAN ANGSA\nTAMAN BERKELEY\n41150 KLANG\nTEL: 03-1234 5678"
    assert continued("LOT 5, JALAN ANGSA\nTAMAN BERKELEY", street)  # the postcode's line goes on from it
    assert not continued("LOT 5, JALAN ANGSA\nTAMAN BERKELEY\n41150 KLANG", street)
