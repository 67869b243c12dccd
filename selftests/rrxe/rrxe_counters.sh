#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Port counters: rdma_rxe's 17 first, under its names and in its order
# (compared with an rdma_rxe device created after rrxe's is gone: rdma_rxe's
# netdev notifier takes any RXE-driver device for its own, so the two never
# share this test), then the drops by reason (rrxe_drops.sh moves each) and
# cq_overflow (rrxe_cq.sh moves it), in sysfs and in `rdma statistic`;
# link_downed counts the link going down; rdma_sends and rdma_recvs count
# the SENDs and receives that completed, as rdma_rxe's do (the same
# pingpongs move them by the same amounts on a device of each).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && mk_dummy rrxtd1 && link_add rrxek0 rrxtd0 || ktap_exit_fail_msg "setup failed"
hw=/sys/class/infiniband/rrxek0/ports/1/hw_counters

check "28 counters in sysfs, all readable" \
	bash -c "[ \$(ls $hw | grep -vc lifespan) = 28 ] && cat $hw/* >/dev/null"
# stat_names DEV: the counter names of DEV's port 1 in `rdma statistic`,
# in its order (the driver's), one a line.
stat_names() {
	# shellcheck disable=SC2016 # awk's own variables
	rdma statistic show link "$1/1" | tr ' ' '\n' |
		awk 'p ~ /^[a-z_]+$/ && $0 ~ /^[0-9]+$/ { print p } { p = $0 }'
}
order=$(stat_names rrxek0)
check "rdma statistic shows them" \
	bash -c "rdma statistic show link rrxek0/1 | grep -q 'sent_pkts 0' && rdma statistic show link rrxek0/1 | grep -q cq_overflow"

downed() {
	local before after
	before=$(cat $hw/link_downed)
	ip link set rrxtd0 down && sleep 0.5 && ip link set rrxtd0 up && sleep 0.5
	ip link set rrxtd0 down && sleep 0.5 && ip link set rrxtd0 up
	# The counter's lifespan is 10 ms; wait it out.
	sleep 0.2
	after=$(cat $hw/link_downed)
	[ "$after" -eq $((before + 2)) ] || { echo "link_downed $before -> $after, expected +2"; return 1; }
}
check "link_downed counts two link downs" downed

check "the device deletes cleanly" \
	bash -c "rdma link delete rrxek0 && ! test -e /sys/class/infiniband/rrxek0"

same_as_rxe() {
	modprobe rdma_rxe || return 1
	rdma link add rrxecmp0 type rxe netdev rrxtd1 || { modprobe -r rdma_rxe; return 1; }
	local b
	b=$(stat_names rrxecmp0)
	rdma link delete rrxecmp0
	modprobe -r rdma_rxe
	[ "$(wc -w <<<"$b")" = 17 ] || { echo "rdma_rxe has $(wc -w <<<"$b") counters: $b"; return 1; }
	[ "$(head -n 17 <<<"$order")" = "$b" ] ||
		{ diff <(head -n 17 <<<"$order") <(echo "$b"); return 1; }
}
check "rdma_rxe's 17 counters first, under its names and in its order" same_as_rxe

# sends_recvs DEV: an RC and a UD pingpong (100 iterations each, buffers
# checked) between two QPs of DEV on its GID of 10.79.7.1; prints how much
# rdma_sends and rdma_recvs rose.
sends_recvs() {
	local dev=$1 c=/sys/class/infiniband/$1/ports/1/hw_counters s0 r0 gi tool srv
	wait_gid "$dev" ffff:10.79.7.1 || { echo "no GID on $dev"; return 1; }
	gi=$(gid_index "$dev" ffff:10.79.7.1)
	s0=$(cat "$c/rdma_sends") r0=$(cat "$c/rdma_recvs")
	for tool in ibv_rc_pingpong ibv_ud_pingpong; do
		timeout 60 "$tool" -d "$dev" -g "$gi" -c -n 100 -s 512 >/dev/null 2>&1 &
		srv=$!
		pp_listening $srv
		timeout 60 "$tool" -d "$dev" -g "$gi" -c -n 100 -s 512 127.0.0.1 >/dev/null 2>&1 &&
			wait $srv || { kill $srv 2>/dev/null; echo "$tool on $dev failed"; return 1; }
	done
	echo "$(($(cat "$c/rdma_sends") - s0)) $(($(cat "$c/rdma_recvs") - r0))"
}
same_counts() {
	local x y
	ip addr add 10.79.7.1/24 dev rrxtd1 || return 1
	modprobe rdma_rxe && rdma link add rrxecmp0 type rxe netdev rrxtd1 || return 1
	x=$(sends_recvs rrxecmp0)
	rdma link delete rrxecmp0
	modprobe -r rdma_rxe
	link_add rrxek1 rrxtd1 || return 1
	y=$(sends_recvs rrxek1)
	rdma link delete rrxek1
	echo "rdma_sends and rdma_recvs rose by: rdma_rxe $x, rrxe $y"
	[ -n "$y" ] && [ "$x" = "$y" ] && [ "${y%% *}" -gt 0 ] && [ "${y##* }" -gt 0 ]
}
check "rdma_sends and rdma_recvs count completed SENDs and receives as rdma_rxe does" same_counts

cleanup_net
ktap_finished
