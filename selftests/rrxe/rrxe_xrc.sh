#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# XRC objects through the uverbs commands first (stock librxe has no XRC
# verbs):
# XRC domains, alone and shared by two processes through a file, with
# uverbs' O_CREAT and O_EXCL rules, freed when their last holder exits;
# XRC SRQs, each with its number, holding their domain open; XRC target
# QPs, connected, shared by a second process that keeps them after their
# creator let go, gone when it exits. Then, on a device over a veth pair,
# an XRC target QP takes XRC SENDs sent from the peer namespace
# (rrxe_wire_fuzz one) into the XRC SRQ they name, and refuses the ones
# that name an SRQ of another domain, a basic SRQ or none, and RC's. XRC
# initiator QPs (made through the commands, their WQEs written in their
# ring by hand) send to target QPs on the same device and over the wire
# from a second device. rrxe_xrc_verbs does the same through librxe's XRC
# verbs (rdma-core 59 with the tools/rdma-core/ series), ibv_open_qp
# included, and rdma-core 59's ibv_xsrq_pingpong runs between the two
# namespaces, three clients against one server. Then no XRC QP left, no
# kernel report, and the devices delete with nothing left.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 14

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && ip addr add 10.79.0.1/24 dev rrxtd0 && link_add rrxex0 rrxtd0 &&
	wait_gid rrxex0 ffff:10.79.0.1 || ktap_exit_fail_msg "setup failed"
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(prog rrxe_xrc_test) && inj=$(prog rrxe_wire_fuzz) && verbs=$(prog rrxe_xrc_verbs) ||
	ktap_exit_fail_msg "cannot build the programs"
mark=$(kmsg_mark)

check "XRC domains: without a file; shared through one (EAGAIN without O_CREAT, EINVAL with O_EXCL), alive while a second process holds it, gone once it exits" \
	"$bin" rrxex0 xrcd
check "XRC SRQs: two in a domain on a CQ, distinct numbers below 2^24 (rxe's response agrees); the domain EBUSY while they live, closed after" \
	"$bin" rrxex0 xsrq
check "XRC target QPs: made in a domain, INIT and RTR (read back; RTR to INIT EINVAL), no doorbell (EINVAL), the domain EBUSY; opened by a second process, alive after the creator's handle is destroyed, gone once that process exits" \
	"$bin" rrxex0 tgt
A=rrxtxa B=rrxtxb
veth_dev() {
	mk_veth_pair $A $B &&
		ip netns exec $A rdma link add rrxex1 type "$RRXE_LINK_TYPE" netdev rrxtva &&
		wait_gid rrxex1 ffff:10.78.0.1
}
check "a device over a veth pair, with its IPv4 GID" veth_dev
mac_a=$(ip netns exec $A cat /sys/class/net/rrxtva/address)
check "an XRC target QP takes XRC SENDs from the wire into the XRC SRQ they name, byte for byte, completing on its CQ; an XRC SRQ of another domain, a basic SRQ, no SRQ and an RC SEND refused (rcvd_hdr_err)" \
	"$bin" rrxex1 recv 10.78.0.1 10.78.0.2 \
	"ip netns exec $B $inj one rrxtvb $mac_a 10.78.0.2 10.78.0.1"
check "an XRC initiator QP and an XRC target QP on one device: a SEND into the XRC SRQ its WQE names, byte for byte, completing on both sides; a WRITE with a key of the SRQ's PD; one with a key of another PD a remote access error; a READ of the SEND's bytes through a key of the SRQ's PD, byte for byte; one through another PD's key a remote access error" \
	"$bin" rrxex0 ini 10.79.0.1 rrxex0 10.79.0.1
# The same through librxe's XRC verbs (rdma-core 59 with the series), as
# an application uses them: ibv_open_qp of the target QP by a second
# process, which keeps it after its creator destroyed its handle.
xrc_verbs() {
	# shellcheck source=tools/rdma-user-env
	. "$root/tools/rdma-user-env" || { echo "no rdma-core 59 build (tools/setup-host)"; return 1; }
	rm -f /tmp/rrxe-xrc-verbs.domain
	"$verbs" rrxex0 /tmp/rrxe-xrc-verbs.domain
}
check "XRC through librxe's verbs (rdma-core 59): a domain through a file, an XRC SRQ and its number, target and initiator QPs; the target QP opened by a second process outlives its creator's handle; SENDs with ibv_post_send and wr_set_xrc_srqn and a READ, byte for byte; the target QP gone with its last holder" \
	xrc_verbs
peer_dev() {
	ip netns exec $B rdma link add rrxex2 type "$RRXE_LINK_TYPE" netdev rrxtvb &&
		wait_gid rrxex2 ffff:10.78.0.2
}
check "a second device, on the peer's end of the veth pair" peer_dev
check "the same between the two devices, over the wire" \
	"$bin" rrxex1 ini 10.78.0.1 rrxex2 10.78.0.2
# dissected: the same again, captured on the target's side, and decoded by
# an independent dissector, Debian's tshark. Version 4.0 names XRC's
# opcodes but has no XRCETH: it shows the header's four bytes as unknown
# data right after the BTH, where the IB specification puts the XRCETH.
# The first packet of the SEND must be an XRC SEND FIRST (opcode 160) to
# the target QP, with the XRC SRQ's number in those four bytes.
dissected() {
	local pcap=/tmp/rrxe-xrc.pcap cap out tqpn srqn f
	command -v tshark >/dev/null || { echo "no tshark (tools/setup-host installs it)"; return 1; }
	rm -f "$pcap"
	ip netns exec $A dumpcap -q -i rrxtva -f "udp dst port 4791" -w "$pcap" 2>/dev/null &
	cap=$!
	# dumpcap writes the file's header once it captures.
	wait_for 20 test -s "$pcap" || { echo "dumpcap did not start"; kill "$cap"; return 1; }
	out=$("$bin" rrxex1 ini 10.78.0.1 rrxex2 10.78.0.2)
	local rc=$?
	sleep 0.5
	kill -INT "$cap"
	wait "$cap"
	[ $rc = 0 ] || { echo "$out"; return 1; }
	tqpn=$(sed -n 's/.* to target QP \(0x[0-9a-f]*\), XRC SRQ \(0x[0-9a-f]*\):.*/\1/p' <<<"$out")
	srqn=$(sed -n 's/.* to target QP \(0x[0-9a-f]*\), XRC SRQ \(0x[0-9a-f]*\):.*/\2/p' <<<"$out")
	f=$(tshark -r "$pcap" -Y "infiniband.bth.opcode == 160" -T fields -E occurrence=f \
		-e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.vendor 2>/dev/null | head -n1)
	tshark -r "$pcap" -Y "infiniband.bth.opcode == 160" -V 2>/dev/null |
		sed -n '/^InfiniBand/,/Unknown\/Vendor/p' | head -n 20 | sed 's/^/# /'
	read -r op dqp xrceth <<<"$f"
	echo "# tshark: opcode ${op:-none}, destination QP ${dqp:-none}, the 4 bytes after the BTH ${xrceth:-none}; target QP $tqpn, XRC SRQ $srqn"
	[ "$op" = 160 ] && [ -n "$tqpn" ] && [ -n "$srqn" ] && [ $((dqp)) = $((tqpn)) ] &&
		[ $((16#${xrceth:-x})) = $((srqn)) ]
}
check "tshark decodes the initiator's XRC SEND on the wire: XRC SEND FIRST to the target QP, the XRC SRQ's number in the four bytes after the BTH (the XRCETH)" \
	dissected
# rdma-core 59's ibv_xsrq_pingpong, through librxe's XRC verbs
# (tools/rdma-core/): a server on rrxex1 in namespace A with one XRC SRQ
# and a target and initiator QP per client, three client processes on
# rrxex2 in namespace B sharing one XRC domain through the tool's file,
# 20 round trips each of 4 KiB messages (four packets).
check "ibv_xsrq_pingpong (rdma-core 59, librxe's XRC verbs) between the namespaces: three client processes against one server, 20 round trips each" \
	xsrq_ns $A rrxex1 $B rrxex2 10.78.0.1 ffff:10.78.0 18520 3 20
# rdma's resource list shows every QP of the device by type.
no_xrc_left() {
	local n
	n=$(rdma res show qp | grep 'link rrxex[0-2]/' | grep -c 'type XRC_')
	echo "XRC QPs left on the devices: $n"
	[ "$n" = 0 ]
}
check "no XRC QP left on the devices" no_xrc_left
check "no kernel report" no_kernel_report "$mark"
check "the devices delete cleanly afterwards" \
	bash -c "rdma link delete rrxex0 && ! test -e /sys/class/infiniband/rrxex0 &&
		rdma link delete rrxex1 && ! test -e /sys/class/infiniband/rrxex1 &&
		rdma link delete rrxex2 && ! test -e /sys/class/infiniband/rrxex2"

cleanup_net
ktap_finished
