#!/bin/bash
# raw.sh MODE: on c64's n0 (a) and n1 (b): one|duplex2|bidir ; prints rates and n0's reorder/retrans
a=topoar-c64-r0-n0; b=topoar-c64-r0-n1
ipa=$(ip netns exec $a ip -4 -o addr show eth0 | awk '{sub("/.*","",$4); print $4}')
ipb=$(ip netns exec $b ip -4 -o addr show eth0 | awk '{sub("/.*","",$4); print $4}')
S=/work/main/tests/bench/tcp_stream.py
ip netns exec $a nstat -n; ip netns exec $b nstat -n
case $1 in
one) ip netns exec $b python3 $S server 5001 & sleep 0.3; ip netns exec $a python3 $S client $ipb 5001 64; wait;;
duplex2) ip netns exec $b python3 $S server 5002 & ip netns exec $a python3 $S server 5003 & sleep 0.3
  ip netns exec $a python3 $S client $ipb 5002 64 & ip netns exec $b python3 $S client $ipa 5003 64 & wait;;
bidir) ip netns exec $b python3 /work/exp/bidir.py server 5009 64 & sleep 0.3; ip netns exec $a python3 /work/exp/bidir.py client $ipb 5009 64; wait;;
pin1) ip netns exec $b taskset -c 1 python3 /work/exp/bidir.py server 5009 64 & sleep 0.3; ip netns exec $a taskset -c 0 python3 /work/exp/bidir.py client $ipb 5009 64; wait;;
esac
echo "a: $(ip netns exec $a nstat | grep -i 'TcpRetransSegs\|SACKReorder' | awk '{printf "%s=%s ", $1, $2}') b: $(ip netns exec $b nstat | grep -i 'TcpRetransSegs\|SACKReorder' | awk '{printf "%s=%s ", $1, $2}')"
