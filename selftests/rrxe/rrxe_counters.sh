#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Port counters: the same names as rdma_rxe's (compared with an rdma_rxe
# device created after rrxe's is gone: rdma_rxe's netdev notifier takes any
# RXE-driver device for its own, so the two never share this test), in
# sysfs and in `rdma statistic`; link_downed counts the link going down;
# rdma_sends and rdma_recvs count the SENDs and receives that completed,
# as rdma_rxe's do (the same pingpongs move them by the same amounts on a
# device of each).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && mk_dummy rrxtd1 && link_add rrxek0 rrxtd0 || ktap_exit_fail_msg "setup failed"
hw=/sys/class/infiniband/rrxek0/ports/1/hw_counters

check "17 counters in sysfs, all readable" \
	bash -c "[ \$(ls $hw | grep -vc lifespan) = 17 ] && cat $hw/* >/dev/null"
check "rdma statistic shows them" \
	bash -c "rdma statistic show link rrxek0/1 | grep -q 'sent_pkts 0' && rdma statistic show link rrxek0/1 | grep -q rcvd_bytes"

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

names=$(find "$hw" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort)
check "the device deletes cleanly" \
	bash -c "rdma link delete rrxek0 && ! test -e /sys/class/infiniband/rrxek0"

same_as_rxe() {
	modprobe rdma_rxe || return 1
	rdma link add rrxecmp0 type rxe netdev rrxtd1 || { modprobe -r rdma_rxe; return 1; }
	local b
	b=$(find /sys/class/infiniband/rrxecmp0/ports/1/hw_counters -mindepth 1 -maxdepth 1 -printf '%f\n' | sort)
	rdma link delete rrxecmp0
	modprobe -r rdma_rxe
	[ "$names" = "$b" ] || { diff <(echo "$names") <(echo "$b"); return 1; }
}
check "the same counter names as rdma_rxe" same_as_rxe

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
