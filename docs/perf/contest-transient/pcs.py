import sys, statistics as st, collections
d=collections.defaultdict(list)
for f in sys.argv[1:]:
    for line in open(f):
        p=line.split()
        if len(p)>=52:
            v=[float(x) for x in p[2:52]]; d[p[1]].append(v)
def q(v,x):
    v=sorted(v); i=(len(v)-1)*x; lo=int(i); hi=min(lo+1,len(v)-1); return v[lo]+(v[hi]-v[lo])*(i-lo)
res={}
for k,jobs in d.items():
    avg=[sum(j[10:50])/40 for j in jobs]          # OSU's 40 timed after 10 warm-up
    typ=sum(st.median(j[i] for j in jobs) for i in range(10,50))/40  # per-call medians over jobs
    res[k]=(st.median(avg),q(avg,.25),q(avg,.75),typ,len(jobs))
best=min(res[k][0] for k in ('tuned','tuned-ring','han') if k in res)
bestt=min(res[k][3] for k in ('tuned','tuned-ring','han') if k in res)
for k in ('after','before','tuned','tuned-ring','han'):
    if k in res:
        m,a,b,t,n=res[k]; print(f"{k:11s} n={n:2d} job-avg median {m:8.1f} us [q1 {a:8.1f} q3 {b:8.1f}] /best {m/best:5.2f} | per-call medians {t:8.1f} us /best {t/bestt:5.2f}")
