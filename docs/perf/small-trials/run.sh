#!/bin/bash
cd /work/main
NT="--mca mca_base_component_path /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:/work/main/_install/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_rack_file @RACKFILE@ --mca coll_topoar_trial_calls 0"
common=(--configs topoar-auto,tuned-default,han --config "topoar-notrial=$NT" -r 9 --sizes 8:16384 -i 1000 -x 100 -b 2 --no-plot)
/usr/bin/python3 tests/bench/compare.py --scenario s1-trials --cluster st1 --nodes 2,3 --node-rate 200mbit "${common[@]}" -o /tmp/st/s1 > /tmp/st/s1.log 2>&1
/usr/bin/python3 tests/bench/compare.py --scenario s3-trials --cluster st3 --nodes 3,3 --node-rate 200mbit "${common[@]}" -o /tmp/st/s3 > /tmp/st/s3.log 2>&1
/usr/bin/python3 tests/bench/compare.py --scenario s2-trials --cluster st2 --racks '1,2;2,3' --node-rate 1gbit --rack-rate 200mbit --map-by node "${common[@]}" -o /tmp/st/s2 > /tmp/st/s2.log 2>&1
echo all done
