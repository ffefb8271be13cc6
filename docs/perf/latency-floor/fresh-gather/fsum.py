import sys,statistics,collections
d=collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
    f=l.split(); job=f[3]
    for kv in f[4:]:
        if '=' in kv:
            k,v=kv.split('='); d[job][k].append(float(v))
for j in d: print(j, {k: round(statistics.median(v),2) for k,v in d[j].items()}, 'first', sorted(d[j]['first']))
