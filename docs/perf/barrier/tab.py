# tab.py FILE...: medians per job and size of cmp.sh output (docs/perf/barrier,
# docs/perf/cpu-share, docs/perf/unseen); on / best of tuned, ring and han,
# x1..x9 (cmp.sh XARGS1..9) after on, each also over the best;
# and against the first reference job present (off, share0 or base):
# REF / best and on / REF.
import sys, statistics as st, collections
d=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sys.argv[1:]:
    for line in open(f):
        p=line.split()
        if len(p)<3 or ':' not in p[2]: continue
        for kv in p[2:]:
            s,v=kv.split(':'); d[p[1]][int(s)].append(float(v))
jobs=[j for j in ['on','alt','x','hv','off','share0','base','tuned','ring','han'] if j in d]
xs=sorted(j for j in d if j[:1]=='x' and j[1:].isdigit())  # x1..x9
jobs=jobs[:1]+xs+jobs[1:]
ref=next((j for j in ('off','share0','base') if j in d), None)
sizes=sorted(d[jobs[0]])
print('| size | '+' | '.join(jobs)+' | on/best |'+''.join(f' {x}/best |' for x in xs)+(f' {ref}/best | on/{ref} |' if ref else ''))
print('|---'*(len(jobs)+2+len(xs)+(2 if ref else 0))+'|')
for s in sizes:
    m={j:st.median(d[j][s]) for j in jobs}
    b=min((m[j] for j in ('tuned','ring','han') if j in m), default=None)
    r=lambda x: f"{x/b:.2f}" if b else '-'  # no tuned, ring or han job ran
    print(f"| {s} | "+' | '.join(f"{m[j]:.0f}" for j in jobs)+f" | {r(m['on'])} |"+''.join(f" {r(m[x])} |" for x in xs)+(f" {r(m[ref])} | {m['on']/m[ref]:.2f} |" if ref else ''))
