#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Wire interop with the in-kernel rdma_rxe: rrxe in one namespace, rdma_rxe
# in another, over a veth pair. Stock ibv_ud_pingpong and ibv_uc_pingpong
# (-c, every buffer validated) in both directions, over IPv4 and IPv6.
#
# rdma_rxe takes every RXE-driver device it finds on a netdev for its own
# when that netdev has an event (see Documentation/admin-guide.rst), so the
# order matters: rdma_rxe is loaded and both veth ends are up and addressed
# before the rrxe device exists, nothing touches rrxe's netdev while it
# does, and the rrxe device goes first.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 8

A=rrxtia B=rrxtib
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
check "the rrxe device deletes first, then rdma_rxe's" \
	bash -c "rdma link delete rrxtrr && rdma link delete rrxtrxe &&
		! test -e /sys/class/infiniband/rrxtrr && ! test -e /sys/class/infiniband/rrxtrxe"
check "rdma_rxe unloads with no rrxe device left" modprobe -r rdma_rxe

cleanup_net
ktap_finished
