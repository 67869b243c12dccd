#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma_cm over rrxe between two namespaces: connection management MADs go
# through QP1 (GSI), ib_core's MAD layer posting to rrxe's kernel QPs with
# kernel AHs and CQs. udaddy resolves UD endpoints with SIDR REQ/REP;
# ucmatose connects and disconnects RC endpoints (REQ/REP/RTU, DREQ/DREP);
# mckey joins a multicast group and moves UD datagrams to it.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

A=rrxtca B=rrxtcb
cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_veth_pair $A $B || ktap_exit_fail_msg "veth setup failed"
ip netns exec $A rdma link add rrxeca type "$RRXE_LINK_TYPE" netdev rrxtva &&
	ip netns exec $B rdma link add rrxecb type "$RRXE_LINK_TYPE" netdev rrxtvb ||
	ktap_exit_fail_msg "devices failed"
wait_gid rrxeca ffff:10.78.0.1 && wait_gid rrxecb ffff:10.78.0.2 || ktap_exit_fail_msg "GIDs did not appear"

# pair NAME SERVER_ARGS -- CLIENT_ARGS: the server in A, the client in B;
# both must end with "return status 0".
pair() {
	local tool=$1; shift
	local sargs=() log=/tmp/rrxe_cm.$$
	while [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	ip netns exec $A timeout 60 "$tool" "${sargs[@]}" >$log 2>&1 &
	local srv=$!
	sleep 2
	local out
	out=$(ip netns exec $B timeout 50 "$tool" "$@" 2>&1) || { echo "client: $out"; kill $srv 2>/dev/null; cat $log; rm -f $log; return 1; }
	wait $srv || { echo "server failed:"; cat $log; rm -f $log; return 1; }
	grep -q "return status 0" <<<"$out" && grep -q "return status 0" $log || { echo "$out"; cat $log; rm -f $log; return 1; }
	rm -f $log
}
check "udaddy: SIDR resolution of a UD endpoint through QP1" pair udaddy -b 10.78.0.1 -C 0 -- -s 10.78.0.1 -C 0
check "udaddy: SIDR, then 5 datagrams each way (replies addressed from the receive completions' GRH)" \
	pair udaddy -b 10.78.0.1 -C 5 -- -s 10.78.0.1 -C 5
check "ucmatose: RC connect and disconnect through QP1" pair ucmatose -b 10.78.0.1 -C 0 -- -s 10.78.0.1 -C 0
check "mckey: join 239.1.2.3 and receive 10 datagrams sent to the group" \
	pair mckey -m 239.1.2.3 -b 10.78.0.1 -C 10 -- -m 239.1.2.3 -b 10.78.0.2 -s -C 10
check "udaddy over IPv6: SIDR resolution" pair udaddy -b fd78::1 -C 0 -- -s fd78::1 -C 0
check "the devices delete cleanly afterwards" \
	bash -c "rdma link delete rrxeca && rdma link delete rrxecb"

cleanup_net
ktap_finished
