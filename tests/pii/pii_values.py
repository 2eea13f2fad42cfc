"""Generators of valid (and deliberately invalid) PII values, shared by the
labeled-corpus generator (tests/pii/gen_corpus.py) and the benchmark corpus
(bench/pii_corpus.py). Deterministic given the random.Random passed in."""
import string

def luhn_digit(body):
    s = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        s += d
    return str((10 - s % 10) % 10)

CARD_PREFIX = [("4", 16), ("4", 13), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15),
               ("6011", 16), ("65", 16), ("36", 14), ("35", 16), ("62", 19)]

def card(r, valid=True):
    pre, n = r.choice(CARD_PREFIX)
    body = pre + "".join(r.choice(string.digits) for _ in range(n - len(pre) - 1))
    d = luhn_digit(body)
    if not valid:
        d = str((int(d) + r.randint(1, 9)) % 10)
    num = body + d
    style = r.randint(0, 2)
    if style == 0 or n not in (15, 16):
        return num
    sep = " " if style == 1 else "-"
    if n == 15:
        return sep.join([num[:4], num[4:10], num[10:]])
    return sep.join(num[i:i + 4] for i in range(0, 16, 4))

IBAN_FMT = {"NL": (18, "AAAA" + "N" * 10), "DE": (22, "N" * 18), "BE": (16, "N" * 12),
            "FR": (27, "N" * 10 + "A" * 11 + "N" * 2), "GB": (22, "AAAA" + "N" * 14),
            "ES": (24, "N" * 20), "IT": (27, "A" + "N" * 10 + "A" * 12), "CH": (21, "N" * 17)}

def _mod97(s):
    s = s[4:] + s[:4]
    n = "".join(str(int(c, 36)) for c in s)
    return int(n) % 97

def iban(r, valid=True, cc=None):
    cc = cc or r.choice(list(IBAN_FMT))
    n, fmt = IBAN_FMT[cc]
    bban = "".join(r.choice(string.ascii_uppercase if f == "A" else string.digits) for f in fmt)
    chk = 98 - _mod97(cc + "00" + bban)
    if not valid:
        chk = (chk + r.randint(1, 40)) % 97 + 2
    s = "%s%02d%s" % (cc, chk, bban)
    if valid and _mod97(s) != 1:
        raise AssertionError(s)
    if r.random() < 0.5:
        s = " ".join(s[i:i + 4] for i in range(0, len(s), 4))
    return s

def elf_ok(d):
    return sum((9 - i) * int(d[i]) for i in range(8)) - int(d[8]) == 0 or \
        (sum((9 - i) * int(d[i]) for i in range(8)) - int(d[8])) % 11 == 0

def bsn(r, valid=True):
    while True:
        d = "".join(r.choice(string.digits) for _ in range(9))
        if d[0] == "0":
            continue
        if elf_ok(d) == valid and d != "000000000":
            return d

def ssn(r, valid=True):
    if not valid:
        return r.choice(["000-12-3456", "666-45-1234", "912-34-5678", "123-00-4567",
                         "321-54-0000", "078-05-1120"])
    a = r.randint(1, 899)
    while a == 666:
        a = r.randint(1, 899)
    return "%03d-%02d-%04d" % (a, r.randint(1, 99), r.randint(1, 9999))

FIRST = ["jan", "anna", "pieter", "sophie", "john", "mary", "li", "fatima", "daan", "emma",
         "noah", "lucas", "olivia", "mohammed", "eva", "tim", "sara", "kees", "ines", "omar"]
LAST = ["devries", "jansen", "bakker", "smith", "johnson", "nguyen", "visser", "degroot",
        "mulder", "brown", "garcia", "peters", "dijkstra", "kumar", "lee"]
DOMAINS = ["example.com", "example.nl", "mail.example.org", "company.co.uk", "uni.example.edu",
           "gmail.com", "outlook.com", "ziggo.nl", "kpnmail.nl", "sub.dept.example.io"]

def email(r):
    f, l = r.choice(FIRST), r.choice(LAST)
    local = r.choice(["%s.%s" % (f, l), "%s%s" % (f[0], l), "%s_%s%d" % (f, l, r.randint(1, 99)),
                      "%s+news" % f, "%s-%s" % (f, l)])
    return local + "@" + r.choice(DOMAINS)

def phone(r):
    k = r.randint(0, 11)
    d = lambda n: "".join(r.choice(string.digits) for _ in range(n))
    if k == 0:
        return "06-" + str(r.randint(1, 9)) + d(7)
    if k == 1:
        return "020-" + str(r.randint(2, 9)) + d(6)
    if k == 2:
        return "+31 6 " + str(r.randint(1, 9)) + d(7)
    if k == 3:
        return "(020) " + str(r.randint(2, 9)) + d(2) + " " + d(4)
    if k == 4:
        return "(%d%s) %d%s-%s" % (r.randint(2, 9), d(2), r.randint(2, 9), d(2), d(4))
    if k == 5:
        return "%d%s-%d%s-%s" % (r.randint(2, 9), d(2), r.randint(2, 9), d(2), d(4))
    if k == 6:
        return "+1 %d%s %d%s %s" % (r.randint(2, 9), d(2), r.randint(2, 9), d(2), d(4))
    if k == 7:
        return "+44 20 %s %s" % (d(4), d(4))
    if k == 8:
        return "06 %d%s %s %s" % (r.randint(1, 9), d(1), d(2) + " " + d(2), d(2))
    if k == 9:
        return "+49 30 %s%s" % (d(4), d(4))
    if k == 10:
        return "010-%d%s %s %s" % (r.randint(2, 9), d(2), d(2), d(2))
    return "+31%d%s" % (r.randint(1, 9), d(8))

def ipv4(r):
    return ".".join(str(x) for x in [r.choice([10, 172, 192, 84, 145, 31, 8]), r.randint(0, 255),
                                     r.randint(0, 255), r.randint(1, 254)])

def ipv6(r):
    g = lambda: "%x" % r.randint(0, 0xffff)
    k = r.randint(0, 3)
    if k == 0:
        return ":".join(g() for _ in range(8))
    if k == 1:
        return "2001:db8::" + g() + ":" + g()
    if k == 2:
        return "fe80::%x:%x:%x:%x" % tuple(r.randint(1, 0xffff) for _ in range(4))
    return "2a02:%x:%x::%x" % (r.randint(1, 0xffff), r.randint(1, 0xffff), r.randint(1, 0xffff))

def _rand(r, n, alphabet=string.ascii_letters + string.digits):
    while True:
        s = "".join(r.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s):
            return s

def secret(r):
    k = r.randint(0, 11)
    if k == 0:
        return "sk-proj-" + _rand(r, 48, string.ascii_letters + string.digits + "_-")
    if k == 1:
        return "sk-ant-api03-" + _rand(r, 80, string.ascii_letters + string.digits + "_-") + "AA"
    if k == 2:
        return "AKIA" + "".join(r.choice(string.ascii_uppercase + string.digits) for _ in range(16))
    if k == 3:
        return "ghp_" + _rand(r, 36)
    if k == 4:
        return "github_pat_" + _rand(r, 22) + "_" + _rand(r, 59)
    if k == 5:
        return "xoxb-%d-%d-%s" % (r.randint(10**10, 10**12), r.randint(10**11, 10**13), _rand(r, 24))
    if k == 6:
        return "AIza" + _rand(r, 35, string.ascii_letters + string.digits + "_-")
    if k == 7:
        return "glpat-" + _rand(r, 20)
    if k == 8:
        return "sk-" + _rand(r, 48)
    if k == 9:
        return "sk_live_" + _rand(r, 24)
    if k == 10:
        return "hf_" + _rand(r, 34)
    return "eyJhbGciOiJIUzI1NiJ9.eyJ" + _rand(r, 30, string.ascii_letters + string.digits + "_-") + "." + _rand(r, 43, string.ascii_letters + string.digits + "_-")

def phone_national(r):
    """National notation of the default phone regions, and the 00 prefix:
    shapes libphonenumber accepts (area codes and mobile ranges in use)."""
    d = lambda n: "".join(r.choice(string.digits) for _ in range(n))
    k = r.randint(0, 10)
    if k == 0:      # DE Berlin
        return r.choice(["(030) %s %s" % (d(4), d(4)), "030 %s" % ("2" + d(7))])
    if k == 1:      # GB mobile
        return "07700 900" + d(3)
    if k == 2:      # FR Paris
        return "01 %s %s %s %s" % ("4" + d(1), d(2), d(2), d(2))
    if k == 3:      # BE Brussels
        return "02 %s %s %s" % ("5" + d(2), d(2), d(2))
    if k == 4:      # ES mobile / Madrid
        return r.choice(["6%s %s %s" % (d(2), d(3), d(3)), "91%s %s %s" % (d(1), d(3), d(3))])
    if k == 5:      # IT Rome
        return "06 %s %s" % ("6" + d(3), d(4))
    if k == 6:      # NL mobile, 00 prefix
        return "0031 6 " + str(r.randint(1, 9)) + d(7)
    if k == 7:
        return "0049 30 " + "2" + d(7)
    if k == 8:      # NL grouped
        return "06 %s %s %s %s" % (str(r.randint(1, 9)) + d(1), d(2), d(2), d(2))
    if k == 9:      # GB London
        return "020 7%s %s" % (d(3), d(4))
    return "+44 20 7%s %s" % (d(3), d(4))

DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"

def national_id(r, valid=True):
    """Spanish DNI (8 digits + letter) or NIE (X/Y/Z + 7 digits + letter)."""
    if r.random() < 0.6:
        n = r.randint(1000000, 99999999)
        body, v = "%08d" % n, n
    else:
        p = r.choice("XYZ")
        n = r.randint(0, 9999999)
        body, v = p + "%07d" % n, int(str("XYZ".index(p)) + "%07d" % n)
    letter = DNI_LETTERS[v % 23]
    if not valid:
        letter = DNI_LETTERS[(v + r.randint(1, 22)) % 23]
    return body + r.choice(["", "", "-"]) + letter

def bsn_grouped(r, valid=True):
    b = bsn(r, valid)
    sep = r.choice([" ", "."])
    return sep.join([b[:3], b[3:6], b[6:]])

# ---- Text as people write it: other scripts' digits, Unicode dashes,
# numbers broken over lines, groupings, internationalised addresses ----

# The zero of each script's decimal digits (Unicode category Nd).
DIGIT_ZERO = {"arabic": 0x660, "persian": 0x6f0, "devanagari": 0x966, "bengali": 0x9e6,
              "thai": 0xe50, "fullwidth": 0xff10}

def in_script(s, script):
    z = DIGIT_ZERO[script]
    return "".join(chr(z + int(c)) if c.isdigit() and c.isascii() else c for c in s)

# What a word processor or a phone keyboard puts where a '-' was typed.
DASHES = ["\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2212", "\ufe63", "\uff0d"]

def with_dashes(r, s):
    d = r.choice(DASHES)
    return s.replace("-", d)

def card_number(r, n=None, prefix=None):
    if n is None:
        prefix, n = r.choice(CARD_PREFIX)
    body = prefix + "".join(r.choice(string.digits) for _ in range(n - len(prefix) - 1))
    return body + luhn_digit(body)

def card_grouped(r, sep=None):
    """A card in the grouping its issuer prints: 4-4-4-4, Amex 4-6-5, Diners
    4-6-4, 19 digits 4-4-4-4-3, with spaces, dots, slashes or dashes."""
    sep = sep or r.choice([" ", "-", ".", "/"])
    k = r.randint(0, 3)
    if k == 0:
        num, g = card_number(r, 16, r.choice(["4", "51", "55", "6011"])), [4, 4, 4, 4]
    elif k == 1:
        num, g = card_number(r, 15, r.choice(["34", "37"])), [4, 6, 5]
    elif k == 2:
        num, g = card_number(r, 14, "36"), [4, 6, 4]
    else:
        num, g = card_number(r, 19, "62"), [4, 4, 4, 4, 3]
    out, i = [], 0
    for n in g:
        out.append(num[i:i + n])
        i += n
    return sep.join(out)

def broken(r, s, seps=(" ",)):
    """s with one of its separators replaced by a line break (as a mail
    client or a narrow chat box wraps it), keeping or dropping the blank."""
    idx = [i for i, c in enumerate(s) if c in seps and 0 < i < len(s) - 1]
    if not idx:
        return s
    i = r.choice(idx)
    brk = r.choice(["\n", "\r\n", " \n", "\n  "]) if s[i] == " " else s[i] + r.choice(["\n", "\r\n"])
    return s[:i] + brk + s[i + 1:]

def phone_formatted(r):
    """Phone numbers of the default regions as people punctuate them."""
    d = lambda n: "".join(r.choice(string.digits) for _ in range(n))
    k = r.randint(0, 7)
    if k == 0:
        return "(+31) 6 " + str(r.randint(1, 9)) + d(7)
    if k == 1:      # FR mobile with dots
        return "06.%s.%s.%s.%s" % (d(2), d(2), d(2), d(2))
    if k == 2:      # DE Berlin with a slash
        return "030/2" + d(7)
    if k == 3:      # BE mobile
        return "0470/%s.%s.%s" % (d(2), d(2), d(2))
    if k == 4:      # US with dots
        return "%d%s.%d%s.%s" % (r.randint(2, 9), d(2), r.randint(2, 9), d(2), d(4))
    if k == 5:
        return "+49 (0)30 2" + d(6)
    if k == 6:
        return "+1 (%d%s) %d%s-%s" % (r.randint(2, 9), d(2), r.randint(2, 9), d(2), d(4))
    return "+33 (0)6 %s %s %s %s" % (d(2), d(2), d(2), d(2))

IDN_LOCAL = ["jürgen.müller", "zoë", "françois.dubois", "josé.garcía", "søren", "åsa.öberg",
             "иван.петров", "мария", "用户", "李雷", "δοκιμή", "अजय.कुमार", "محمد", "yılmaz",
             "ñandú", "łukasz"]
IDN_DOMAIN = ["bücher.de", "müller-bau.de", "пример.рф", "почта.рф", "例子.广告", "公司.中国",
              "παράδειγμα.δοκιμή", "exämple.nl", "example.com", "gmail.com", "xn--bcher-kva.de",
              "beispiel.xn--p1ai", "correo.es", "örnek.com.tr"]

def email_idn(r):
    return r.choice(IDN_LOCAL) + "@" + r.choice(IDN_DOMAIN)

def email_encoded(r):
    """'@' as it survives a URL or an HTML page."""
    e = email(r)
    return e.replace("@", r.choice(["%40", "&#64;", "&#064;", "&#x40;", "&commat;"]))

def ipv4_padded(r):
    return ".".join("%03d" % x for x in [r.choice([10, 172, 192, 84, 145]), r.randint(0, 255),
                                         r.randint(0, 255), r.randint(1, 254)])
