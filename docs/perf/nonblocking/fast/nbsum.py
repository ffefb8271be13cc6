import sys,statistics,collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)>=4: d[(int(f[2]),f[1])].append(float(f[3]))
sizes=sorted({k[0] for k in d})
print("size  libnbc  main  lead  main/libnbc  lead/libnbc")
for s in sizes:
    m={j: statistics.median(d[(s,j)]) for j in ('libnbc','main','lead') if (s,j) in d}
    print(s, *('%.2f'%m[j] for j in ('libnbc','main','lead')), '%.2f'%(m['main']/m['libnbc']), '%.2f'%(m['lead']/m['libnbc']))
