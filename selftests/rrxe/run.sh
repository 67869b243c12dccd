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
# A test still running after RRXE_WATCHDOG seconds (default 900) gets the
# kernel's blocked tasks and CPU backtraces dumped into the kernel log
# (sysrq w and l), once, so that a hang leaves its cause in the log.
watchdog() {
	sleep "${RRXE_WATCHDOG:-900}"
	echo "# watchdog: $1 still running after ${RRXE_WATCHDOG:-900} s: sysrq w, l" >/dev/kmsg
	echo w >/proc/sysrq-trigger
	echo l >/proc/sysrq-trigger
}
for t in "$@"; do
	echo "# selftests: rrxe: $t"
	watchdog "$t" 2>/dev/null &
	wd=$!
	t0=$SECONDS
	out=$(bash "$dir/$t" 2>&1)
	rc=$?
	kill "$wd" 2>/dev/null
	wait "$wd" 2>/dev/null
	printf '%s\n' "$out"
	echo "# selftests: rrxe: $t took $((SECONDS - t0)) s"
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
