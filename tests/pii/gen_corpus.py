#!/usr/bin/env python3
"""Writes the labeled PII corpus tests/pii/corpus/labeled.jsonl: one JSON
object per line, {"text": ..., "spans": [{"start", "end", "type"}], "note": ...}
with byte offsets into the UTF-8 text. Positives per type in English and
Dutch sentences, a few known-hard positives (expected misses, kept to report
recall honestly), hard negatives (checksum failures, version strings, dates,
times, MAC addresses, UUIDs, ISBNs, order numbers, code) and plain prose.
Deterministic: python3 tests/pii/gen_corpus.py > tests/pii/corpus/labeled.jsonl
(it also writes tests/pii/corpus/handwritten.jsonl from handwritten.txt)."""
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pii_values as V  # noqa: E402

r = random.Random(20261130)
out = []

def emit(template, values, note=""):
    """template has {0}, {1}, ... ; values is a list of (type or None, text)."""
    text, spans, pos = "", [], 0
    parts = re.split(r"\{(\d+)\}", template)
    for i, p in enumerate(parts):
        if i % 2 == 0:
            text += p
        else:
            typ, val = values[int(p)]
            start = len(text.encode())
            text += val
            if typ:
                spans.append({"start": start, "end": len(text.encode()), "type": typ})
    out.append({"text": text, "spans": spans, "note": note})

T = {
    "email": ["Please reply to {0} before Friday.", "Mijn e-mailadres is {0}, mail gerust.",
              "cc: {0}; thanks!", "Contact: <{0}>", "Stuur de factuur naar {0} aub",
              "Can you forward this to {0} and {1}?"],
    "phone": ["Call me at {0}.", "Bel mij op {0} als er iets is.", "tel: {0}",
              "My number is {0}, evenings only.", "Je kunt me bereiken via {0} (mobiel)."],
    "iban": ["Transfer it to {0} please.", "Rekeningnummer: {0}", "IBAN {0} t.n.v. J. Jansen",
             "Het bedrag wordt overgemaakt naar {0}."],
    "card": ["My card is {0}, exp 12/27.", "Charge {0} for the order.", "creditcard {0} graag",
             "Use card number {0} and CVC 123."],
    "bsn": ["Mijn BSN is {0}.", "burgerservicenummer: {0}", "BSN {0} staat op de brief",
            "The citizen service number (BSN) of the client is {0}."],
    "ssn": ["SSN {0}", "my social security number is {0}", "{0} is on the W-2 form",
            "Employee record: name J. Smith, SSN: {0}, start 2021."],
    "ipv4": ["The server at {0} is down.", "Blocked IP: {0}", "connect to http://{0}:8080/ now",
             "Mijn IP-adres is {0} volgens de router."],
    "ipv6": ["ping {0}", "address [{0}]:443 refused", "inet6 {0}/64 scope global",
             "Het IPv6-adres is {0}."],
    "secret": ["export OPENAI_API_KEY={0}", "my key is {0}, don't share it",
               "Gebruik deze token: {0}", "config: api_key: \"{0}\""],
}
GEN = {"email": V.email, "phone": V.phone, "iban": V.iban, "card": V.card, "bsn": V.bsn,
       "ssn": V.ssn, "ipv4": V.ipv4, "ipv6": V.ipv6, "secret": V.secret}

for typ, templates in T.items():
    for i in range(100):
        t = templates[i % len(templates)]
        n = len(re.findall(r"\{\d+\}", t))
        emit(t, [(typ, GEN[typ](r)) for _ in range(n)], "positive")

# Secrets with special shapes.
for i in range(20):
    tok = V._rand(r, 40, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    emit("Authorization: Bearer {0}", [("secret", tok)], "positive bearer")
    pw = V._rand(r, 14)
    emit("DATABASE_URL=postgres://app:{0}@db.internal:5432/app", [("secret", pw)], "positive url credentials")
for i in range(5):
    body = "\n".join(V._rand(r, 64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(5))
    emit("here is the key:\n{0}\nthanks", [("secret", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + body + "\n-----END OPENSSH PRIVATE KEY-----")], "positive private key")
# Dotted BSN without context words.
for i in range(10):
    b = V.bsn(r)
    emit("Nummer {0} staat op het formulier.", [("bsn", b[:4] + "." + b[4:6] + "." + b[6:])], "positive dotted bsn")
# Mixed: several types in one message.
for i in range(40):
    emit("Hi, I'm moving. New phone {0}, mail {1}, and please refund to {2}. Server {3} can go.",
         [("phone", V.phone(r)), ("email", V.email(r)), ("iban", V.iban(r)), ("ipv4", V.ipv4(r))], "positive mixed")

# National phone numbers (default pii.phone_regions) and the 00 prefix.
for i in range(80):
    t = ["Call me at {0}.", "Bel mij op {0} als er iets is.", "Rufen Sie {0} an.",
         "Appelez-moi au {0} demain.", "Llámame al {0}, por favor.", "Chiamami al {0} stasera."][i % 6]
    emit(t, [("phone", V.phone_national(r))], "positive national phone")
# BSN in three groups of three, with the word.
for i in range(30):
    emit(["Mijn BSN is {0}.", "burgerservicenummer {0}", "BSN: {0}"][i % 3],
         [("bsn", V.bsn_grouped(r))], "positive grouped bsn")
# Spanish DNI / NIE.
for i in range(60):
    emit(["Mi DNI es {0}.", "NIE {0}, caduca en 2027", "documento: {0}", "Passenger id {0} checked in."][i % 4],
         [("national_id", V.national_id(r))], "positive national id")
# Unicode: zero-width characters, no-break spaces, full-width forms inside values.
for i in range(20):
    e = V.email(r)
    k = e.index("@")
    emit("mail {0} today", [("email", e[:k // 2] + "\u200b" + e[k // 2:])], "positive zero-width email")
    c = V.card(r)
    emit("card {0} please", [("card", c.replace(" ", "\u00a0"))], "positive nbsp card")
    p = "06" + "".join(r.choice("0123456789") for _ in range(8))
    fw = "".join(chr(0xff10 + int(ch)) for ch in p)
    emit("bel {0}", [("phone", fw)], "positive full-width phone")

# Known-hard positives: deterministic detection misses these by design (docs/privacy.md).
emit("call me at {0} tonight", [("phone", "4155550132")], "hard positive: bare 10-digit US number")
emit("mail {0}", [("email", "john at example dot com")], "hard positive: obfuscated e-mail")
emit("aws_secret_access_key = {0}", [("secret", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")], "hard positive: AWS secret key (no prefix)")
emit("Mijn BSN is {0}.", [("bsn", "123 456 782")], "positive: BSN with spaces")
emit("password: {0}", [("secret", "hunter2-Correct-Horse")], "hard positive: a password in prose")
emit("call +31 (0)6 {0}", [("phone", "1234 5678")], "positive: trunk prefix (0)")
emit("the social security number we have on file for the new hire from 2021 is {0}", [("ssn", "123456789")], "hard positive: undashed SSN, context too far")
emit("reach me on {0}", [("phone", "0031 6 12345678")], "positive: 00 international prefix")

# Hard negatives.
NEG = []
for i in range(30):
    NEG.append("Order number %s shipped today." % V.card(r, valid=False))
    NEG.append("Rekening %s klopt niet." % V.iban(r, valid=False))
    NEG.append("Mijn BSN is %s." % V.bsn(r, valid=False))
    NEG.append("Klantnummer %s, factuur volgt." % V.bsn(r))
    NEG.append("SSN %s" % V.ssn(r, valid=False))
for i in range(30):
    # look-alikes of the new formats: amounts and codes in 3-3-3 groups that
    # pass the 11-proef, DNI-shaped codes with a wrong letter, order numbers,
    # timestamps, versions, prices, invoice numbers
    NEG.append("Revenue was EUR %s last year." % V.bsn_grouped(r).replace(" ", "."))
    NEG.append("Population estimate: %s people." % V.bsn_grouped(r).replace(".", " "))
    NEG.append("Mi DNI es %s." % V.national_id(r, valid=False))
    NEG.append("Order %s%s shipped." % (r.choice(["0", "00", ""]), "".join(r.choice("0123456789") for _ in range(10))))
    NEG.append("at 20%02d-%02d-%02d %02d:%02d:%02d UTC" % (r.randint(0, 30), r.randint(1, 12), r.randint(1, 28), r.randint(0, 23), r.randint(0, 59), r.randint(0, 59)))
    NEG.append("on %02d-%02d-20%02d %02d:%02d" % (r.randint(1, 28), r.randint(1, 12), r.randint(0, 30), r.randint(0, 23), r.randint(0, 59)))
    NEG.append("Price: %d %03d,%02d EUR" % (r.randint(1, 9), r.randint(0, 999), r.randint(0, 99)))
    NEG.append("Invoice INV-20%02d-%06d due" % (r.randint(10, 30), r.randint(0, 999999)))
    NEG.append("upgrade to %d.%d.%d, build 0.%d.%d" % (r.randint(0, 20), r.randint(0, 20), r.randint(0, 20), r.randint(0, 99), r.randint(0, 999)))
NEG += [
    "ISBN 978-0-306-40615-7", "ISBN 0-306-40615-2", "ticket #0912345678123",
    "items 912345678 in stock", "dial-in code 845 221 907",
    "Upgrade to version 1.2.3.4 before Monday.", "Running v10.0.0.1 in production.",
    "firmware 2.4.10.1 fixes it", "OID 1.3.6.1.4.1.311 is Microsoft's arc.", "See 1.2.3.4.5 in the table.",
    "Chrome/120.0.6099.129 Safari/537.36", "release 4.1.0.2 notes", "Version: 3.2.1.0",
    "The meeting is on 2024-01-15 at 10:30.", "Deadline 15-01-2024, ok?", "Datum 01.02.2023",
    "due 12/31/2024", "timestamp 2024-01-15T10:30:00Z", "at 12:30:45 sharp", "ratio 16:9:4",
    "MAC 00:1a:2b:3c:4d:5e on eth0", "id 550e8400-e29b-41d4-a716-446655440000",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b", "ISBN 978-3-16-148410-0",
    "ISBN 978-90-274-3964-2", "Price: EUR 1.234.567,89", "Total $1,234,567.00",
    "Order #1234567890 confirmed", "Call 112 in an emergency.", "Room 020 on floor 3.",
    "Use std::vector<int> and Foo::Bar::baz()", "a::b and x::y", "IPv6 loopback is ::1",
    "pip install scikit-learn (sk-learn for short)", "the task-force-alpha-bravo-charlie report",
    "The bearer of bad news arrived.", "Bearer token expired, please log in", "AKIA is not a key",
    "123-456-7890 is the classic fake number", "tracking 1Z999AA10123456784", "postcode 1012 AB Amsterdam",
    "KvK 12345678, BTW NL123456789B01", "Lot 4111-22 and 4111-23", "scores 99.5.1 and 10.10",
    "color #ff00aa and #123456", "range 10-20-30-40", "port 8080:80 mapping", "sha256:9f86d081884c7d65",
    "The 2019-2024 plan covers 1500 stores.", "Batch 000123456789 done", "PIN 1234",
    "example@ is not an address", "@username on twitter", "user@localhost only",
    "python3.11 and node18.17.0", "kernel 6.1.0-13-amd64", "10.5 ml of 0.9% NaCl",
    "matrix 1 2 3 4 5 6 7 8 9 10 11 12 13 14", "2001 A Space Odyssey (1968)", "A4 paper, 210 x 297 mm",
]
for n in NEG:
    emit(n.replace("{", "{{").replace("}", "}}").replace("{{", "(").replace("}}", ")") if False else n.replace("{", "(").replace("}", ")"), [], "hard negative")

# Plain prose from the seed articles and docs: no PII expected.
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", ".."))
prose = []
for p in ["../shared/seeds/000_50fc8d30014214a0.txt", "../shared/seeds/001_e100f478b6d0eec6.txt",
          ]:
    fp = os.path.join(root, p)
    if os.path.exists(fp):
        for para in open(fp, encoding="utf-8").read().split("\n\n"):
            para = para.strip()
            if 80 < len(para) < 1500:
                prose.append(para)
r.shuffle(prose)
for para in prose[:150]:
    emit(para.replace("{", "(").replace("}", ")"), [], "prose")

# (their own generator: the sections above stay as they were)
r2 = random.Random(20261201)
# Text as people write it: digits of other scripts, Unicode dashes, numbers
# broken over two lines or split by tabs, groupings, internationalised and
# encoded addresses, zero-padded IPv4 addresses.
SCRIPTS = ["arabic", "persian", "devanagari", "bengali", "thai"]
SCRIPT_T = {"arabic": "رقمي هو {0} شكرا", "persian": "شماره من {0} است", "devanagari": "मेरा नंबर {0} है",
            "bengali": "আমার নম্বর {0}", "thai": "หมายเลขของฉันคือ {0} ครับ"}
for i in range(60):
    sc = SCRIPTS[i % len(SCRIPTS)]
    typ, val = [("card", V.card(r2)), ("phone", V.phone(r2)), ("iban", V.iban(r2)),
                ("ipv4", V.ipv4(r2)), ("ssn", V.ssn(r2)), ("phone", V.phone_national(r2))][i % 6]
    emit(SCRIPT_T[sc], [(typ, V.in_script(val, sc))], "positive %s digits" % sc)
for i in range(10):
    emit("BSN: {0}", [("bsn", V.in_script(V.bsn(r2), SCRIPTS[i % len(SCRIPTS)]))], "positive script digits bsn")
for i in range(40):
    typ, val = [("card", V.card_grouped(r2, "-")), ("phone", "06-" + str(r2.randint(1, 9)) + "".join(r2.choice("0123456789") for _ in range(7))),
                ("ssn", V.ssn(r2)), ("phone", "%d%d%d-%d%d%d-%04d" % (r2.randint(2, 9), r2.randint(0, 9), r2.randint(0, 9), r2.randint(2, 9), r2.randint(0, 9), r2.randint(0, 9), r2.randint(0, 9999)))][i % 4]
    emit(["Call {0} please.", "Nummer: {0}", "it is {0}, thanks", "{0} (mobile)"][i % 4],
         [(typ, V.with_dashes(r2, val))], "positive unicode dash")
for i in range(40):
    typ, val = [("card", V.broken(r2, V.card_grouped(r2, " "))), ("phone", V.broken(r2, V.phone_national(r2), (" ", "-"))),
                ("card", V.card_grouped(r2, " ").replace(" ", "\t")), ("phone", V.broken(r2, V.phone(r2), (" ", "-")))][i % 4]
    emit(["my card is\n{0}\nthanks", "Bel me: {0}\nGroet", "paste: {0}", "Nummer {0}\n\nGroetjes"][i % 4],
         [(typ, val)], "positive broken number")
for i in range(40):
    emit(["Card number: {0}", "charge {0} please", "kaart {0}, vervalt 03/28"][i % 3],
         [("card", V.card_grouped(r2))], "positive card grouping")
for i in range(40):
    emit(["Tel. {0}", "Call me on {0} tonight.", "Rufen Sie {0} an.", "Appelez le {0}."][i % 4],
         [("phone", V.phone_formatted(r2))], "positive phone format")
for i in range(40):
    emit(["Mail me at {0} please.", "E-Mail: {0}", "пишите на {0}", "联系 {0} 谢谢"][i % 4],
         [("email", V.email_idn(r2))], "positive internationalised email")
for i in range(20):
    emit(["<a href=\"mailto:{0}\">mail</a>", "contact: {0}", "?to={0}&subject=hi"][i % 3],
         [("email", V.email_encoded(r2))], "positive encoded email")
for i in range(20):
    emit(["host {0} is down", "Blocked IP: {0}", "ping {0}"][i % 3], [("ipv4", V.ipv4_padded(r2))], "positive padded ipv4")

NEG2 = []
# Hard negatives written the same ways: dates, versions, ranges, amounts and
# order numbers in other scripts and with Unicode dashes, numbers on
# consecutive lines, tab-separated tables, '@' look-alikes.
for i in range(20):
    sc = SCRIPTS[i % len(SCRIPTS)]
    NEG2.append(V.in_script("%02d-%02d-20%02d" % (r2.randint(1, 28), r2.randint(1, 12), r2.randint(0, 30)), sc) + " की बैठक")
    NEG2.append("رقم الطلب " + V.in_script("%d" % r2.randint(10**9, 10**10 - 1), "arabic") + " بتاريخ " + V.in_script("%02d/%02d/2024" % (r2.randint(1, 28), r2.randint(1, 12)), "arabic"))
    NEG2.append("السعر " + V.in_script("%d" % r2.randint(1, 99), "arabic") + "\u066c" + V.in_script("%03d" % r2.randint(0, 999), "arabic") + "\u066b" + V.in_script("%02d" % r2.randint(0, 99), "arabic") + " درهم")
    NEG2.append("सफ़ा " + V.in_script("%d.%d.%d" % (r2.randint(1, 12), r2.randint(0, 20), r2.randint(0, 9)), "devanagari") + " देखें, कुल " + V.in_script("%d,%03d" % (r2.randint(1, 99), r2.randint(0, 999)), "devanagari") + " रुपये")
    NEG2.append("تاریخ " + V.in_script("14%02d/%02d/%02d" % (r2.randint(0, 5), r2.randint(1, 12), r2.randint(1, 30)), "persian") + " سفارش " + V.in_script("%d" % r2.randint(10**8, 10**9), "persian"))
    NEG2.append("ปี พ.ศ. " + V.in_script("25%02d" % r2.randint(50, 70), "thai") + " ราคา " + V.in_script("%d,%03d" % (r2.randint(1, 99), r2.randint(0, 999)), "thai") + " บาท")
    NEG2.append("The %d%s%d plan, pages %d%s%d." % (r2.randint(1990, 2024), r2.choice(V.DASHES), r2.randint(2025, 2035), r2.randint(1, 200), r2.choice(V.DASHES), r2.randint(201, 400)))
    NEG2.append("from %s%d \u00b0C to %s%d \u00b0C, score %d\u2013%d" % ("\u2212", r2.randint(1, 30), "\u2212", r2.randint(1, 30), r2.randint(0, 5), r2.randint(0, 5)))
    NEG2.append("open %02d:%02d\u2013%02d:%02d, ISBN 978\u20100\u2010%03d\u2010%05d\u2010%d" % (r2.randint(7, 11), r2.choice([0, 30]), r2.randint(12, 22), r2.choice([0, 30]), r2.randint(100, 999), r2.randint(10000, 99999), r2.randint(0, 9)))
    NEG2.append("qty\n" + "\n".join(str(r2.randint(1000, 9999)) for _ in range(4)))
    NEG2.append("id\tqty\tprice\n%d\t%d\t%d.%02d" % (r2.randint(1000, 99999), r2.randint(1, 500), r2.randint(1, 999), r2.randint(0, 99)))
    NEG2.append("year\tq1\tq2\tq3\n%d\t%d\t%d\t%d" % (r2.randint(2000, 2025), r2.randint(1000, 9999), r2.randint(1000, 9999), r2.randint(1000, 9999)))
    NEG2.append("version %s, build %s" % (V.ipv4_padded(r2), ".".join("%d" % r2.randint(0, 20) for _ in range(4))))
    NEG2.append("on %02d.%02d.%d at %02d.%02d, release %d.%02d.%d.%d" % (r2.randint(1, 28), r2.randint(1, 12), r2.randint(2000, 2030), r2.randint(0, 23), r2.randint(0, 59), r2.randint(1, 9), r2.randint(0, 20), r2.randint(0, 9), r2.randint(0, 99)))
    NEG2.append("Order %s%s%s shipped" % (str(r2.randint(1000, 9999)), r2.choice(V.DASHES), str(r2.randint(100000, 999999))))
    NEG2.append("discount 20%%40 items, %s&#64;%s and &commat;handle" % (V._rand(r2, 4), V._rand(r2, 4)))
for n in NEG2:
    emit(n.replace("{", "(").replace("}", ")"), [], "hard negative")

for o in out:
    sys.stdout.write(json.dumps(o, ensure_ascii=False) + "\n")

# The hand-written set: corpus/handwritten.txt -> corpus/handwritten.jsonl.
hw_in = os.path.join(here, "corpus", "handwritten.txt")
with open(os.path.join(here, "corpus", "handwritten.jsonl"), "w", encoding="utf-8") as f:
    for line in open(hw_in, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        line = line.replace("\\n", "\n")
        text, spans = "", []
        for i, part in enumerate(re.split(r"«([a-z0-9]+)\|(.*?)»", line, flags=re.S)):
            k = i % 3
            if k == 0:
                text += part
            elif k == 1:
                typ = part
            else:
                start = len(text.encode())
                text += part
                spans.append({"start": start, "end": len(text.encode()), "type": typ})
        f.write(json.dumps({"text": text, "spans": spans, "note": "handwritten"}, ensure_ascii=False) + "\n")
