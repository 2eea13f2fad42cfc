#!/usr/bin/env python3
"""The include graph of src/: cycles between files and between folders, and the layering rules.

A file is a module: x.c, x.cc and x.h are one node (a .c that includes another module's header
depends on that module). A folder is the first directory under src/ (src/daemon.c and src/main.c
are nodes of their own). `#include "..."` resolves against the including file's directory, then
src/ (the build's -Isrc); includes that resolve to neither (generated headers, system headers)
are not edges.

  scripts/layers.py            print the cycles between files and between folders, and the rule checks
  scripts/layers.py --check    the same, exit 1 on a cycle (between files or folders) or a broken rule
  scripts/layers.py --edges    print every edge between folders (file -> file)

Rules (a folder may not include the other):
"""
import os
import re
import sys

SRC = "src"
EXTS = (".c", ".h", ".cc")
# folder -> folders it must not include
FORBIDDEN = {
    "config": ("upstream", "state", "relay", "front", "obs", "route", "plan"),
}
# file (module) -> modules it must not include: the view builder stands on the
# view and the estimators, never on the decision it feeds.
FORBIDDEN_FILES = {
    "state/live": ("route/route",),
}
__doc__ += "".join("  %s/ includes none of %s\n" % (k, ", ".join(v + "/" for v in vs))
                   for k, vs in FORBIDDEN.items())
__doc__ += "".join("  %s includes none of %s\n" % (k, ", ".join(vs)) for k, vs in FORBIDDEN_FILES.items())

INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def files(root):
    out = []
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith(EXTS):
                out.append(os.path.normpath(os.path.join(d, n)))
    return sorted(out)


def module(path):
    return os.path.splitext(path)[0]


def folder(mod):
    parts = os.path.relpath(mod, SRC).split(os.sep)
    return parts[0] if len(parts) > 1 else parts[0]


def graph(root):
    allf = set(files(root))
    edges = {}   # module -> {module: [(file, included path)]}
    for f in sorted(allf):
        m = module(f)
        edges.setdefault(m, {})
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for inc in INC.findall(text):
            for base in (os.path.dirname(f), root):
                cand = os.path.normpath(os.path.join(base, inc))
                if cand in allf:
                    t = module(cand)
                    if t != m:
                        edges[m].setdefault(t, []).append((f, inc))
                    break
    return edges


def sccs(nodes, succ):
    """Tarjan's strongly connected components, iterative; only those of two or more nodes."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(succ.get(start, ()))))]
        index[start] = low[start] = counter[0]; counter[0] += 1
        stack.append(start); on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]; counter[0] += 1
                    stack.append(nxt); on.add(nxt)
                    work.append((nxt, iter(sorted(succ.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def rel(p):
    return os.path.relpath(p, SRC)


def main(argv):
    check = "--check" in argv
    edges = graph(SRC)
    bad = 0

    fcyc = sccs(edges.keys(), {m: set(t) for m, t in edges.items()})
    print("cycles between files: %d" % len(fcyc))
    for comp in fcyc:
        cs = set(comp)
        print("  " + " <-> ".join(rel(m) for m in comp))
        for m in comp:
            for t, why in sorted(edges[m].items()):
                if t in cs:
                    print("    %s -> %s (%s)" % (why[0][0], rel(t), ", ".join(sorted({w[1] for w in why}))))
    bad += len(fcyc)

    fedges = {}
    for m, ts in edges.items():
        for t, why in ts.items():
            a, b = folder(m), folder(t)
            if a != b:
                fedges.setdefault(a, {}).setdefault(b, []).extend(why)
    dcyc = sccs({folder(m) for m in edges}, {a: set(b) for a, b in fedges.items()})
    print("cycles between folders: %d" % len(dcyc))
    for comp in dcyc:
        cs = set(comp)
        print("  " + " <-> ".join(comp))
        for a in comp:
            for b, why in sorted(fedges.get(a, {}).items()):
                if b in cs:
                    print("    %s -> %s: %s" % (a, b, ", ".join(sorted({"%s (%s)" % (w[0], w[1]) for w in why}))))
    bad += len(dcyc)

    print("rules:")
    for a, forbidden in sorted(FORBIDDEN.items()):
        hits = [(b, why) for b, why in sorted(fedges.get(a, {}).items()) if b in forbidden]
        print("  %s/ includes none of %s: %s" % (a, ", ".join(f + "/" for f in forbidden),
                                                 "ok" if not hits else "BROKEN"))
        for b, why in hits:
            for f, inc in sorted(set(why)):
                print("    %s includes \"%s\"" % (f, inc))
        bad += len(hits)

    for a, forbidden in sorted(FORBIDDEN_FILES.items()):
        m = os.path.join(SRC, a)
        hits = [(rel(t), why) for t, why in sorted(edges.get(m, {}).items()) if rel(t) in forbidden]
        print("  %s includes none of %s: %s" % (a, ", ".join(forbidden), "ok" if not hits else "BROKEN"))
        for t, why in hits:
            for f, inc in sorted(set(why)):
                print("    %s includes \"%s\"" % (f, inc))
        bad += len(hits)

    if "--edges" in argv:
        print("edges between folders:")
        for a in sorted(fedges):
            for b in sorted(fedges[a]):
                print("  %s -> %s: %s" % (a, b, ", ".join(sorted({"%s -> %s" % (rel(module(w[0])), w[1]) for w in fedges[a][b]}))))

    if check and bad:
        print("check-layers: %d problem(s): an include cycle (between files or folders) or an include a rule forbids"
              % bad, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
