#!/bin/sh
# pairs.sh QUERY EVENTS PARALLELISM ROUNDS BINARY... runs one Nexmark query
# with each streamsql binary in turn, ROUNDS times (checkpoints every 1 s,
# state in Pebble; INTERVAL=0 turns checkpoints off), and prints per binary
# the median events per CPU-second of the whole process, the median events
# per second (wall clock: p2 over p1's events/cpu-s is the "p2 / p1 core"
# of docs/benchmarks.md) and the median of
# the process's CPU over the generator's CPU (the generator's code is the
# same in both binaries, so this ratio follows the engine's cost per event
# while the machine's speed moves; it overcounts the generator when other
# goroutines crowd its thread, as in the joins). See docs/benchmarks.md.
set -e
q=$1 ev=$2 p=$3 rounds=$4
shift 4
dir=$(mktemp -d)
out=$dir/runs
trap 'rm -rf "$dir"' EXIT
i=0
while [ "$i" -lt "$rounds" ]; do
	for b in "$@"; do
		rm -rf "$dir/run"
		mkdir "$dir/run"
		"$b" bench run-one --spec "{\"query\":\"$q\",\"parallelism\":$p,\"interval\":${INTERVAL:-1000000000},\"events\":$ev,\"backend\":\"pebble\",\"dir\":\"$dir/run\"}" |
			tail -1 | sed 's/[{}"]//g; s/,/ /g' | tr ' ' '\n' |
			awk -F: -v b="$b" -v ev="$ev" '{v[$1]=$2} END {c=(v["user_ns"]+v["sys_ns"])/1e9; printf "%s %.0f %.2f %.0f\n", b, ev/c/1e3, c*1e9/v["gen_cpu_ns"], ev/(v["wall_ns"]/1e9)/1e3}' >>"$out"
	done
	i=$((i + 1))
done
for b in "$@"; do
	grep -F "$b " "$out" | awk '{print $2}' | sort -n | awk -v b="$b" '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%s: median %.0f K events/cpu-s over %d runs", b, m, NR}'
	grep -F "$b " "$out" | awk '{print $4}' | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf ", %.0f K events/s", m}'
	grep -F "$b " "$out" | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf ", CPU/generator %.2f\n", m}'
done
