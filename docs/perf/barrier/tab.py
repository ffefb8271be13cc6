import sys, statistics as st, collections
d=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sys.argv[1:]:
    for line in open(f):
        p=line.split()
        if len(p)<3 or ':' not in p[2]: continue
        for kv in p[2:]:
            s,v=kv.split(':'); d[p[1]][int(s)].append(float(v))
jobs=[j for j in ['on','off','tuned','ring','han'] if j in d]
sizes=sorted(d[jobs[0]])
off='off' in d
print('| size | '+' | '.join(jobs)+' | on/best |'+(' off/best | on/off |' if off else ''))
print('|---'*(len(jobs)+2+(2 if off else 0))+'|')
for s in sizes:
    m={j:st.median(d[j][s]) for j in jobs}
    b=min(m[j] for j in ('tuned','ring','han') if j in m)
    print(f"| {s} | "+' | '.join(f"{m[j]:.0f}" for j in jobs)+f" | {m['on']/b:.2f} |"+(f" {m['off']/b:.2f} | {m['on']/m['off']:.2f} |" if off else ''))
