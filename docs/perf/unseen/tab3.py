# tab3.py FILE...: medians per job and size of cmp.sh output; on/base and
# on/best of the other libraries' jobs (tuned, ring, han) when present.
import sys, statistics as st, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sys.argv[1:]:
    for line in open(f):
        p = line.split()
        if len(p) < 3 or ':' not in p[2]: continue
        for kv in p[2:]:
            s, v = kv.split(':'); d[p[1]][int(s)].append(float(v))
jobs = [j for j in ['on', 'base', 'share0', 'tuned', 'ring', 'han'] if j in d]
others = [j for j in ('tuned', 'ring', 'han') if j in d]
cols = jobs + (['on/base'] if 'base' in d else []) + (['on/best'] if others else [])
print('| size | ' + ' | '.join(cols) + ' |')
print('|---' * (len(cols) + 1) + '|')
for s in sorted(d['on']):
    m = {j: st.median(d[j][s]) for j in jobs}
    row = [f"{m[j]:.0f}" for j in jobs]
    if 'base' in d: row.append(f"{m['on'] / m['base']:.2f}")
    if others: row.append(f"{m['on'] / min(m[j] for j in others):.2f}")
    print(f"| {s} | " + ' | '.join(row) + ' |')
