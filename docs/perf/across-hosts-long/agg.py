import sys, statistics as st, collections
d = collections.defaultdict(list)
for f in sys.argv[1:]:
    for line in open(f):
        p = line.split()
        if len(p) < 3 or not p[0].isdigit(): continue
        for kv in p[2:]:
            size, v = kv.split(':'); a = v.split('/')
            d[(p[1], int(size))].append([float(x) for x in a])
cfgs = sorted({k[0] for k in d}); sizes = sorted({k[1] for k in d})
print('size', *[f'{c}(med/min avg; med cycle)' for c in cfgs])
for s in sizes:
    row = [str(s)]
    for c in cfgs:
        v = d.get((c, s), [])
        if not v: row.append('-'); continue
        a = [x[0] for x in v]; cy = [x[1] for x in v if len(x) > 1]
        row.append(f'{st.median(a):.0f}/{min(a):.0f};{st.median(cy):.0f} n={len(v)}' if cy else f'{st.median(a):.0f}/{min(a):.0f} n={len(v)}')
    print(' | '.join(row))
