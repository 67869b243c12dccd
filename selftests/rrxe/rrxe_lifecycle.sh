#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Device lifecycle over dummy, veth and a virtio-net NIC: add, delete,
# re-add, MTU tracking, netdev unregister and the sysfs parent.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 11

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 || ktap_exit_fail_msg "dummy setup failed"
ip link add rrxtva type veth peer name rrxtvb && ip link set rrxtva up &&
	ip link set rrxtvb up || ktap_exit_fail_msg "veth setup failed"

check "add on dummy" link_add rrxel0 rrxtd0
check "delete and re-add under the same name" \
	bash -c "rdma link delete rrxel0 && rdma link add rrxel0 type $RRXE_LINK_TYPE netdev rrxtd0 &&
		test -e /sys/class/infiniband/rrxel0"

mtu_is() {
	ip link set rrxtd0 mtu "$1" || return 1
	local got
	got=$(devinfo_field rrxel0 active_mtu)
	[ "$got" = "$2" ] || { echo "mtu $1: active_mtu '$got', expected '$2'"; return 1; }
}
check "active_mtu follows the netdev MTU" \
	bash -c "$(declare -f mtu_is devinfo_field); mtu_is 9000 '4096 (5)' && mtu_is 4191 '2048 (4)' &&
		mtu_is 1280 '1024 (3)' && mtu_is 600 '256 (1)' && mtu_is 1500 '1024 (3)'"

check "devices on both ends of a veth pair" \
	bash -c "rdma link add rrxel1 type $RRXE_LINK_TYPE netdev rrxtva &&
		rdma link add rrxel2 type $RRXE_LINK_TYPE netdev rrxtvb"
check "deleting the veth pair removes both devices" \
	bash -c "ip link del rrxtva && $(declare -f wait_for dev_gone); wait_for 10 dev_gone rrxel1 && wait_for 10 dev_gone rrxel2"
check "deleting the dummy netdev removes its device" \
	bash -c "ip link del rrxtd0 && $(declare -f wait_for dev_gone); wait_for 10 dev_gone rrxel0"

nic=$(for n in /sys/class/net/*; do
	[ -e "$n/device" ] && basename "$n" && break
done)
if [ -n "$nic" ]; then
	ip link set "$nic" up
	check "add on a NIC with a parent device ($nic)" link_add rrxel3 "$nic"
	check "the device's sysfs parent is the NIC's parent: device/net/$nic exists" \
		test -e "/sys/class/infiniband/rrxel3/device/net/$nic"
	check "delete on the NIC" \
		bash -c "rdma link delete rrxel3 && ! test -e /sys/class/infiniband/rrxel3"
else
	ktap_test_skip "add on a NIC with a parent device (no such NIC in this guest)"
	ktap_test_skip "sysfs parent"
	ktap_test_skip "delete on the NIC"
fi

unknown_netdev() {
	! rdma link add rrxel4 type "$RRXE_LINK_TYPE" netdev rrxt-nonexistent 2>/dev/null &&
		dev_gone rrxel4
}
check "add on a missing netdev fails cleanly" unknown_netdev
check "no rrxe device is left" bash -c "! ls /sys/class/infiniband | grep -q '^rrxel'"

cleanup_net
ktap_finished
