#!/bin/bash
cd /work/bench35
/usr/bin/python3 /work/main/tests/bench/uneven_family.py --count 10 --seed 22 -r 2 --sizes 8M --only 3,4,5,8,9 --mpirun-arg="--mca coll_topoar_model_check 0" -o /work/bench35/uf22-off > uf22-off.txt 2>&1
/usr/bin/python3 /work/main/tests/bench/uneven_family.py --count 10 --seed 22 -r 2 --sizes 8M --only 3,4,5,8,9 -o /work/bench35/uf22-auto2 > uf22-auto2.txt 2>&1
