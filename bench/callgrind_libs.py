#!/usr/bin/env python3
"""Where a callgrind profile's instructions go: self cost (Ir) grouped by
shared object, the program's own split by source file, and the top functions,
each divided by a request count. Used by bench/instr.sh.

    callgrind_libs.py CALLGRIND_OUT COUNT [PROGRAM_NAME] [TOP] [UNIT]

Callgrind counts every iteration of a rep-prefixed instruction (rep movsb,
rep stosb: glibc's memcpy and memset of a few KB and more) as one
instruction, so large copies and clears weigh more here than in cycles.
"""
import collections
import os
import re
import sys


def parse(path):
    """Self Ir per (object, file, function) from a callgrind out file."""
    names = {"ob": {}, "fl": {}, "fn": {}}
    cur = {"ob": "?", "fl": "?", "fn": "?"}
    cost = collections.Counter()
    skip_next = False
    spec = re.compile(r"^(c?)(ob|fl|fi|fe|fn)=(?:\((\d+)\))?\s*(.*)$")
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = spec.match(line)
            if m:
                called, kind, num, name = m.groups()
                table = names["fl" if kind in ("fi", "fe") else kind]
                if num is not None:
                    if name:
                        table[num] = name
                    name = table.get(num, "?")
                if not called and kind in ("ob", "fl", "fn"):
                    cur[kind] = name
                continue
            if line.startswith("calls="):
                skip_next = True   # the next cost line is the call's inclusive cost
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            if skip_next:
                skip_next = False
                continue
            parts = line.split()
            if len(parts) >= 2:
                cost[(cur["ob"], cur["fl"], cur["fn"])] += int(parts[1])
    return cost


def libc_part(fn):
    """libc split by job: the allocator, string/memory copies, stdio (printf)."""
    if re.search(r"malloc|free|realloc|calloc|tcache|consolidate|_int_", fn):
        return "malloc/free"
    if re.search(r"printf|_IO_|vfprintf|xsputn|itoa|__printf", fn):
        return "printf"
    if re.search(r"^_*(mem|str|wmem|stp)", fn):
        return "mem*/str*"
    return "other"


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    prog = sys.argv[3] if len(sys.argv) > 3 else "spillway"
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    unit = sys.argv[5] if len(sys.argv) > 5 else "request"
    cost = parse(path)
    total = sum(cost.values())
    groups = collections.Counter()
    for (ob, fl, fn), c in cost.items():
        obj = os.path.basename(ob)
        if obj == prog:
            m = re.search(r"(src/.*)$", fl)
            obj = f"{prog} {m.group(1) if m else fl}"
        elif obj.startswith("libc.so"):
            obj = "libc " + libc_part(fn)
        groups[obj] += c
    print(f"{total / n:12,.0f}  100.0 %  total instructions per {unit} (self cost by library; {prog} by file)")
    for g, c in groups.most_common():
        if c * 1000 < total:
            break
        print(f"{c / n:12,.0f}  {100 * c / total:5.1f} %  {g}")
    if top:
        print(f"top {top} functions (self):")
    for (ob, fl, fn), c in cost.most_common(top):
        print(f"{c / n:12,.0f}  {100 * c / total:5.1f} %  {fn} [{os.path.basename(ob)}]")


if __name__ == "__main__":
    main()
