#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Receive fairness: one remote peer must not monopolise the receive path.
# A peer in namespace A streams 64 MiB RDMA READs (16 outstanding, with a
# short transport timeout, so duplicates of them follow) from a device in
# namespace B, over one veth pair. Meanwhile an RC pingpong runs between two
# other devices, in namespaces C and D over another veth pair. Every
# device's packets go through the module's receive work, so a responder
# that answered a 64 MiB READ in that work would hold the pingpong's
# packets behind it for seconds each.
#
# Checks: the pingpong completes (validated data) within its time limit
# while the reads stream (B sent thousands of read response packets during
# it, and the reader still runs at its end); the reader's victim process,
# killed mid-stream, exits within 10 s; its device deletes within 20 s while
# the reader goes on; afterwards the devices carry validated RC traffic,
# the kernel reported nothing, and rrxe unloads. The debug kernel reads
# 16 MiB at a time, runs 30 round trips, and gives the victim 40 s.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 5

A=rrxtqa B=rrxtqb C=rrxtqc D=rrxtqd
iters=100 size=$((64 << 20)) reads=20 exit_limit=10
if [ "${RRXE_DEBUG:-0}" = 1 ]; then
	iters=30 size=$((16 << 20)) exit_limit=40
	export PP_TIMEOUT=180
fi
export PP_TIMEOUT=${PP_TIMEOUT:-60}
cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_veth_pair $A $B || ktap_exit_fail_msg "veth setup failed"
ip netns add $C && ip netns add $D &&
	ip link add rrxtvc type veth peer name rrxtvd &&
	ip link set rrxtvc netns $C && ip link set rrxtvd netns $D &&
	ip -n $C addr add 10.79.0.1/24 dev rrxtvc && ip -n $D addr add 10.79.0.2/24 dev rrxtvd &&
	ip -n $C link set lo up && ip -n $D link set lo up &&
	ip -n $C link set rrxtvc up && ip -n $D link set rrxtvd up ||
	ktap_exit_fail_msg "second veth setup failed"
ip netns exec $A rdma link add rrxeqa type "$RRXE_LINK_TYPE" netdev rrxtva &&
	ip netns exec $B rdma link add rrxeqb type "$RRXE_LINK_TYPE" netdev rrxtvb &&
	ip netns exec $C rdma link add rrxeqc type "$RRXE_LINK_TYPE" netdev rrxtvc &&
	ip netns exec $D rdma link add rrxeqd type "$RRXE_LINK_TYPE" netdev rrxtvd ||
	ktap_exit_fail_msg "cannot add the devices"
wait_gid rrxeqa ffff:10.78.0.1 && wait_gid rrxeqb ffff:10.78.0.2 &&
	wait_gid rrxeqc ffff:10.79.0.1 && wait_gid rrxeqd ffff:10.79.0.2 ||
	ktap_exit_fail_msg "GIDs did not appear"
mark=$(kmsg_mark)
tmp=$(mktemp -d)
sent() { cat /sys/class/infiniband/rrxeqb/ports/1/hw_counters/sent_pkts; }

# The reader: ib_read_bw's server in B is the READ responder; its client in
# A reads. Timeout 10 (4 ms) makes the client send duplicates.
gi=$(gid_index rrxeqb ffff:10.78.0.2)
ip netns exec $B timeout 300 ib_read_bw -F -d rrxeqb -x "$gi" -s $size -n $reads -o 16 \
	>"$tmp/victim" 2>&1 &
victim=$!
pp_listening $victim $B
ip netns exec $A timeout 300 ib_read_bw -F -d rrxeqa -x "$gi" -s $size -n $reads -o 16 -u 10 \
	10.78.0.2 >"$tmp/reader" 2>&1 &
reader=$!

# The stream is under way once B has sent a few thousand packets.
streaming() { [ "$(sent)" -gt 4000 ]; }
during() {
	local t before after
	wait_for 60 streaming || { echo "no read stream: B sent $(sent) packets"; cat "$tmp/reader"; return 1; }
	before=$(sent) t=$SECONDS
	pingpong_ns ibv_rc_pingpong $C rrxeqc $D rrxeqd 10.79.0.1 ffff:10.79.0 \
		-s 4096 -m 1024 -n $iters || { echo "the pingpong failed after $((SECONDS - t)) s"; return 1; }
	after=$(sent)
	echo "$iters round trips in $((SECONDS - t)) s; B sent $((after - before)) packets meanwhile" >"$tmp/info"
	kill -0 $reader 2>/dev/null || { echo "the reader had finished: not a test"; cat "$tmp/reader"; return 1; }
	[ $((after - before)) -ge 2000 ] || { echo "B sent too little meanwhile"; return 1; }
}
check "an RC pingpong between other devices completes while 64 MiB reads stream" during
[ -f "$tmp/info" ] && sed 's/^/# /' "$tmp/info"

# Teardown under the stream: the responder's process, then its device.
gone() { [ ! -e "/proc/$1" ]; }
victim_exits() {
	local t=$SECONDS vpid
	vpid=$(pgrep -f "^ib_read_bw -F -d rrxeqb" | head -n1)
	[ -n "$vpid" ] || { echo "no victim process"; cat "$tmp/victim"; return 1; }
	kill -9 "$vpid"
	wait_for $exit_limit gone "$vpid" || { echo "the victim still runs after $exit_limit s"; return 1; }
	echo "the victim exited in $((SECONDS - t)) s" >"$tmp/info"
}
check "the responder's process, killed mid-stream, exits within $exit_limit s" victim_exits
sed 's/^/# /' "$tmp/info"
check "its device deletes within 20 s while the reader goes on" \
	timeout 20 ip netns exec $B rdma link delete rrxeqb
pkill -f "^ib_read_bw -F -d rrxeqa"
{ wait $reader $victim; } 2>/dev/null

after_traffic() {
	ip netns exec $B rdma link add rrxeqb type "$RRXE_LINK_TYPE" netdev rrxtvb &&
		wait_gid rrxeqb ffff:10.78.0.2 &&
		pingpong_ns ibv_rc_pingpong $A rrxeqa $B rrxeqb 10.78.0.1 ffff:10.78.0 -s 4096 -n 20 &&
		pingpong_ns ibv_rc_pingpong $C rrxeqc $D rrxeqd 10.79.0.1 ffff:10.79.0 -s 4096 -n 20
}
check "afterwards both pairs carry validated RC traffic" after_traffic

finish() {
	no_kernel_report "$mark" || return 1
	for d in rrxeqa rrxeqb rrxeqc rrxeqd; do rdma link delete $d || return 1; done
	cleanup_net
	unload_rrxe
}
check "no kernel report; the devices delete and rrxe unloads" finish
rm -rf "$tmp"
ktap_finished
