#!/bin/bash
# 8 B - 32 MiB per scenario: auto (rack file) against tuned's default and ring and han, separate jobs
cd /work/main
common=(--configs topoar-auto,tuned-default,tuned-ring,han -r 3 --sizes 8:33554432 -i 200 -x 20 -I 3 -b 1 --bench-arg=-X --bench-arg=1 --no-plot)
/usr/bin/python3 tests/bench/compare.py --scenario s1-full --cluster lg1 --nodes 2,3 --node-rate 200mbit "${common[@]}" -o /tmp/lg/s1 > /tmp/lg/s1.log 2>&1
/usr/bin/python3 tests/bench/compare.py --scenario s3-full --cluster lg3 --nodes 3,3 --node-rate 200mbit "${common[@]}" -o /tmp/lg/s3 > /tmp/lg/s3.log 2>&1
/usr/bin/python3 tests/bench/compare.py --scenario s2-full --cluster lg2 --racks '1,2;2,3' --node-rate 1gbit --rack-rate 200mbit --map-by node "${common[@]}" -o /tmp/lg/s2 > /tmp/lg/s2.log 2>&1
echo all done
