#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Drop counters. An rrxe device in one namespace of a veth pair; from the
# other, rrxe_wire_fuzz sends it one kind of bad packet at a time (a wrong
# ICRC, transport version 1, a QP number no QP has with a right and with a
# wrong ICRC, a wrong P_Key, a wrong Q_Key, a UD SEND to a QP with no
# receive posted, an XRC SEND to an RC QP, RC requests at a PSN ahead of
# the window, a burst that overflows the receive queue), aimed at the QPs
# rrxe_drops_test keeps in RTS and RTR; then a UD SEND to a
# destination with no route. After each, every port counter is read back:
# the one for that reason moved by exactly the packets sent, the packet
# and byte counters as documented, and every other counter not at all.
# Then the debug lines: a site switched on in the debug parameter prints
# its line for each drop, and nothing prints while it is off.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 16

A=rrxtda B=rrxtdb
cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_veth_pair $A $B || ktap_exit_fail_msg "veth setup failed"
ip netns exec $A rdma link add rrxeda type "$RRXE_LINK_TYPE" netdev rrxtva ||
	ktap_exit_fail_msg "cannot add the device"
wait_gid rrxeda ffff:10.78.0.1 && wait_gid rrxeda fd78::1 || ktap_exit_fail_msg "no GIDs"
hw=/sys/class/infiniband/rrxeda/ports/1/hw_counters
params=/sys/module/rrxe/parameters
inj=$(prog rrxe_wire_fuzz) && hold=$(prog rrxe_drops_test) ||
	ktap_exit_fail_msg "cannot build the programs"
mac_a=$(ip netns exec $A cat /sys/class/net/rrxtva/address)
mark=$(kmsg_mark)

coproc QPS { ip netns exec $A "$hold" rrxeda 10.78.0.2 fd78::2 2>&1; }
# shellcheck disable=SC2153 # coproc sets QPS_PID
qps_pid=$QPS_PID qps_in=${QPS[1]}
ud='' rc=''
read -r -t 60 -u "${QPS[0]}" _ ud _ rc || true
[ -n "$rc" ] || ktap_exit_fail_msg "rrxe_drops_test made no QPs: $ud"
echo "# UD QP $ud, RC QP $rc"
qkey=0x11111111

# snap NAME: every counter into the associative array NAME.
snap() {
	local -n _s=$1
	local f v
	_s=()
	# One process for all of them: a fork each is slow under TCG.
	while IFS=: read -r f v; do
		[ "${f##*/}" = lifespan ] || _s[${f##*/}]=$v
	done < <(grep -H '' "$hw"/*)
}

# send KIND QPN PSN QKEY COUNT LEN: packets from the peer namespace.
send() {
	ip netns exec $B "$inj" one rrxtvb "$mac_a" 10.78.0.2 10.78.0.1 "$@" >/dev/null
}

# moved NAME=DELTA...: since the snapshot `before`, the counters named
# moved by their DELTA (waited for, up to 10 s, then half a second more
# for anything else to show) and every other counter by nothing.
declare -A before
moved() {
	local -A want=() now=()
	local kv n i bad=0 reached
	for kv in "$@"; do want[${kv%%=*}]=${kv#*=}; done
	for n in "${!want[@]}"; do
		[ -n "${before[$n]:-}" ] || { echo "no counter $n"; bad=1; }
	done
	[ $bad = 0 ] || return 1
	for ((i = 0; i < 100; i++)); do
		snap now
		reached=1
		for n in "${!want[@]}"; do
			[ "${now[$n]}" -ge $((before[$n] + want[$n])) ] || reached=0
		done
		[ $reached = 1 ] && break
		sleep 0.1
	done
	# The counters' lifespan is 10 ms.
	sleep 0.5
	snap now
	for n in "${!now[@]}"; do
		if [ "${now[$n]}" -ne $((before[$n] + ${want[$n]:-0})) ]; then
			echo "$n: ${before[$n]} -> ${now[$n]}, expected +${want[$n]:-0}"
			bad=1
		fi
	done
	return $bad
}

# case KIND QPN PSN QKEY COUNT LEN -- NAME=DELTA...
case_() {
	local args=()
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	snap before
	send "${args[@]}" || { echo "the injector failed"; return 1; }
	moved "$@"
}

check "a wrong ICRC: rcvd_icrc_err" \
	case_ icrc "$ud" 0 $qkey 1 64 -- rcvd_icrc_err=1
check "transport version 1: rcvd_hdr_err" \
	case_ tver "$ud" 0 $qkey 1 64 -- rcvd_hdr_err=1
check "a QP number no QP has: rcvd_unknown_qp (and rcvd_pkts, rcvd_bytes)" \
	case_ ud 0xfedcba 0 $qkey 1 64 -- rcvd_unknown_qp=1 rcvd_pkts=1 rcvd_bytes=64
# As in rdma_rxe, the QP number is looked at before the ICRC is
# computed: a flood to QP numbers nobody has costs no ICRC.
check "a wrong ICRC to a QP number no QP has: rcvd_unknown_qp, not rcvd_icrc_err" \
	case_ icrc 0xfedcba 0 $qkey 1 64 -- rcvd_unknown_qp=1 rcvd_pkts=1 rcvd_bytes=64
check "a wrong P_Key: rcvd_pkey_err" \
	case_ pkey "$ud" 0 $qkey 1 64 -- rcvd_pkey_err=1
check "a wrong Q_Key: rcvd_qkey_err (and rcvd_pkts, rcvd_bytes)" \
	case_ ud "$ud" 0 0x22222222 1 64 -- rcvd_qkey_err=1 rcvd_pkts=1 rcvd_bytes=64
check "a UD SEND to a QP with no receive posted: out_of_buffer (and rcvd_pkts, rcvd_bytes)" \
	case_ ud "$ud" 0 $qkey 1 64 -- out_of_buffer=1 rcvd_pkts=1 rcvd_bytes=64
# The first request ahead is NAKed (out_of_seq_request, one packet sent);
# both are dropped.
# XRC packets parse (an XRCETH after the BTH), but no QP takes them: an
# XRC SEND to an RC QP is counted as received, then dropped as a header
# its QP does not take, and nothing answers it.
check "an XRC SEND to an RC QP: rcvd_hdr_err (and rcvd_pkts, rcvd_bytes), no answer" \
	case_ xrc "$rc" 0 0x12 1 64 -- rcvd_hdr_err=1 rcvd_pkts=1 rcvd_bytes=64
check "two RC requests ahead of the window: rcvd_psn_err 2, out_of_seq_request 1" \
	case_ rc "$rc" 0x1100 0 2 64 -- rcvd_psn_err=2 out_of_seq_request=1 rcvd_pkts=2 \
	rcvd_bytes=128 sent_pkts=1

# The receive path's worker is held (the test build's hook) on one packet
# while 300 more of 1 KiB arrive, in a queue bounded to 256 KiB: the ones
# that find it full are dropped in the softirq, counted in rcvd_queue_full
# and, as UDP counts a full socket buffer, in the namespace's UDP
# RcvbufErrors; the others reach the UD QP and are dropped there for
# their Q_Key.
rcvbuf() {
	# shellcheck disable=SC2016 # awk's own variables
	ip netns exec $A awk '/^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 }
		else print $c["RcvbufErrors"] }' /proc/net/snmp
}
queue_full() {
	local n=300 h0 u0 u1 f i
	echo 256 >$params/rx_queue_kib || return 1
	snap before
	u0=$(rcvbuf)
	h0=$(cat $params/test_hold_hits)
	echo 3 >$params/test_hold_site || { echo "no hold site for the receive path"; return 1; }
	send ud "$ud" 0 0x22222222 1 64
	for ((i = 0; i < 50; i++)); do
		[ "$(cat $params/test_hold_hits)" -gt "$h0" ] && break
		sleep 0.1
	done
	[ "$(cat $params/test_hold_hits)" -gt "$h0" ] || { echo 0 >$params/test_hold_site; echo "not held"; return 1; }
	send ud "$ud" 0 0x22222222 $n 1024
	echo 0 >$params/test_hold_site
	u1=$(rcvbuf)
	f=$((u1 - u0))
	echo "# $f of $n packets found the queue full"
	[ "$f" -gt 0 ] && [ "$f" -lt $n ] || { echo "expected some but not all of $n dropped, got $f"; return 1; }
	moved rcvd_queue_full=$f rcvd_qkey_err=$((n + 1 - f)) rcvd_pkts=$((n + 1 - f)) \
		rcvd_bytes=$((64 + (n - f) * 1024))
}
if [ -e $params/test_hold_site ]; then
	check "a full receive queue: rcvd_queue_full, as many as UDP's RcvbufErrors" queue_full
	echo 0 >$params/test_hold_site
	echo 32768 >$params/rx_queue_kib
else
	ktap_test_skip "a full receive queue (needs the test build's hooks)"
fi

# A UD SEND through an address handle whose destination has become
# unreachable since: send_no_route, and send_err as for any failed send;
# the WQE completes (rdma_sends), its datagram lost, as UD allows.
# Over IPv6: an IPv4 lookup bound to the netdev, as rrxe's and rdma_rxe's
# are, takes a destination without a route for one on the link.
no_route() {
	local st
	ip -6 -n $A route add unreachable fd78::2/128 || return 1
	snap before
	echo send >&"$qps_in"
	read -r -t 30 -u "${QPS[0]}" _ st
	ip -6 -n $A route del unreachable fd78::2/128
	[ "$st" = 0 ] || { echo "the send completed with status ${st:-none}"; return 1; }
	moved send_no_route=1 send_err=1 rdma_sends=1
}
check "a UD SEND with no route: send_no_route (and send_err, rdma_sends)" no_route

# debug_lines MARK SITE: the lines of debug site SITE of rrxeda since MARK.
debug_lines() {
	kmsg_since "$1" | grep "rrxe rrxeda: $2: " || true
}
# Site 4 is drop_qkey, site 0 drop_icrc.
debug_off() {
	local m
	echo 0 >$params/debug || return 1
	m=$(kmsg_mark)
	send ud "$ud" 0 0x22222222 1 64 && send icrc "$ud" 0 $qkey 1 64 || return 1
	sleep 1
	! kmsg_since "$m" | grep 'rrxe rrxeda: ' || { echo "printed with debug 0"; return 1; }
}
debug_on() {
	local m n
	echo $((1 << 4)) >$params/debug || return 1
	m=$(kmsg_mark)
	send ud "$ud" 0 0x22222222 2 64 || return 1
	for ((n = 0; n < 50; n++)); do
		[ "$(debug_lines "$m" drop_qkey | wc -l)" -ge 2 ] && break
		sleep 0.1
	done
	debug_lines "$m" drop_qkey
	[ "$(debug_lines "$m" drop_qkey | wc -l)" = 2 ] &&
		debug_lines "$m" drop_qkey | grep -q "Q_Key 0x22222222, not 0x11111111: qp $ud from 10.78.0.2"
}
debug_other() {
	local m
	m=$(kmsg_mark)
	send icrc "$ud" 0 $qkey 1 64 || return 1
	sleep 1
	[ -z "$(debug_lines "$m" drop_icrc)" ] || { debug_lines "$m" drop_icrc; return 1; }
}
check "debug 0: dropped packets print nothing" debug_off
check "debug site drop_qkey on: a line for each packet dropped for its Q_Key, with the keys" debug_on
check "with drop_qkey on, drop_icrc (off) prints nothing" debug_other
echo 0 >$params/debug

eval "exec $qps_in>&-"
wait "$qps_pid"
check "no kernel report" no_kernel_report "$mark"
check "the device deletes" bash -c "rdma link delete rrxeda && ! test -e /sys/class/infiniband/rrxeda"

cleanup_net
ktap_finished
