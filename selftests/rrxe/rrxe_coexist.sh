#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rrxe next to the in-tree rdma_rxe: one RXE-driver device per netdev, and
# rrxe's unload and netdev handling touch only rrxe's own devices.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 7

cleanup_net
modprobe rdma_rxe || ktap_exit_fail_msg "modprobe rdma_rxe failed"
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && mk_dummy rrxtd1 && mk_dummy rrxtd2 || ktap_exit_fail_msg "setup failed"

check "rdma_rxe device on one netdev" rdma link add rxec0 type rxe netdev rrxtd0
eexist() {
	local out
	out=$(link_add rrxec9 rrxtd0 2>&1) && { link_del rrxec9; echo "add succeeded"; return 1; }
	grep -q 'File exists' <<<"$out" || { echo "wrong error: $out"; return 1; }
}
check "rrxe on the same netdev gets EEXIST" eexist
check "rrxe devices on other netdevs" bash -c "rdma link add rrxec1 type rrxe netdev rrxtd1 &&
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
