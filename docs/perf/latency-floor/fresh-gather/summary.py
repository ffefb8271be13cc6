import sys,collections,statistics as st
for fn in sys.argv[1:]:
    d=collections.defaultdict(lambda: collections.defaultdict(list)); wrong=0
    for l in open(fn):
        f=l.split()
        if len(f)<5 or not f[1].startswith('g='): continue
        wrong+=int(f[-1])
        for kv in f[4:]:
            if '=' in kv:
                k,v=kv.split('='); d[(f[1],f[2])][(f[3],k)].append(float(v))
    print(fn,'WRONG',wrong)
    for key in d:
        m={jk:st.median(v) for jk,v in d[key].items()}
        print(' ',key,'n',len(d[key][('lead','first')]),' '.join(f"{j}:{k}={m[(j,k)]:.0f}" for (j,k) in sorted(m) if k in('first','second','later')),
              f"lead/tuned first {m[('lead','first')]/m[('tuned','first')]:.2f} main/tuned {m[('main','first')]/m[('tuned','first')]:.2f}",
              f"first+second lead/main {(m[('lead','first')]+m[('lead','second')])/(m[('main','first')]+m[('main','second')]):.2f}")
