#!/usr/bin/env python3
"""rounds.py ELEM HOSTS < topoar_plan output: the largest message and the
most one rank sends to one peer on another host in one round.  HOSTS maps
rank:host, comma separated.  Shape 8 as measured at 1 MiB:
  _build/tools/topoar_plan --algorithm flexrelay --count 262144 --elem-size 4 \\
      --segment 32K docs/perf/whole-ops/shape8-measured.topo |
      python3 docs/perf/whole-ops/rounds.py 4 0:0,1:1,3:1,4:1,2:2
"""
import collections
import re
import sys

elem = int(sys.argv[1])
host = dict((int(a), b) for a, b in (x.split(":") for x in sys.argv[2].split(",")))
rank = None
max_op = max_round = 0
where = None
for line in sys.stdin:
    m = re.match(r"rank (\d+):", line)
    if m:
        rank = int(m.group(1))
        continue
    m = re.match(r"\s+round (\d+):(.*)", line)
    if not m or rank is None:
        continue
    per_peer = collections.Counter()
    for peer, lo, hi in re.findall(r"send to (\d+) \[(\d+),(\d+)\)", m.group(2)):
        peer = int(peer)
        if host[peer] == host[rank]:
            continue
        n = (int(hi) - int(lo)) * elem
        max_op = max(max_op, n)
        per_peer[peer] += n
    for peer, n in per_peer.items():
        if n > max_round:
            max_round, where = n, (rank, int(m.group(1)), peer)
print("largest message %d KiB, most to one peer in a round %d KiB (rank, round, peer: %s)"
      % (max_op >> 10, max_round >> 10, where))
