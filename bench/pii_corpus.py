#!/usr/bin/env python3
"""Writes a realistic benchmark corpus for the PII engine: chat-sized messages
(records separated by \\x1e) cut from real English prose and technical docs
(the seed articles and docs/*.md), with code, numbers, dates and versions as
they come, and PII values (tests/pii/pii_values.py) inserted into about one
message in eight. Deterministic.
  bench/pii_corpus.py OUT [MEGABYTES]"""
import os
import random
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, ".."))
sys.path.insert(0, os.path.join(root, "tests", "pii"))
import pii_values as V  # noqa: E402

out, mb = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 16
r = random.Random(7)
paras = []
srcs = [os.path.join(root, "..", "shared", "seeds", f) for f in
        ("000_50fc8d30014214a0.txt", "001_e100f478b6d0eec6.txt")]
srcs += [os.path.join(root, "docs", f) for f in sorted(os.listdir(os.path.join(root, "docs")))
         if f.endswith(".md")]
srcs += [os.path.join(root, "README.md")]
for p in srcs:
    if os.path.isfile(p):
        paras += [x.strip() for x in open(p, encoding="utf-8").read().split("\n\n") if x.strip()]
GEN = [V.email, V.phone, V.iban, V.card, V.ipv4, V.ipv6, V.secret,
       lambda rr: "BSN " + V.bsn(rr), lambda rr: "SSN " + V.ssn(rr),
       V.phone_national, lambda rr: "BSN " + V.bsn_grouped(rr), lambda rr: "DNI " + V.national_id(rr)]
size, n_pii, msgs = 0, 0, []
target = int(mb * 1024 * 1024)
while size < target:
    k = r.randint(1, 4)
    words = " \n".join(r.choice(paras) for _ in range(k)).split(" ")
    if r.random() < 0.125:
        for _ in range(r.randint(1, 2)):
            words.insert(r.randint(0, len(words)), r.choice(GEN)(r))
            n_pii += 1
    m = " ".join(words)
    msgs.append(m)
    size += len(m.encode()) + 1
with open(out, "w", encoding="utf-8") as f:
    f.write("\x1e".join(msgs))
print("%s: %d messages, %.1f MB, %d PII values inserted" % (out, len(msgs), size / 1048576, n_pii))
