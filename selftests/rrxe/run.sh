#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs the rrxe selftests (all of TEST_PROGS, or those named), each in KTAP,
# and prints a summary line. Meant for the test guest:
#   tools/guest -- selftests/rrxe/run.sh
set -uo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046
	set -- $(sed -n 's/^TEST_PROGS := //p' "$dir/Makefile")
fi
pass=0 fail=0 skip=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# A test still running after RRXE_WATCHDOG seconds (default 900) gets the
# kernel's blocked tasks and CPU backtraces dumped into the kernel log
# (sysrq w and l), once, then every process of the test (orphans too) with its state,
# wait channel and kernel stack, so that a hang leaves its cause in the
# log (a test waiting in user space shows no blocked task), and the last
# lines the test printed. With RRXE_WATCHDOG_KILL=N (`make test` sets it,
# where every test takes well under the watchdog's time) it kills the test
# N seconds later, and the test fails.
descendants() {
	local c
	echo "$1"
	for c in $(pgrep -P "$1"); do descendants "$c"; done
}
# Each line of standard input as its own kernel log record.
to_kmsg() {
	local l
	while IFS= read -r l; do echo "# watchdog: ${l:0:200}" >/dev/kmsg; done
}
# test_procs PID: the test's processes: PID's tree, and the orphans of
# this session (reparented to init, they can hold the test's output open),
# but not this script's ancestors.
test_procs() {
	local sid p=$$ up=" "
	descendants "$1"
	while [ -n "$p" ] && [ "$p" -gt 1 ]; do
		up+="$p "
		p=$(ps -o ppid= -p "$p" | tr -d ' ')
	done
	sid=$(ps -o sid= -p $$ | tr -d ' ')
	ps -e -o pid=,ppid=,sid= | awk -v s="$sid" -v up="$up" \
		'$2 == 1 && $3 == s && index(up, " " $1 " ") == 0 { print $1 }'
}
watchdog() {
	local p
	sleep "${RRXE_WATCHDOG:-900}"
	echo "# watchdog: $1 still running after ${RRXE_WATCHDOG:-900} s: sysrq w, l" >/dev/kmsg
	echo w >/proc/sysrq-trigger
	echo l >/proc/sysrq-trigger
	tail -n 5 "$3" | sed 's/^/output: /' | to_kmsg
	rdma -d res show qp 2>/dev/null | grep -v ' comm \[' | head -n 20 | to_kmsg
	for p in $(test_procs "$2"); do
		ps -o pid=,ppid=,stat=,wchan:32=,etime=,args= -p "$p" | to_kmsg
		head -n 12 "/proc/$p/stack" 2>/dev/null | sed 's/^/  /' | to_kmsg
	done
	# Then the test goes, so that the run goes on and blames it (a task
	# stuck in the kernel stays, and the guest's time limit ends it).
	[ -n "${RRXE_WATCHDOG_KILL:-}" ] || return 0
	sleep "$RRXE_WATCHDOG_KILL"
	echo "# watchdog: killed $1 after $((${RRXE_WATCHDOG:-900} + RRXE_WATCHDOG_KILL)) s" | tee -a "$3" >/dev/kmsg
	# shellcheck disable=SC2046 # a list of PIDs
	kill -KILL $(test_procs "$2") 2>/dev/null
}
# The guest's CPU time so far (user, nice, system, irq, softirq, in
# 1/100 s) from /proc/stat: a script's share of it says how much of the
# host's CPU its time took (an idle vCPU costs the host nothing under TCG).
busy() {
	local u n s q sq
	read -r _ u n s _ _ q sq _ </proc/stat
	echo $((u + n + s + q + sq))
}
for t in "$@"; do
	echo "# selftests: rrxe: $t"
	t0=$SECONDS
	b0=$(busy)
	bash "$dir/$t" >"$log" 2>&1 &
	tp=$!
	watchdog "$t" "$tp" "$log" 2>/dev/null &
	wd=$!
	# (Quietly: bash would report a job the watchdog killed.)
	wait "$tp" 2>/dev/null
	rc=$?
	out=$(cat "$log")
	kill "$wd" 2>/dev/null
	wait "$wd" 2>/dev/null
	printf '%s\n' "$out"
	b1=$(busy)
	echo "# selftests: rrxe: $t took $((SECONDS - t0)) s, the CPUs busy $(((b1 - b0) / 100)) s"
	p=$(printf '%s\n' "$out" | grep -cE '^ok [0-9]+ ' )
	s=$(printf '%s\n' "$out" | grep -cE '^ok [0-9]+ .*# SKIP')
	f=$(printf '%s\n' "$out" | grep -cE '^not ok [0-9]+ ')
	planned=$(printf '%s\n' "$out" | sed -n 's/^1\.\.\([0-9]*\)$/\1/p' | head -n1)
	ran=$((p + f))
	if [ -n "$planned" ] && [ "$ran" -lt "$planned" ]; then
		echo "# $t: only $ran of $planned planned tests ran"
		f=$((f + planned - ran))
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "# $t: exited $rc with no failing test"
		f=$((f + 1))
	fi
	pass=$((pass + p - s)); skip=$((skip + s)); fail=$((fail + f))
done
echo "selftests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
