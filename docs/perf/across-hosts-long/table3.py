#!/usr/bin/env python3
"""table3.py LONG3_OUTPUT: per cluster (lines '# NAME ...' start one), median over rounds per
configuration and size, and the ratios: after / best(tuned, han) (the issue's target),
ohan / han (both with han's barrier), after / hantb (both with tuned's barrier)."""
import sys, statistics as st, collections
data = collections.OrderedDict(); cur = None
for line in open(sys.argv[1]):
    p = line.split()
    if not p: continue
    if p[0] == '#' and len(p) > 1 and p[1] != 'end':
        cur = p[1].rstrip('b'); data.setdefault(cur, collections.defaultdict(list)); continue
    if cur is None or not p[0].isdigit(): continue
    for kv in p[2:]:
        s, v = kv.split(':'); data[cur][(p[1], int(s))].append(float(v))
def label(b): return f'{b} B' if b < 1024 else f'{b // 1024} KiB'
for cl, d in data.items():
    sizes = sorted({k[1] for k in d})
    med = {k: st.median(v) for k, v in d.items()}
    if not d: continue
    n = max(len(v) for v in d.values())
    print(f'\n{cl} (medians of {n} rounds, us)\n')
    print('| size | topoar | topoar over han | tuned | han | han, tuned\'s barrier | topoar / best | topoar over han / han | topoar / han, tuned\'s barrier |')
    print('|---|---|---|---|---|---|---|---|---|')
    for s in sizes:
        g = lambda c: med.get((c, s))
        a, o, t, h, hb = g('after'), g('ohan'), g('tuned'), g('han'), g('hantb')
        f = lambda x: '-' if x is None else f'{x:.0f}'
        r = lambda x, y: '-' if None in (x, y) else f'{x / y:.2f}'
        best = min(t, h) if None not in (t, h) else None
        print(f'| {label(s)} | {f(a)} | {f(o)} | {f(t)} | {f(h)} | {f(hb)} | {r(a, best)} | {r(o, h)} | {r(a, hb)} |')
