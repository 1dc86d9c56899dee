#!/bin/sh
# onoff.sh QUERY EVENTS PARALLELISM ROUNDS BINARY runs one Nexmark query
# with checkpoints every 1 s (state in Pebble; BACKEND=hashmap for the
# in-memory backend) and with checkpoints off, alternately, ROUNDS times
# each, and prints per mode the median events per CPU-second of the whole
# process and the median of the process's CPU over the generator's CPU,
# then the checkpoint overhead from the latter (the generator's work is the
# same in both modes, so this ratio follows the engine's cost per event
# while the machine's speed moves; single runs' events per CPU-second swing
# by a third here within minutes). See docs/benchmarks.md.
set -e
q=$1 ev=$2 p=$3 rounds=$4 b=$5
dir=$(mktemp -d)
out=$dir/runs
trap 'rm -rf "$dir"' EXIT
i=0
while [ "$i" -lt "$rounds" ]; do
	for iv in 1000000000 0; do
		rm -rf "$dir/run"
		mkdir "$dir/run"
		"$b" bench run-one --spec "{\"query\":\"$q\",\"parallelism\":$p,\"interval\":$iv,\"events\":$ev,\"backend\":\"${BACKEND:-pebble}\",\"dir\":\"$dir/run\"}" |
			tail -1 | sed 's/[{}"]//g; s/,/ /g' | tr ' ' '\n' |
			awk -F: -v iv="$iv" -v ev="$ev" '{v[$1]=$2} END {c=(v["user_ns"]+v["sys_ns"])/1e9; printf "%s %.0f %.3f\n", (iv>0?"on":"off"), ev/c/1e3, c*1e9/v["gen_cpu_ns"]}' >>"$out"
	done
	i=$((i + 1))
done
med() { sort -n | awk -v f="$1" '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf f, m}'; }
for m in on off; do
	printf '%s: median %s K events/cpu-s, CPU/generator %s over %d runs\n' "$m" \
		"$(grep "^$m " "$out" | awk '{print $2}' | med %.0f)" "$(grep "^$m " "$out" | awk '{print $3}' | med %.2f)" "$rounds"
done
on=$(grep "^on " "$out" | awk '{print $3}' | med %.4f)
off=$(grep "^off " "$out" | awk '{print $3}' | med %.4f)
awk -v a="$on" -v b="$off" 'BEGIN {printf "checkpoint overhead (CPU per generator CPU): %+.0f%%\n", (a/b-1)*100}'
