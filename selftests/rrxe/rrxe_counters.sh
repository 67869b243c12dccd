#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Port counters: the same names as rdma_rxe's (compared with an rdma_rxe
# device created after rrxe's is gone: rdma_rxe's netdev notifier takes any
# RXE-driver device for its own, so the two never share this test), in
# sysfs and in `rdma statistic`; link_downed counts the link going down.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 5

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

cleanup_net
ktap_finished
