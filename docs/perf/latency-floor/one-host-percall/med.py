import sys,collections,statistics
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)==3:
        try: d[f[1]].append(float(f[2]))
        except: pass
t=statistics.median(d['tuned'])
for k,v in d.items(): print(k, len(v), 'median %.3f'%statistics.median(v), 'ratio %.2f'%(statistics.median(v)/t), sorted(v))
