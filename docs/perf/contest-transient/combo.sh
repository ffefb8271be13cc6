#!/bin/bash
# One lock session: churn on s1, the 32 KiB class's contest verbose, and short jobs with the final build.
cd /tmp/24c-meas
echo "== churn g4"; ./churn.sh c24s1 "--nodes 2,3 --node-rate 200mbit" 2 -m 8 -g 4 -c 30 -n 20 -w 0
echo "== churn g2"; ./churn.sh c24s1 "--nodes 2,3 --node-rate 200mbit" 1 -m 8 -g 2 -c 30 -n 20 -w 0
echo "== 32k"; ./vb32.sh w24s1 "--nodes 2,3 --node-rate 200mbit" 2 32768
echo "== short s1 final"; ./short.sh x24s1 "--nodes 2,3 --node-rate 200mbit" 9
