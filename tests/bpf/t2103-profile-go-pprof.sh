#!/usr/bin/env bash
# `go tool pprof -top` reads the agent's pprof (from the API and from
# `gpuwatch profile --pprof`), and its top function and sample count match
# ours (`gpuwatch profile --top`).
. "$(dirname "$0")/prof_lib.sh"
prof_require
need go

prof_start_agent --profile all
hot_prog t2103-hot "$BPF_FIXTURES/prog_hot" -- 120 3 1
pid=${P_PID[t2103-hot]}
prof_wait_samples "{pid=\"$pid\"}" 300 90
# A stored minute grows until the program stops: stop it and wait for the
# last drain, so that every reader below sees the same samples.
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
unset "P_PID[t2103-hot]"
# Stable: the same in three reads a second apart (four drains of 0.5 s:
# a drain late by a second on a loaded machine still shows).
same=0
stable() {
	prof_get "{pid=\"$pid\"}" folded >"$T_DIR/a" || return 1
	if [ -s "$T_DIR/prev" ] && cmp -s "$T_DIR/a" "$T_DIR/prev"; then
		same=$((same + 1))
	else
		same=0
	fi
	[ "$same" -ge 2 ] && return 0
	cp "$T_DIR/a" "$T_DIR/prev"
	sleep 1
	return 1
}
: >"$T_DIR/prev"
wait_until stable 30 "the profile of the stopped program still changes"
end=$(($(date +%s) + 60))
start=$((end - 600))

"$GPUWATCH" profile --url "$URL" --pid "$pid" --start "$start" --end "$end" --top 5 >"$T_DIR/top" ||
	fail "gpuwatch profile --top failed"
ours_fn=$(awk 'NR == 3 { print $5 }' "$T_DIR/top")
ours_n=$(awk 'NR == 1 { print $1 }' "$T_DIR/top")
[ "$ours_fn" = hot_a ] || fail "our top function is '$ours_fn': $(cat "$T_DIR/top")"

"$GPUWATCH" profile --url "$URL" --pid "$pid" --start "$start" --end "$end" --pprof "$T_DIR/cli.pb.gz" ||
	fail "gpuwatch profile --pprof failed"
prof_get "{pid=\"$pid\"}" pprof --data-urlencode "end=$end" --data-urlencode "start=$start" \
	-o "$T_DIR/api.pb.gz" || fail "GET format=pprof failed"
for f in cli api; do
	HOME="$T_DIR" GOCACHE="$T_DIR/gocache" go tool pprof -top -sample_index=samples \
		"$T_DIR/$f.pb.gz" >"$T_DIR/$f.top" 2>"$T_DIR/$f.err" ||
		fail "go tool pprof cannot read the $f profile: $(cat "$T_DIR/$f.err")"
	# the first row after the header "flat flat% sum% cum cum%"
	go_fn=$(awk 'f { print $6; exit } $1 == "flat" { f = 1 }' "$T_DIR/$f.top")
	go_n=$(sed -n 's/.*of \([0-9]*\) total.*/\1/p' "$T_DIR/$f.top" | head -n 1)
	[ "$go_fn" = "$ours_fn" ] || fail "pprof's top function ($f) is '$go_fn', ours '$ours_fn': $(head -n 8 "$T_DIR/$f.top")"
	[ "$go_n" = "$ours_n" ] || fail "pprof counts $go_n samples ($f), we $ours_n"
done
ok "go tool pprof: top function $go_fn, $go_n samples, as ours"
stop_agent
