import sys, statistics as st, collections
d=collections.defaultdict(list)
for f in sys.argv[1:]:
    for line in open(f):
        p=line.split()
        if len(p)==3:
            try: d[p[1]].append(float(p[2]))
            except: pass
def q(v,x):
    v=sorted(v); i=(len(v)-1)*x; lo=int(i); hi=min(lo+1,len(v)-1); return v[lo]+(v[hi]-v[lo])*(i-lo)
best=min(st.median(d[k]) for k in ('tuned','tuned-ring','han') if d[k])
for k in ('after','before','tuned','tuned-ring','han'):
    if d[k]:
        m=st.median(d[k]); print(f"{k:11s} n={len(d[k]):2d} median {m:9.1f} us  [q1 {q(d[k],.25):8.1f} q3 {q(d[k],.75):8.1f}]  / best {m/best:5.2f}")
