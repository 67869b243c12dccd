#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma_cm over rrxe with librdmacm's stock tools, each over IPv4 and IPv6,
# in one namespace (server and client on one device, addressing its own IP)
# and between two namespaces joined by a veth pair:
#   rping -V        RC connect, SENDs, RDMA READ/WRITE, data validated;
#   ucmatose        RC connect/disconnect (REQ/REP/RTU, DREQ/DREP), SENDs;
#   udaddy          UD endpoints resolved with SIDR REQ/REP, datagrams;
#   mckey           a multicast group joined, datagrams sent to it (IPv4:
#                   ib_core's rdma_cm refuses IPv6 groups on RoCEv2);
#   rdma_server/rdma_client   rdma_reg_msgs and a SEND/RECV exchange;
#   rstream -T v    rsockets streams with data verification.
# Connection management MADs go through QP1 (GSI): ib_core's MAD layer on
# rrxe's kernel QPs.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 25

A=rrxtca B=rrxtcb
PAIR_DIR=$(mktemp -d)
: >"$PAIR_DIR/pids"
cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_veth_pair $A $B || ktap_exit_fail_msg "veth setup failed"
ip netns exec $A rdma link add rrxeca type "$RRXE_LINK_TYPE" netdev rrxtva &&
	ip netns exec $B rdma link add rrxecb type "$RRXE_LINK_TYPE" netdev rrxtvb ||
	ktap_exit_fail_msg "devices failed"
wait_gid rrxeca ffff:10.78.0.1 && wait_gid rrxecb ffff:10.78.0.2 &&
	wait_gid rrxeca fd78::1 && wait_gid rrxecb fd78::2 || ktap_exit_fail_msg "GIDs did not appear"

# Each check runs in one of two layouts: "one" (server and client in A, on
# device rrxeca, the client addressing A's own IP) or "two" (server in A,
# client in B). $srv is the server's address, $cli the client's own, $mc a
# multicast group of the same family.
layout() {
	case $1/$2 in
	one/4) ns_c=$A srv=10.78.0.1 cli=10.78.0.1 mc=239.1.2.3 ;;
	two/4) ns_c=$B srv=10.78.0.1 cli=10.78.0.2 mc=239.1.2.4 ;;
	one/6) ns_c=$A srv=fd78::1 cli=fd78::1 mc=ff0e::1:2:3 ;;
	two/6) ns_c=$B srv=fd78::1 cli=fd78::2 mc=ff0e::1:2:4 ;;
	esac
}

# Both sides of these tools print "return status 0" when all went well.
both_status0() {
	grep -q "return status 0" "$PAIR_DIR/client" && grep -q "return status 0" "$PAIR_DIR/server" || {
		echo "no 'return status 0':"; tail -n 20 "$PAIR_DIR/server" "$PAIR_DIR/client"; return 1
	}
}

t_rping() {
	pair cm:7174 $A "$ns_c" rping -s -a "$srv" -p 7174 -C 50 -S 512 -V -- \
		rping -c -a "$srv" -p 7174 -C 50 -S 512 -V -v || return 1
	[ "$(grep -c '^ping data: ' "$PAIR_DIR/client")" = 50 ] || { echo "client saw fewer than 50 pings"; return 1; }
}
t_ucmatose() {
	pair cm:7175 $A "$ns_c" ucmatose -b "$srv" -p 7175 -c 2 -C 20 -- ucmatose -s "$srv" -p 7175 -c 2 -C 20 &&
		both_status0
}
t_udaddy() {
	# udaddy has no port option (its -p is the port space): 7174.
	pair cm:7174 $A "$ns_c" udaddy -b "$srv" -C 20 -- udaddy -s "$srv" -C 20 && both_status0
}
t_mckey() {
	# The receiver joins first; the sender sends once the group shows up
	# on the receiver's netdev (rdma_cm joins it there for RoCE).
	pair "maddr:$mc" $A "$ns_c" mckey -m "$mc" -b "$srv" -C 20 -- mckey -m "$mc" -b "$cli" -s -C 20 &&
		both_status0
}
t_rdma_server() {
	pair cm:7177 $A "$ns_c" rdma_server -s "$srv" -p 7177 -- rdma_client -s "$srv" -p 7177 || return 1
	grep -q '^rdma_client: end 0' "$PAIR_DIR/client" && grep -q '^rdma_server: end 0' "$PAIR_DIR/server" || {
		echo "no 'end 0':"; tail -n 20 "$PAIR_DIR/server" "$PAIR_DIR/client"; return 1
	}
}
t_rstream() {
	# rsockets: 200 verified transfers of 16 KiB over an rsocket stream.
	pair cm:7178 $A "$ns_c" rstream -b "$srv" -p 7178 -S 16384 -C 200 -T v -- \
		rstream -s "$srv" -p 7178 -S 16384 -C 200 -T v || return 1
	grep -qE '^custom +16k +200 ' "$PAIR_DIR/client" && ! grep -qi 'fail\|error' "$PAIR_DIR/client" "$PAIR_DIR/server" || {
		echo "no clean result line:"; cat "$PAIR_DIR/client" "$PAIR_DIR/server"; return 1
	}
}

for where in one two; do
	for fam in 4 6; do
		layout $where $fam
		label="IPv$fam, $([ $where = one ] && echo "one namespace" || echo "two namespaces")"
		check "rping -V, $label: 50 validated pings" t_rping
		check "ucmatose, $label: 2 RC connections, 20 SENDs each, disconnect" t_ucmatose
		check "udaddy, $label: SIDR resolution, 20 datagrams each way" t_udaddy
		if [ $fam = 4 ]; then
			check "mckey, $label: join $mc, 20 datagrams to the group" t_mckey
		else
			# ib_core's rdma_cm (cma_iboe_join_multicast) refuses IPv6
			# multicast joins on RoCEv2 ports with ENOTSUPP, for every
			# driver; rdma_rxe cannot do it either.
			ktap_test_skip "mckey, $label: rdma_cm refuses IPv6 multicast on RoCEv2 (ENOTSUPP, in ib_core)"
		fi
		check "rdma_server/rdma_client, $label" t_rdma_server
		check "rstream -T v, $label: 200 verified 16 KiB transfers" t_rstream
	done
done
stop_servers
check "the devices delete cleanly afterwards" \
	bash -c "ip netns exec $A rdma link delete rrxeca && ip netns exec $B rdma link delete rrxecb"

rm -rf "$PAIR_DIR"
cleanup_net
ktap_finished
