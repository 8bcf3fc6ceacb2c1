#!/usr/bin/env python3
"""Puts group_bench's ROW lines of several targets side by side.

    table.py FILE...   (ROW<TAB>target<TAB>row<TAB>value lines; others ignored)

Rows keep the order they first appear in; targets too, the first being the
one the ratios divide by (cohortd). A ratio other/cohortd > 1 means cohortd
took less time; ratios are printed for time rows only (names ending "(ms)" or
"(us)"), and for rate rows (names ending "(/s)") as cohortd/other, so > 1
still means cohortd ahead; "-" where a figure is missing or a scenario did
not stabilise (-1).
"""
import sys

targets, rows, values = [], [], {}
for path in sys.argv[1:]:
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4 or parts[0] != "ROW":
                continue
            _, target, name, value = parts
            if target not in targets:
                targets.append(target)
            if name not in rows:
                rows.append(name)
            values[(target, name)] = float(value)

if not targets:
    sys.exit("table.py: no ROW lines")
base = targets[0]
others = targets[1:]
width = max(len(r) for r in rows)
head = "%-*s" % (width, "scenario") + "".join(" %9s" % t for t in targets)
head += "".join(" %14s" % ("%s/%s" % (t, base)) for t in others)
print(head)
for r in rows:
    line = "%-*s" % (width, r)
    for t in targets:
        v = values.get((t, r))
        line += " %9s" % ("-" if v is None else "%.0f" % v)
    for t in others:
        a, b = values.get((base, r)), values.get((t, r))
        ratio = "-"
        if a and b and a > 0 and b > 0:
            if r.endswith("(ms)") or r.endswith("(us)"):
                ratio = "%.1fx" % (b / a)
            elif r.endswith("(/s)"):
                ratio = "%.1fx" % (a / b)
        line += " %14s" % ratio
    print(line)
