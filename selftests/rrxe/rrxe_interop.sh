#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Wire interop with the in-kernel rdma_rxe: rrxe in one namespace, rdma_rxe
# in another, over a veth pair. Stock ibv_ud_pingpong, ibv_uc_pingpong and
# ibv_rc_pingpong (-c, every buffer validated) in both directions, over IPv4
# and IPv6; RC RDMA READs and atomics (perftest) in both directions; rping
# with validation through rdma_cm in both directions, also over a lossy
# link, where reads are retried part-way.
#
# rdma_rxe takes every RXE-driver device it finds on a netdev for its own
# when that netdev has an event (see Documentation/admin-guide.rst), so the
# order matters: rdma_rxe is loaded and both veth ends are up and addressed
# before the rrxe device exists, nothing touches rrxe's netdev while it
# does, and the rrxe device goes first.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 21

A=rrxtia B=rrxtib
PAIR_DIR=$(mktemp -d)
: >"$PAIR_DIR/pids"
cleanup_net
lsmod | grep -q '^rdma_rxe ' || modprobe rdma_rxe || ktap_exit_fail_msg "modprobe rdma_rxe failed"
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_veth_pair $A $B || ktap_exit_fail_msg "veth setup failed"
ip netns exec $B rdma link add rrxtrxe type rxe netdev rrxtvb || ktap_exit_fail_msg "rdma_rxe device failed"
ip netns exec $A rdma link add rrxtrr type "$RRXE_LINK_TYPE" netdev rrxtva || ktap_exit_fail_msg "rrxe device failed"
wait_gid rrxtrr ffff:10.78.0.1 && wait_gid rrxtrxe ffff:10.78.0.2 &&
	wait_gid rrxtrr fd78::1 && wait_gid rrxtrxe fd78::2 || ktap_exit_fail_msg "GIDs did not appear"

check "UD, rrxe client to rdma_rxe server, IPv4" \
	pingpong_ns ibv_ud_pingpong $B rrxtrxe $A rrxtrr 10.78.0.2 ffff:10.78.0 -s 1024 -n 100
check "UD, rdma_rxe client to rrxe server, IPv4" \
	pingpong_ns ibv_ud_pingpong $A rrxtrr $B rrxtrxe 10.78.0.1 ffff:10.78.0 -s 1024 -n 100
check "UD, rrxe client to rdma_rxe server, IPv6, with 1-byte inline messages" \
	pingpong_ns ibv_ud_pingpong $B rrxtrxe $A rrxtrr 10.78.0.2 fd78: -s 1 -n 50
check "UC, rrxe client to rdma_rxe server, IPv4, 10000 bytes over a 1 KiB MTU" \
	pingpong_ns ibv_uc_pingpong $B rrxtrxe $A rrxtrr 10.78.0.2 ffff:10.78.0 -s 10000 -m 1024 -n 100
check "UC, rdma_rxe client to rrxe server, IPv4, 10000 bytes over a 1 KiB MTU" \
	pingpong_ns ibv_uc_pingpong $A rrxtrr $B rrxtrxe 10.78.0.1 ffff:10.78.0 -s 10000 -m 1024 -n 100
check "UC, rdma_rxe client to rrxe server, IPv6, 3000 bytes over a 256-byte MTU" \
	pingpong_ns ibv_uc_pingpong $A rrxtrr $B rrxtrxe 10.78.0.1 fd78: -s 3000 -m 256 -n 50
check "RC, rrxe client to rdma_rxe server, IPv4, 10000 bytes over a 1 KiB MTU" \
	pingpong_ns ibv_rc_pingpong $B rrxtrxe $A rrxtrr 10.78.0.2 ffff:10.78.0 -s 10000 -m 1024 -n 100
check "RC, rdma_rxe client to rrxe server, IPv4, 10000 bytes over a 1 KiB MTU" \
	pingpong_ns ibv_rc_pingpong $A rrxtrr $B rrxtrxe 10.78.0.1 ffff:10.78.0 -s 10000 -m 1024 -n 100
check "RC, rrxe client to rdma_rxe server, IPv6, 3000 bytes over a 256-byte MTU" \
	pingpong_ns ibv_rc_pingpong $B rrxtrxe $A rrxtrr 10.78.0.2 fd78: -s 3000 -m 256 -n 50

ga=$(gid_index rrxtrr ffff:10.78.0.1)
gb=$(gid_index rrxtrxe ffff:10.78.0.2)
# perf_ab TOOL PORT ARGS...: perftest server on rdma_rxe in B, client on
# rrxe in A; perf_ba the other way round.
perf_ab() {
	local tool=$1 port=$2; shift 2
	pair "tcp:$port" $B $A "$tool" -d rrxtrxe -x "$gb" -F -p "$port" "$@" -- \
		"$tool" -d rrxtrr -x "$ga" -F -p "$port" "$@" 10.78.0.2
}
perf_ba() {
	local tool=$1 port=$2; shift 2
	pair "tcp:$port" $A $B "$tool" -d rrxtrr -x "$ga" -F -p "$port" "$@" -- \
		"$tool" -d rrxtrxe -x "$gb" -F -p "$port" "$@" 10.78.0.1
}
check "RC READs, rrxe reading from rdma_rxe: ib_read_bw, 100 x 64 KiB" perf_ab ib_read_bw 18701 -s 65536 -n 100
check "RC READs, rdma_rxe reading from rrxe: ib_read_bw, 100 x 64 KiB" perf_ba ib_read_bw 18702 -s 65536 -n 100
check "RC atomics, rrxe to rdma_rxe: ib_atomic_bw, 100 fetch_adds" perf_ab ib_atomic_bw 18703 -n 100
check "RC atomics, rdma_rxe to rrxe: ib_atomic_bw -A CMP_AND_SWAP, 100" perf_ba ib_atomic_bw 18704 -A CMP_AND_SWAP -n 100
write_send_ab() { perf_ab ib_write_bw 18705 -s 65536 -n 100 && perf_ab ib_send_bw 18706 -s 65536 -n 100; }
check "RC WRITEs and SENDs, rrxe to rdma_rxe: ib_write_bw then ib_send_bw, 100 x 64 KiB" write_send_ab
# rping_x SRV_NS SRV_ADDR CLI_NS PORT: rping through rdma_cm, 200 validated
# pings counted by the client.
rping_x() {
	local n
	pair "cm:$4" "$1" "$3" rping -s -a "$2" -p "$4" -C 200 -S 1000 -V -- \
		rping -c -a "$2" -p "$4" -C 200 -S 1000 -V -v || return 1
	n=$(grep -c '^ping data: ' "$PAIR_DIR/client")
	[ "$n" -eq 200 ] || { echo "the client pinged $n times, not 200"; return 1; }
}
check "rping -V, rrxe client to rdma_rxe server (rdma_cm), 200 pings" rping_x $B 10.78.0.2 $A 7175
check "rping -V, rdma_rxe client to rrxe server (rdma_cm), 200 pings" rping_x $A 10.78.0.1 $B 7176
stop_servers
# The same over a link that loses 3% of the frames each way, with 60000-byte
# pings: rping's server READs the client's buffer, so each side's requester
# asks the other's responder again for the rest of a read that lost a
# response part-way (a READ at the PSN of the first response it lacks;
# rrxe as soon as it sees the gap, rdma_rxe when its timer fires). The
# reading device's completer_retry_err shows the retries; every ping must
# arrive intact. rdma_rxe waits for its retransmit timer, which rdma_cm
# sets to about a second on RoCE (a 100-ping run took it over 100 s), so
# it gets fewer pings; the debug kernel runs 8 each way. Each ping is some
# 120 frames at 3% loss, so nearly every ping loses one: 40 and 10 pings
# retry plenty (100 and 20 took 49 s and 21 s of the CI budget). The last
# three pings and the disconnect cross a link that loses nothing (see
# unlossed_end in lib.sh).
# rping_lossy SRV_NS SRV_ADDR SRV_DEV CLI_NS PORT COUNT
rping_lossy() {
	local n r0 r1 rc=0 c=/sys/class/infiniband/$3/ports/1/hw_counters/completer_retry_err
	set -- "$1" "$2" "$3" "$4" "$5" "$([ "${RRXE_DEBUG:-0}" = 1 ] && echo 8 || echo "$6")"
	r0=$(cat "$c")
	ip netns exec $A tc qdisc add dev rrxtva root netem loss 3% &&
		ip netns exec $B tc qdisc add dev rrxtvb root netem loss 3% || return 1
	pair "cm:$5" "$1" "$4" rping -s -a "$2" -p "$5" -C "$6" -S 60000 -V -- \
		bash -c "$(declare -f unlossed_end); unlossed_end $A $B $6 \
			rping -c -a $2 -p $5 -C $6 -S 60000 -V -v" || rc=1
	ip netns exec $A tc qdisc del dev rrxtva root 2>/dev/null
	ip netns exec $B tc qdisc del dev rrxtvb root 2>/dev/null
	r1=$(cat "$c")
	n=$(grep -c '^ping data: ' "$PAIR_DIR/client")
	echo "# $n of $6 pings validated; $3's completer_retry_err rose by $((r1 - r0))"
	[ "$n" -eq "$6" ] || { echo "the client pinged $n times, not $6"; rc=1; }
	[ $((r1 - r0)) -gt 0 ] || { echo "$3 retried no read: the loss did not reach them"; rc=1; }
	return $rc
}
check "3% loss: rrxe READs from rdma_rxe, retried part-way (rping -V, 60000-byte pings, rrxe server)" \
	rping_lossy $A 10.78.0.1 rrxtrr $B 7177 40
check "3% loss: rdma_rxe READs from rrxe, retried part-way (rping -V, 60000-byte pings, rdma_rxe server)" \
	rping_lossy $B 10.78.0.2 rrxtrxe $A 7178 10
stop_servers

# At a 4 KiB path MTU (veth MTU 9000) a 64 KiB message is 16 packets,
# most of them in bursts; rdma_rxe checks their ICRC and validates every
# message (-c), both ways. The rrxe device goes while the veth's MTU
# changes (see the top), and comes back.
big_mtu() {
	rdma link delete rrxtrr || return 1
	ip -n $A link set rrxtva mtu 9000 && ip -n $B link set rrxtvb mtu 9000 || return 1
	ip netns exec $A rdma link add rrxtrr type "$RRXE_LINK_TYPE" netdev rrxtva || return 1
	wait_gid rrxtrr ffff:10.78.0.1 || return 1
	wait_for 10 bash -c "ibv_devinfo -d rrxtrr | grep -q 'active_mtu:.*4096'" || { echo "active_mtu is not 4096"; return 1; }
	pingpong_ns ibv_rc_pingpong $B rrxtrxe $A rrxtrr 10.78.0.2 ffff:10.78.0 -s 65536 -m 4096 -n 30
}
check "RC, rrxe client to rdma_rxe server, IPv4, 64 KiB messages over a 4 KiB MTU (veth MTU 9000)" big_mtu
check "the rrxe device deletes first, then rdma_rxe's" \
	bash -c "rdma link delete rrxtrr && rdma link delete rrxtrxe &&
		! test -e /sys/class/infiniband/rrxtrr && ! test -e /sys/class/infiniband/rrxtrxe"
check "rdma_rxe unloads with no rrxe device left" modprobe -r rdma_rxe

rm -rf "$PAIR_DIR"
cleanup_net
ktap_finished
