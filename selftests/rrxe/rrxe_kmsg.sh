#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The kernel log that every test's "no kernel report" check reads
# (lib.sh's kmsg_mark, kmsg_since and no_kernel_report), and that
# tools/guest-init scans at the end of a run. A whole suite logs more than
# the kernel's default ring buffer (128 KiB) keeps: the oldest lines go,
# so a mark that counted lines pointed past the end (a test saw none of
# its own lines), and the final scan missed the reports of the run's
# first part. 3000 lines of about 110 bytes (330 KiB) are logged after a
# mark:
#   1. kmsg_since returns exactly them, in order, and not the line before
#      the mark;
#   2. the kernel log still begins with the boot (tools/guest gives the
#      guest a 16 MiB buffer), so the run's earlier lines are all there.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 2

N=3000
tag="rrxe_kmsg.$$.$RANDOM"
pad=$(printf '%080d' 0)
echo "$tag before" >/dev/kmsg
mark=$(kmsg_mark)
# One open per line: /dev/kmsg limits each open file to a burst of 10.
for ((i = 1; i <= N; i++)); do
	printf '%s line %04d %s\n' "$tag" "$i" "$pad" >/dev/kmsg
done

since_mark() {
	local got want
	got=$(kmsg_since "$mark" | grep -o "$tag [a-z]* *[0-9]*")
	want=$(for ((i = 1; i <= N; i++)); do printf '%s line %04d\n' "$tag" "$i"; done)
	[ "$got" = "$want" ] && return 0
	echo "kmsg_since returned $(printf '%s\n' "$got" | grep -c .) of the $N lines logged after the mark" \
		"(first: $(printf '%s\n' "$got" | head -n1))"
	return 1
}

boot_kept() {
	local first
	first=$(dmesg | sed -n '1,5p')
	[[ $first == *"Linux version"* ]] && return 0
	echo "the kernel log no longer begins with the boot; it begins: ${first%%$'\n'*}"
	return 1
}

check "kmsg_since returns the $N lines logged after kmsg_mark, in order, and not the line before" since_mark
check "the kernel log still holds the boot's first lines after $N more (the guest's 16 MiB buffer)" boot_kept

ktap_finished
