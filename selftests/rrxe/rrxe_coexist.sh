#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rrxe next to the in-tree rdma_rxe: one RXE-driver device per netdev, one
# RoCEv2 provider per network namespace (UDP 4791 binds once), and rrxe's
# unload and netdev handling touch only rrxe's own devices.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 8

cleanup_net
modprobe rdma_rxe || ktap_exit_fail_msg "modprobe rdma_rxe failed"
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
NS=rrxtcx
mk_dummy rrxtd0 && mk_dummy rrxtd3 && ip netns add $NS &&
	ip -n $NS link add rrxtd1 type dummy && ip -n $NS link set rrxtd1 up &&
	ip -n $NS link add rrxtd2 type dummy && ip -n $NS link set rrxtd2 up ||
	ktap_exit_fail_msg "setup failed"

check "rdma_rxe device on one netdev" rdma link add rxec0 type rxe netdev rrxtd0
eexist() {
	local out
	out=$(link_add rrxec9 rrxtd0 2>&1) && { link_del rrxec9; echo "add succeeded"; return 1; }
	grep -q 'File exists' <<<"$out" || { echo "wrong error: $out"; return 1; }
}
check "rrxe on the same netdev gets EEXIST" eexist
addrinuse() {
	local out
	out=$(link_add rrxec9 rrxtd3 2>&1) && { link_del rrxec9; echo "add succeeded"; return 1; }
	grep -q 'Address already in use' <<<"$out" || { echo "wrong error: $out"; return 1; }
}
check "rrxe in rdma_rxe's namespace gets EADDRINUSE (UDP 4791 is taken)" addrinuse
check "rrxe devices on netdevs in another namespace" \
	ip netns exec $NS bash -c "rdma link add rrxec1 type rrxe netdev rrxtd1 &&
	rdma link add rrxec2 type rrxe netdev rrxtd2"
check "both drivers' devices open through librxe" \
	bash -c "ibv_devinfo -d rxec0 >/dev/null && ibv_devinfo -d rrxec1 >/dev/null"
check "unregistering rdma_rxe's netdev leaves rrxe's devices alone" \
	bash -c "ip link del rrxtd0 && $(declare -f wait_for dev_gone); wait_for 10 dev_gone rxec0 &&
		test -e /sys/class/infiniband/rrxec1 && test -e /sys/class/infiniband/rrxec2"
ip link add rrxtd0 type dummy && ip link set rrxtd0 up && rdma link add rxec0 type rxe netdev rrxtd0
check "unloading rrxe removes only rrxe's devices" \
	bash -c "modprobe -r rrxe && test -e /sys/class/infiniband/rxec0 &&
		! test -e /sys/class/infiniband/rrxec1 && ! test -e /sys/class/infiniband/rrxec2"
check "rdma_rxe's device still works after rrxe is gone" \
	bash -c "ibv_devinfo -d rxec0 | grep -q PORT_ACTIVE && rdma link delete rxec0"

cleanup_net
modprobe -r rdma_rxe 2>/dev/null
ktap_finished
