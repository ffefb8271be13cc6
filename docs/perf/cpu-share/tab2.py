#!/usr/bin/env python3
# tab2.py FILE: medians per size and job from cmp.sh output; ratios on/share0 and on/best(tuned,han)
import sys, collections, statistics as st
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 3 or not p[0].isdigit(): continue
    for kv in p[2:]:
        s, v = kv.split(':'); d[(int(s), p[1])].append(float(v))
jobs = [j for j in ('on', 'share0', 'tuned', 'han') if any(k[1] == j for k in d)]
print('| size | ' + ' | '.join(jobs) + ' | on/share0 | on/best(tuned,han) | share0/best |')
print('|---' * (len(jobs) + 4) + '|')
for s in sorted({k[0] for k in d}):
    m = {j: st.median(d[(s, j)]) for j in jobs if d[(s, j)]}
    best = min(m[j] for j in ('tuned', 'han') if j in m)
    print('| %d | ' % s + ' | '.join('%.1f' % m[j] for j in jobs) +
          ' | %.2f | %.2f | %.2f |' % (m['on'] / m['share0'], m['on'] / best, m['share0'] / best))
