#!/usr/bin/env python3
"""Functions in src/**/*.c longer than N lines, brace to brace.

A function is a top-level `{ ... }` block (brace depth 0 -> 1) whose opening is preceded by a
`)` (after comments and whitespace); its length is the line of its `}` minus the line of its
`{` (brace to brace). Strings, character constants and comments are skipped, so
braces inside them do not count. Tables (a `= {` initialiser) are not functions.

  scripts/longfn.py            print every function over 100 lines (longest first)
  scripts/longfn.py -n 60      ... over 60 lines
  scripts/longfn.py --check    exit 1 when a function is over 100 lines, except those of ALLOW
                               and PENDING and the files of EXCLUDE
"""
import os
import re
import signal
import sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)

SRC = "src"
LIMIT = 100
# Functions that are tables (one row per line, nothing else) may be longer: "file:function".
ALLOW = ()
# Files --check skips: a file split into modules of its own is held to the rule once split.
EXCLUDE = ()
# Functions not split yet ("file:function"): --check lets them pass, prints them, and fails on
# any other. Each is to be split into helpers with one job and removed from this list.
PENDING = (
)

NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\($")


def strip(text):
    """The text with comments, strings and character constants blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):
            # a preprocessor line (with its continuations): no braces count
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if k > 0 and text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, line count) of each function of a C file."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = strip(fh.read())
    res = []
    depth = 0
    start = None
    name = None
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            if depth == 0:
                head = text[:i].rstrip()
                if head.endswith(")"):
                    # the name before the parameter list's matching "("
                    d, j = 0, len(head) - 1
                    while j >= 0:
                        if head[j] == ")":
                            d += 1
                        elif head[j] == "(":
                            d -= 1
                            if d == 0:
                                break
                        j -= 1
                    m = NAME.search(head[:j + 1])
                    name = m.group(1) if m else "?"
                    start = line
                else:
                    name = None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and name:
                res.append((name, start, line - start))
                name = None
    return res


def sources(root):
    for d, _, names in os.walk(root):
        for n in sorted(names):
            if n.endswith(".c"):
                yield os.path.normpath(os.path.join(d, n))


def main(argv):
    check = "--check" in argv
    limit = LIMIT
    if "-n" in argv:
        limit = int(argv[argv.index("-n") + 1])
    long_ = []
    for path in sorted(sources(SRC)):
        for name, start, n in functions(path):
            if n > limit:
                long_.append((n, path, start, name))
    bad = 0
    for n, path, start, name in sorted(long_, key=lambda t: (-t[0], t[1])):
        key = "%s:%s" % (path, name)
        exempt = path in EXCLUDE or key in ALLOW or key in PENDING
        print("%s:%d: %s: %d lines%s" % (path, start, name, n,
                                          " (pending)" if key in PENDING else " (exempt)" if exempt else ""))
        if not exempt and n > LIMIT:
            bad += 1
    if check and bad:
        print("check-longfn: %d function(s) over %d lines in src/ (split them into helpers "
              "with one job each; a table may be listed in ALLOW)" % (bad, LIMIT), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
