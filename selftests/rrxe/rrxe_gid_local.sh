#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A device knows its own GIDs as they come and go: rrxe keeps a copy of
# the port's RoCEv2 GIDs from the core's add_gid/del_gid calls, and every
# packet asks it whether the peer is on this device (then the packet goes
# straight to the peer QP, never on the wire) and whether a received
# packet is addressed to the device. Here an address added to the netdev
# after the device exists is a local peer at once (RC and UD pingpongs
# between two GIDs of the one device, with no frame leaving the netdev),
# its GID goes when the address goes, and comes back with it.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

cleanup_net
mark=$(kmsg_mark)
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
# IPv6 off on the dummy: no router or listener solicitations, so its
# transmit counter moves only if rrxe sends on it.
mk_dummy rrxtg0 && sysctl -qw net.ipv6.conf.rrxtg0.disable_ipv6=1 &&
	ip addr add 10.79.0.1/24 dev rrxtg0 && link_add rrxeg0 rrxtg0 &&
	wait_gid rrxeg0 ffff:10.79.0.1 || ktap_exit_fail_msg "setup failed"

tx_frames() { cat /sys/class/net/rrxtg0/statistics/tx_packets; }

# local_pp TOOL SIZE: TOOL's server on the GID of 10.79.0.1, its client on the
# GID of 10.79.0.2, both on rrxeg0; no frame left the netdev meanwhile.
local_pp() {
	local tool=$1 size=$2 ga gb before log=/tmp/rrxe_gid.$$ srv rc=0
	ga=$(gid_index rrxeg0 ffff:10.79.0.1)
	gb=$(gid_index rrxeg0 ffff:10.79.0.2)
	[ -n "$ga" ] && [ -n "$gb" ] || { echo "GIDs: '$ga' '$gb'"; return 1; }
	before=$(tx_frames)
	"$tool" -d rrxeg0 -g "$ga" -c -n 200 -s "$size" >$log 2>&1 &
	srv=$!
	pp_listening $srv
	timeout 60 "$tool" -d rrxeg0 -g "$gb" -c -n 200 -s "$size" 127.0.0.1 || rc=1
	if [ $rc -ne 0 ]; then
		kill $srv 2>/dev/null
	fi
	wait $srv || rc=1
	[ $rc -eq 0 ] || cat $log
	rm -f $log
	[ $rc -eq 0 ] || return 1
	[ "$(tx_frames)" = "$before" ] ||
		{ echo "frames sent on the netdev: $before -> $(tx_frames)"; return 1; }
}

ip addr add 10.79.0.2/24 dev rrxtg0 && wait_gid rrxeg0 ffff:10.79.0.2 ||
	ktap_exit_fail_msg "second address: no GID"
check "RC between two GIDs of one device, the second added after the device: local, nothing on the netdev" \
	local_pp ibv_rc_pingpong 4096
check "UD between the same GIDs: local, nothing on the netdev" \
	local_pp ibv_ud_pingpong 512

gid_gone() { ! ibv_devinfo -v -d rrxeg0 | grep -q "GID\[.*ffff:10.79.0.2"; }
del_addr() { ip addr del 10.79.0.2/24 dev rrxtg0 && wait_for 10 gid_gone; }
check "the address deleted: its GID goes" del_addr
ip addr add 10.79.0.2/24 dev rrxtg0 && wait_gid rrxeg0 ffff:10.79.0.2 ||
	ktap_exit_fail_msg "the address back: no GID"
check "the address back: RC between the GIDs is local again" local_pp ibv_rc_pingpong 4096

del_dev() { link_del rrxeg0 && dev_gone rrxeg0; }
check "rdma link delete removes the device" del_dev
check "no kernel report" no_kernel_report "$mark"

cleanup_net
ktap_finished
