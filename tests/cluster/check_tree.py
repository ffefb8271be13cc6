#!/usr/bin/python3
"""Compare topoar's discovered tree with where the ranks really run.

usage: check_tree.py [--measured] TOPO_TEXT HOSTINFO_OUTPUT RACKFILE EXPECTED

TOPO_TEXT is `topoar_info --text` (topology file format), HOSTINFO_OUTPUT
the output of hostinfo ("rank R/P host H ..." lines), RACKFILE the
cluster's "host rack" file.  EXPECTED describes the shape, e.g. "2,3" (ranks
per node, one rack) or "1,2;2,3" (racks).  Checks: every rank sits under the
node named after its host, every node under the rack the rack file gives,
and the multiset of node sizes per rack equals EXPECTED.  --measured: the
tree's racks were measured (named m0, m1, ...), so they must group the
hosts as the rack file does, whatever their names.
"""
import re
import sys


def parse_topology(text):
    """-> {rank: (node, rack or None)}"""
    where = {}
    stack = []  # (indent, kind, name)
    for raw in text.splitlines():
        line = raw.split('#', 1)[0].rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        words = line.split()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        kind = words[0]
        if kind == 'ranks':
            node = next((n for _, k, n in reversed(stack) if k == 'node'), None)
            rack = next((n for _, k, n in reversed(stack) if k == 'rack'), None)
            for w in words[1:]:
                if '=' in w:
                    continue
                for part in w.split(','):
                    if '-' in part:
                        a, b = part.split('-')
                        ranks = range(int(a), int(b) + 1)
                    else:
                        ranks = [int(part)]
                    for r in ranks:
                        where[r] = (node, rack)
        elif kind in ('node', 'rack', 'spine', 'socket'):
            stack.append((indent, kind, words[1]))
    return where


def main():
    args = sys.argv[1:]
    measured = bool(args) and args[0] == '--measured'
    if measured:
        args = args[1:]
    topo_text, hostinfo, rackfile, expected = args[:4]
    where = parse_topology(open(topo_text).read())
    hosts = {}
    for line in open(hostinfo):
        m = re.match(r'rank (\d+)/(\d+) host (\S+)', line)
        if m:
            hosts[int(m.group(1))] = m.group(3)
    racks = {}
    for line in open(rackfile):
        words = line.split('#', 1)[0].split()
        if len(words) >= 2:
            racks[words[0]] = words[1]
    errors = []
    if sorted(where) != sorted(hosts) or not hosts:
        errors.append('ranks in tree %s != ranks seen %s' % (sorted(where), sorted(hosts)))
    for r, host in sorted(hosts.items()):
        node, rack = where.get(r, (None, None))
        if node != host:
            errors.append('rank %d runs on %s but the tree puts it on node %s' % (r, host, node))
        want_rack = racks.get(host)
        n_racks = len(set(racks.values()))
        if measured and n_racks > 1:
            # The same partition of the hosts: a rack of the tree maps to
            # one rack of the file and back.
            file_of = {}
            for r2, h2 in hosts.items():
                tree_rack = where.get(r2, (None, None))[1]
                file_of.setdefault(tree_rack, set()).add(racks.get(h2))
            if rack is None or file_of.get(rack) != {want_rack} or \
                    sum(1 for v in file_of.values() if want_rack in v) != 1:
                errors.append('rank %d: host %s (rack %s in the file) is in measured rack %s, which does '
                              'not group the hosts as the file does' % (r, host, want_rack, rack))
        elif measured and rack is not None:
            errors.append('rank %d: one rack in the file but the tree measured rack %s' % (r, rack))
        elif n_racks > 1 and rack != want_rack:
            errors.append('rank %d: host %s is in %s but the tree says rack %s' % (r, host, want_rack, rack))
    # shape: per rack, sorted node sizes
    per_rack = {}
    for r, (node, rack) in where.items():
        per_rack.setdefault(rack, {}).setdefault(node, 0)
        per_rack[rack][node] += 1
    got = sorted(sorted(n.values()) for n in per_rack.values())
    want = sorted(sorted(int(x) for x in grp.split(',')) for grp in expected.split(';'))
    if got != want:
        errors.append('node sizes per rack %s, expected %s' % (got, want))
    for e in errors:
        print('check_tree: ' + e)
    print('check_tree: %s (%d ranks, node sizes per rack %s)' % ('FAIL' if errors else 'OK', len(hosts), got))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
