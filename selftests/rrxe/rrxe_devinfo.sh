#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Stock rdma-core (libibverbs + librxe) sees an rrxe device with rxe's
# attributes, and the user verbs that exist so far reach the driver.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 12

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
# The MAC is given when the dummy is created, not set after: udev's
# MACAddressPolicy=persistent gives a new dummy a MAC of its own (for
# rrxtd0, 1e:0d:2b:3d:d6:fc in the test guest), and a MAC set in between
# can lose that race.
ip link add rrxtd0 address 52:54:00:ab:cd:ef type dummy && ip link set rrxtd0 up &&
	ip addr add 192.0.2.1/24 dev rrxtd0 || ktap_exit_fail_msg "dummy netdev setup failed"

check "rdma link add creates the device" link_add rrxet0 rrxtd0
check "ibv_devices lists it with the MAC-derived node GUID" \
	bash -c "ibv_devices | grep -E '^\s*rrxet0\s+505400fffeabcdef\s*$'"
check "librxe opens it (driver id RXE, ABI 2) and reports RoCE on Ethernet" \
	bash -c "ibv_devinfo -d rrxet0 | grep -q 'transport:.*InfiniBand (0)' &&
		ibv_devinfo -d rrxet0 | grep -q 'link_layer:.*Ethernet'"

expect_attrs() {
	local dev=$1; shift
	local kv k v got rc=0
	for kv in "$@"; do
		k=${kv%%=*}; v=${kv#*=}
		got=$(devinfo_field "$dev" "$k")
		if [ "$got" != "$v" ]; then
			echo "$k: expected '$v', got '$got'"
			rc=1
		fi
	done
	return $rc
}
check "device attributes match rxe's" expect_attrs rrxet0 \
	vendor_id=0xffffff max_mr_size=0xffffffffffffffff page_size_cap=0xfffff000 \
	max_qp=1048560 max_qp_wr=1048576 max_sge=32 max_sge_rd=32 max_cq=1048576 \
	max_cqe=32767 max_mr=524287 max_pd=1048576 max_qp_rd_atom=128 \
	max_res_rd_atom=258048 max_qp_init_rd_atom=128 atomic_cap="ATOMIC_HCA (1)" \
	max_mw=524287 max_mcast_grp=8192 max_mcast_qp_attach=56 \
	max_total_mcast_qp_attach=458752 max_ah=32767 max_srq=917503 \
	max_srq_wr=1048576 max_srq_sge=27 max_pkeys=64 local_ca_ack_delay=15 \
	sys_image_guid=5054:00ff:feab:cdef node_guid=5054:00ff:feab:cdef
check "port attributes match rxe's" expect_attrs rrxet0 \
	state="PORT_ACTIVE (4)" max_mtu="4096 (5)" active_mtu="1024 (3)" \
	sm_lid=0 port_lid=0 port_lmc=0x00 link_layer=Ethernet max_msg_sz=0x80000000 \
	max_vl_num="1 (1)" pkey_tbl_len=1 gid_tbl_len=1024 phys_state="LINK_UP (5)"
gids_ok() {
	local g
	g=$(ibv_devinfo -v -d rrxet0)
	grep -q 'GID\[ *[0-9]*\]:[[:space:]]*fe80::5054:ff:feab:cdef, RoCE v2' <<<"$g" &&
		grep -q 'GID\[ *[0-9]*\]:[[:space:]]*::ffff:192.0.2.1, RoCE v2' <<<"$g"
}
check "RoCEv2 GIDs come from the netdev's addresses (link-local and IPv4)" wait_for 10 gids_ok
check "rdma link shows the port ACTIVE on its netdev" \
	bash -c "rdma link show rrxet0/1 | grep -q 'state ACTIVE physical_state LINK_UP netdev rrxtd0'"
check "sysfs node type and description" \
	bash -c "grep -qx '1: CA' /sys/class/infiniband/rrxet0/node_type &&
		grep -qx 'rrxe' /sys/class/infiniband/rrxet0/node_desc"
check "a user context and PD can be allocated and freed (pyverbs)" \
	/usr/bin/python3 -c "
from pyverbs.device import Context
from pyverbs.pd import PD
ctx = Context(name='rrxet0')
pds = [PD(ctx) for _ in range(64)]
for p in pds: p.close()
ctx.close()"
check "query_pkey: index 0 is 0xffff" \
	bash -c "grep -qx '0xffff' /sys/class/infiniband/rrxet0/ports/1/pkeys/0"

second_add_eexist() {
	local out
	if out=$(link_add rrxet1 rrxtd0 2>&1); then
		echo "second add succeeded"; link_del rrxet1; return 1
	fi
	echo "$out" | grep -q 'File exists' || { echo "wrong error: $out"; return 1; }
	dev_gone rrxet1
}
check "a second device on the same netdev gets EEXIST" second_add_eexist

check "rdma link delete removes the device" \
	bash -c "rdma link delete rrxet0 && ! test -e /sys/class/infiniband/rrxet0"

cleanup_net
ktap_finished
