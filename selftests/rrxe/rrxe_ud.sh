#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# UD and UC traffic on one device (local delivery), with the stock
# ibv_ud_pingpong and ibv_uc_pingpong validating every buffer (-c): over
# the IPv4-mapped GID and over the IPv6 link-local one, with and without
# inline data, UC messages over several MTUs; the port counters count what
# moved.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 7

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && ip addr add 10.77.0.1/24 dev rrxtd0 && link_add rrxeu0 rrxtd0 ||
	ktap_exit_fail_msg "setup failed"
hw=/sys/class/infiniband/rrxeu0/ports/1/hw_counters
gid_ready() { ibv_devinfo -v -d rrxeu0 | grep -q "GID\[  $1\].*$2"; }
wait_for 10 gid_ready 1 ffff:10.77.0.1 && wait_for 10 gid_ready 0 fe80 ||
	ktap_exit_fail_msg "GIDs did not appear"

# pingpong GID SIZE ITERS [EXTRA...]: server and client on rrxeu0.
pingpong() {
	local g=$1 s=$2 n=$3; shift 3
	ibv_ud_pingpong -d rrxeu0 -g "$g" -s "$s" -n "$n" -c "$@" >/tmp/rrxe_ud_srv.$$ 2>&1 &
	local srv=$!
	sleep 1
	timeout 60 ibv_ud_pingpong -d rrxeu0 -g "$g" -s "$s" -n "$n" -c "$@" 127.0.0.1 || {
		kill $srv 2>/dev/null; cat /tmp/rrxe_ud_srv.$$; return 1; }
	wait $srv || { cat /tmp/rrxe_ud_srv.$$; return 1; }
	rm -f /tmp/rrxe_ud_srv.$$
}

before=$(cat $hw/sent_pkts)
check "ibv_ud_pingpong -c over IPv4, 1024-byte messages, 100 iterations" pingpong 1 1024 100
counted() {
	local s r
	s=$(cat $hw/sent_pkts); r=$(cat $hw/rcvd_pkts)
	[ $((s - before)) -eq 200 ] && [ "$r" -ge 200 ] || { echo "sent $((s - before)) received $r"; return 1; }
}
check "sent_pkts and rcvd_pkts count the 200 datagrams" counted
check "ibv_ud_pingpong -c over IPv6 link-local, 512-byte messages" pingpong 0 512 50
check "ibv_ud_pingpong -c with 1-byte messages" pingpong 1 1 20
uc_pingpong() {
	local g=$1; shift
	ibv_uc_pingpong -d rrxeu0 -g "$g" -c "$@" >/tmp/rrxe_uc_srv.$$ 2>&1 &
	local srv=$!
	sleep 1
	timeout 60 ibv_uc_pingpong -d rrxeu0 -g "$g" -c "$@" 127.0.0.1 || {
		kill $srv 2>/dev/null; cat /tmp/rrxe_uc_srv.$$; return 1; }
	wait $srv || { cat /tmp/rrxe_uc_srv.$$; return 1; }
	rm -f /tmp/rrxe_uc_srv.$$
}
check "ibv_uc_pingpong -c on one device: 10000-byte messages over a 1 KiB MTU" uc_pingpong 1 -s 10000 -m 1024 -n 100
check "ibv_uc_pingpong -c on one device over IPv6: 1-byte messages" uc_pingpong 0 -s 1 -n 50
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxeu0 && ! test -e /sys/class/infiniband/rrxeu0"

cleanup_net
ktap_finished
