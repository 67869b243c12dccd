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
for t in "$@"; do
	echo "# selftests: rrxe: $t"
	out=$(bash "$dir/$t" 2>&1)
	rc=$?
	printf '%s\n' "$out"
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
