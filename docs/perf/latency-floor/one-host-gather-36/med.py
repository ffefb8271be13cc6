import sys, statistics as st, collections
d=collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
    t=l.split()
    if len(t)<6: continue
    key=' '.join(t[1:4]); job=t[4]
    kv=dict(zip(t[5::2], map(float,t[6::2])))
    for k,v in kv.items(): d[key][(job,k)].append(v)
for key in d:
    jobs=sorted(set(j for j,_ in d[key]))
    for k in ('first','second','split'):
        print(key, k, '  '.join('%s %.2f'%(j, st.median(d[key][(j,k)])) for j in jobs if d[key][(j,k)]),
              ' new/tuned %.2f'%(st.median(d[key][('new',k)])/st.median(d[key][('tuned',k)])) if d[key][('new',k)] and d[key][('tuned',k)] else '',
              ' base/tuned %.2f'%(st.median(d[key][('base',k)])/st.median(d[key][('tuned',k)])) if d[key][('base',k)] and d[key][('tuned',k)] else '')
