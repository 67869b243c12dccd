#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# RoCEv2 on the wire: two rrxe devices in two network namespaces joined by
# a veth pair. Each namespace gets its own UDP 4791 sockets; stock
# ibv_ud_pingpong and ibv_uc_pingpong validate every buffer (-c) across
# them over IPv4 and IPv6; counters on both sides count the packets; RDMA
# READs survive a lossy link; a QP's packets held by a slow qdisc stop
# its requester at rxe's bound, and the module waits for them when it is
# unloaded; a full receive queue's drops are counted as UDP counts a full
# socket's; the sockets close with the last device of their namespace.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 23

A=rrxtwa B=rrxtwb
cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_veth_pair $A $B || ktap_exit_fail_msg "veth setup failed"

roce_listening() { ip netns exec "$1" ss -Huln "sport = :4791" | grep -q ":4791"; }
roce_listening6() { ip netns exec "$1" ss -Hul6n "sport = :4791" | grep -q ":4791"; }
check "a device opens UDP 4791 over IPv4 and IPv6 in its namespace, not elsewhere" \
	bash -c "$(declare -f roce_listening roce_listening6 link_add)
		! roce_listening $A && ip netns exec $A bash -c '$(declare -f link_add); RRXE_LINK_TYPE=$RRXE_LINK_TYPE link_add rrxewa rrxtva' &&
		roce_listening $A && roce_listening6 $A && ! roce_listening $B && ! ss -Huln 'sport = :4791' | grep -q 4791"
ip netns exec $B rdma link add rrxewb type "$RRXE_LINK_TYPE" netdev rrxtvb ||
	ktap_exit_fail_msg "second device failed"
wait_gid rrxewa ffff:10.78.0.1 && wait_gid rrxewb ffff:10.78.0.2 &&
	wait_gid rrxewa fd78::1 && wait_gid rrxewb fd78::2 || ktap_exit_fail_msg "GIDs did not appear"

hw=/sys/class/infiniband
sa=$(cat $hw/rrxewa/ports/1/hw_counters/sent_pkts)
rb=$(cat $hw/rrxewb/ports/1/hw_counters/rcvd_pkts)
check "ibv_ud_pingpong -c between namespaces over IPv4 (1024 bytes, 200 iterations)" \
	pingpong_ns ibv_ud_pingpong $B rrxewb $A rrxewa 10.78.0.2 ffff:10.78.0 -s 1024 -n 200
counted() {
	local s r
	s=$(cat $hw/rrxewa/ports/1/hw_counters/sent_pkts)
	r=$(cat $hw/rrxewb/ports/1/hw_counters/rcvd_pkts)
	[ $((s - sa)) -ge 200 ] && [ $((r - rb)) -ge 200 ] || { echo "A sent $((s - sa)), B received $((r - rb))"; return 1; }
}
check "the senders' sent_pkts and the receivers' rcvd_pkts count the datagrams" counted
# The pingpongs exchange QP numbers over TCP/IPv4; the GID picks the
# address family of the RDMA traffic.
check "ibv_ud_pingpong -c between namespaces over IPv6 (512 bytes)" \
	pingpong_ns ibv_ud_pingpong $B rrxewb $A rrxewa 10.78.0.2 fd78: -s 512 -n 100
check "ibv_uc_pingpong -c between namespaces over IPv4 (8 KiB messages, 1 KiB MTU)" \
	pingpong_ns ibv_uc_pingpong $B rrxewb $A rrxewa 10.78.0.2 ffff:10.78.0 -s 8192 -m 1024 -n 100
check "ibv_uc_pingpong -c between namespaces over IPv6 (3000-byte messages, 256-byte MTU)" \
	pingpong_ns ibv_uc_pingpong $A rrxewa $B rrxewb 10.78.0.1 fd78: -s 3000 -m 256 -n 50
check "ibv_ud_pingpong -c with inline 1-byte messages, the other direction" \
	pingpong_ns ibv_ud_pingpong $A rrxewa $B rrxewb 10.78.0.1 ffff:10.78.0 -s 1 -n 50
# Over IPv4, an RC requester hands the stack a message's run of equal
# packets as one UDP GSO packet (a burst of up to 60 KiB, the packets
# chained to the first), which the veth passes whole and the receiving
# stack splits back into them: ordinary RoCEv2 packets, each with its own
# ICRC. So A's veth counts a frame per burst (and per ACK) where rrxe
# counts every packet: a 64 KiB message at a 1 KiB MTU is 64 packets in
# two bursts. Without bursts the veth counts at least as many frames as
# packets. Over IPv6 they go one by one.
veth_tx() { ip netns exec $A cat /sys/class/net/rrxtva/statistics/tx_packets; }
bursts() {
	local s0 t0 s t
	s0=$(cat $hw/rrxewa/ports/1/hw_counters/sent_pkts)
	t0=$(veth_tx)
	pingpong_ns ibv_rc_pingpong $B rrxewb $A rrxewa 10.78.0.2 "$1" -s 65536 -m 1024 -n 200 || return 1
	s=$(cat $hw/rrxewa/ports/1/hw_counters/sent_pkts)
	t=$(veth_tx)
	echo "# A sent $((s - s0)) RoCE packets in $((t - t0)) frames over ${2}"
	[ $((s - s0)) -ge $((200 * 64)) ] || return 1
	if [ "$2" = IPv4 ]; then
		[ $(((t - t0) * 4)) -le $((s - s0)) ]
	else
		[ $((t - t0)) -ge $((s - s0)) ]
	fi
}
check "ibv_rc_pingpong -c, 64 KiB messages over IPv4: a message's packets leave in bursts (a quarter as many frames or fewer), intact" \
	bursts ffff:10.78.0 IPv4
check "ibv_rc_pingpong -c, 64 KiB messages over IPv6: packet by packet, intact" \
	bursts fd78: IPv6
# Bursts at a 4 KiB path MTU (veth MTU 9000): a 64 KiB message is 16
# packets, the first alone and the rest in bursts of up to 14. Every
# message is validated (-c) on both sides, and a wrong ICRC would drop
# the packets and stall the pingpong.
big_mtu() {
	local rc=0 s0 t0 s t
	ip -n $A link set rrxtva mtu 9000 && ip -n $B link set rrxtvb mtu 9000 || return 1
	wait_for 10 bash -c "ibv_devinfo -d rrxewa | grep -q 'active_mtu:.*4096'" || { echo "active_mtu did not follow"; rc=1; }
	s0=$(cat $hw/rrxewa/ports/1/hw_counters/sent_pkts)
	t0=$(veth_tx)
	if [ $rc -eq 0 ]; then
		pingpong_ns ibv_rc_pingpong $B rrxewb $A rrxewa 10.78.0.2 ffff:10.78.0 -s 65536 -m 4096 -n 50 || rc=1
	fi
	s=$(cat $hw/rrxewa/ports/1/hw_counters/sent_pkts)
	t=$(veth_tx)
	echo "# A sent $((s - s0)) RoCE packets in $((t - t0)) frames"
	# 16 packets a message: the first alone, the rest in bursts.
	[ $((s - s0)) -ge $((50 * 16)) ] && [ $(((t - t0) * 2)) -le $((s - s0)) ] || rc=1
	ip -n $A link set rrxtva mtu 1500 && ip -n $B link set rrxtvb mtu 1500 || rc=1
	return $rc
}
check "ibv_rc_pingpong -c, 64 KiB messages over IPv4 at a 4 KiB MTU: in bursts (half as many frames or fewer), intact" big_mtu
# A doorbell whose packets fill a queue of this kernel with more than a
# few packets (a burst) does not receive them itself: it hands the queue
# to the spread worker (rrxe-spread/N, one per CPU) of another CPU, so the
# receiver checks and copies beside the sender. So each 64 KiB message of
# a pingpong wakes a spread worker; without the hand-off none runs.
spread_switches() {
	local t n=0
	for t in /proc/[0-9]*; do
		case $(cat "$t/comm" 2>/dev/null) in
		rrxe-spread/*) n=$((n + $(awk '/voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }' "$t/status"))) ;;
		esac
	done
	echo $n
}
spread() {
	local n0 n
	n0=$(spread_switches)
	pingpong_ns ibv_rc_pingpong $B rrxewb $A rrxewa 10.78.0.2 ffff:10.78.0 -s 65536 -m 1024 -n 50 || return 1
	n=$(spread_switches)
	echo "# the spread workers switched $((n - n0)) times"
	[ $((n - n0)) -ge 50 ]
}
if [ "$(nproc)" -gt 1 ]; then
	check "ibv_rc_pingpong -c, 64 KiB messages: a burst is received on another CPU than its sender's, intact" spread
else
	ktap_test_skip "a burst is received on another CPU than its sender's (one CPU)"
fi
# perf_server_b PORT LOG CMD...: starts perftest's server CMD in B, its
# output in LOG, and waits until it listens on PORT; its pid is left in
# the caller's `srv`.
perf_server_b() {
	local port=$1 log=$2 i
	shift 2
	ip netns exec $B "$@" >"$log" 2>&1 &
	srv=$!
	for ((i = 0; i < 100; i++)); do
		ip netns exec $B ss -Htln "sport = :$port" | grep -q "$port" && break
		sleep 0.1
	done
}
# A READ's responses go in bursts too: B answers A's 64 KiB READs (64
# packets at a 1 KiB MTU; the first and the last carry an AETH, the 62
# between go in bursts), so B's veth counts a fraction of B's packets.
# (The rping checks, here and in rrxe_cm.sh and rrxe_interop.sh, validate
# the data READs move.)
read_bursts() {
	local log=/tmp/rrxe_rb.$$ gi srv s0 t0 s t rc=0
	local a=(ib_read_bw -F -p 18612 -s 65536 -n 500 -m 1024)
	gi=$(gid_index rrxewb ffff:10.78.0)
	perf_server_b 18612 $log.s "${a[@]}" -d rrxewb -x "$gi"
	s0=$(cat $hw/rrxewb/ports/1/hw_counters/sent_pkts)
	t0=$(ip netns exec $B cat /sys/class/net/rrxtvb/statistics/tx_packets)
	timeout 120 ip netns exec $A "${a[@]}" -d rrxewa -x "$gi" 10.78.0.2 >$log.c 2>&1 || rc=1
	wait "$srv" || rc=1
	s=$(cat $hw/rrxewb/ports/1/hw_counters/sent_pkts)
	t=$(ip netns exec $B cat /sys/class/net/rrxtvb/statistics/tx_packets)
	echo "# B sent $((s - s0)) RoCE packets in $((t - t0)) frames"
	[ $rc = 0 ] || cat $log.s $log.c
	rm -f $log.s $log.c
	[ $rc = 0 ] && [ $((s - s0)) -ge $((500 * 64)) ] && [ $(((t - t0) * 4)) -le $((s - s0)) ]
}
check "ib_read_bw, 64 KiB READs over IPv4: the responses leave in bursts (a quarter as many frames or fewer)" read_bursts
# A device's receive queue holds at most rx_queue_kib KiB (skb truesize).
# A packet that finds it full is dropped and counted as UDP counts a
# datagram that finds its socket's buffer full: in the namespace's
# RcvbufErrors and InErrors, where nstat and the benches look. At the
# least bound (256 KiB) a QP's first burst of 64 KiB WRITEs (64 packets of
# 1 KiB, about 4 KiB of truesize each) overflows B's queue; the requester
# resends from the gap and halves its bursts, and the run completes.
udp_errors() { # NS: its UDP RcvbufErrors and InErrors
	# shellcheck disable=SC2016 # awk's own fields.
	ip netns exec "$1" awk '
		$1 == "Udp:" && $2 ~ /^[A-Za-z]/ { for (i = 2; i <= NF; i++) h[i] = $i; next }
		$1 == "Udp:" { for (i = 2; i <= NF; i++) { if (h[i] == "RcvbufErrors") r = $i; if (h[i] == "InErrors") e = $i } }
		END { print r + 0, e + 0 }' /proc/net/snmp
}
queue_full() {
	local param=/sys/module/rrxe/parameters/rx_queue_kib log=/tmp/rrxe_qf.$$
	local a=(ib_write_bw -F -p 18613 -s 65536 -n 50 -m 1024)
	local def v gi srv r0 e0 r e q0 q t0 rc=0
	def=$(cat $param) || return 1
	[ "$def" = 32768 ] || { echo "rx_queue_kib is $def by default"; return 1; }
	for v in 0 255 1048577 x; do
		if echo $v >$param 2>/dev/null; then
			echo "rx_queue_kib took $v"
			echo "$def" >$param
			return 1
		fi
	done
	[ "$(cat $param)" = "$def" ] || { echo "a refused value changed rx_queue_kib"; return 1; }
	read -r r0 e0 < <(udp_errors $B)
	q0=$(cat $hw/rrxewb/ports/1/hw_counters/out_of_seq_request)
	echo 256 >$param || return 1
	gi=$(gid_index rrxewb ffff:10.78.0)
	t0=$SECONDS
	perf_server_b 18613 $log.s "${a[@]}" -d rrxewb -x "$gi"
	timeout 120 ip netns exec $A "${a[@]}" -d rrxewa -x "$gi" 10.78.0.2 >$log.c 2>&1 || rc=1
	wait "$srv" || rc=1
	echo "$def" >$param
	read -r r e < <(udp_errors $B)
	q=$(cat $hw/rrxewb/ports/1/hw_counters/out_of_seq_request)
	echo "# B: RcvbufErrors +$((r - r0)), InErrors +$((e - e0)), out_of_seq_request +$((q - q0)) in $((SECONDS - t0)) s"
	[ $rc = 0 ] || cat $log.s $log.c
	rm -f $log.s $log.c
	[ $rc = 0 ] && [ $((r - r0)) -gt 0 ] && [ $((e - e0)) -ge $((r - r0)) ] && [ $((q - q0)) -gt 0 ]
}
check "rx_queue_kib refuses 0, 255, 1048577 and x; at 256 KiB B's queue overflows, its drops are counted in UDP RcvbufErrors and InErrors, and 64 KiB WRITEs complete" queue_full
# A connected QP keeps its route between packets (as rxe keeps an RC QP's
# in its socket), so a routing change must reach a QP already streaming: a
# host route to the peer through a gateway that does not answer, added
# under a running RC stream, must stop the peer from receiving its packets
# at once, where a stale route would still deliver them.
rcvd_b() { cat $hw/rrxewb/ports/1/hw_counters/rcvd_pkts; }
route_change() {
	local log=/tmp/rrxe_rt.$$ gi srv cli r0 r1 r2 r3 rc=0
	gi=$(gid_index rrxewb ffff:10.78.0)
	ip netns exec $B ibv_rc_pingpong -d rrxewb -g "$gi" -n 10000000 >$log.s 2>&1 &
	srv=$!
	pp_listening $srv $B
	ip netns exec $A ibv_rc_pingpong -d rrxewa -g "$gi" -n 10000000 10.78.0.2 >$log.c 2>&1 &
	cli=$!
	sleep 2
	r0=$(rcvd_b); sleep 1; r1=$(rcvd_b)
	ip -n $A route add 10.78.0.2/32 via 10.78.0.99 dev rrxtva
	sleep 1
	r2=$(rcvd_b); sleep 1; r3=$(rcvd_b)
	ip -n $A route del 10.78.0.2/32 via 10.78.0.99 dev rrxtva
	kill $srv $cli 2>/dev/null
	wait "$srv" "$cli" 2>/dev/null
	echo "# B received $((r1 - r0)) packets in the second before the route change, $((r3 - r2)) in the second after it"
	if [ $((r1 - r0)) -eq 0 ]; then
		echo "the stream did not run:"; cat $log.s $log.c; rc=1
	elif [ $((r3 - r2)) -ne 0 ]; then
		rc=1
	fi
	rm -f $log.s $log.c
	return $rc
}
check "a route change reaches a QP that is streaming: its packets take the new route at once" route_change
check "after the route is removed, ibv_rc_pingpong -c between the namespaces works" \
	pingpong_ns ibv_rc_pingpong $B rrxewb $A rrxewa 10.78.0.2 ffff:10.78.0 -s 4096 -n 100
# READs over a link that loses frames: a response lost in the middle of a
# read shows as a gap, the requester asks again for the rest of that read
# (a READ request at the PSN of the first response it lacks), and the
# responder answers it even while its first answer is still going out.
# rping's server READs the client's buffer and WRITEs it back; the client
# validates every ping (-V). The reading side's completer_retry_err shows
# that reads were retried; every ping must arrive intact. The debug kernel
# (where each lost SEND or WRITE tail costs rdma_cm's retransmit timer of
# about a second, and 100 pings took over 100 s) runs 10. The test kernel
# runs 40 (100 took 45 s of the CI budget): each ping is some 120 frames,
# so nearly every one loses a frame at 3%. The last three pings and the
# disconnect cross a link that loses nothing (see unlossed_end in lib.sh).
lossy_reads() {
	local n r0 r1 rc=0 pings=40
	[ "${RRXE_DEBUG:-0}" = 1 ] && pings=10
	PAIR_DIR=$(mktemp -d)
	: >"$PAIR_DIR/pids"
	r0=$(cat $hw/rrxewb/ports/1/hw_counters/completer_retry_err)
	ip netns exec $A tc qdisc add dev rrxtva root netem loss 3% &&
		ip netns exec $B tc qdisc add dev rrxtvb root netem loss 3% || return 1
	pair cm:7177 $B $A rping -s -a 10.78.0.2 -p 7177 -C $pings -S 60000 -V -- \
		bash -c "$(declare -f unlossed_end); unlossed_end $A $B $pings \
			rping -c -a 10.78.0.2 -p 7177 -C $pings -S 60000 -V -v" || rc=1
	ip netns exec $A tc qdisc del dev rrxtva root 2>/dev/null
	ip netns exec $B tc qdisc del dev rrxtvb root 2>/dev/null
	r1=$(cat $hw/rrxewb/ports/1/hw_counters/completer_retry_err)
	n=$(grep -c '^ping data: ' "$PAIR_DIR/client")
	echo "# $pings pings of 60000 bytes at 3% loss: $n validated; the reader's completer_retry_err rose by $((r1 - r0))"
	[ "$n" -eq $pings ] || { echo "the client pinged $n times, not $pings"; rc=1; }
	[ $((r1 - r0)) -gt 0 ] || { echo "no read was retried: the loss did not reach them"; rc=1; }
	stop_servers
	rm -rf "$PAIR_DIR"
	return $rc
}
check "RDMA READs across 3% loss each way are retried from the gap and arrive intact (rping -V, 60000-byte pings)" lossy_reads
# unlossed_end itself: a stand-in for rping's client prints its 10 ping
# lines of 60000 bytes as fast as it can, then looks for the loss, as its
# DREQ would meet it: the loss must be gone by then.
fake_rping() {
	local line i
	line="ping data: $(head -c 59988 /dev/zero | tr '\0' x)"
	for ((i = 0; i < $1; i++)); do
		printf '%s\n' "$line"
	done
	! ip netns exec $A tc qdisc show dev rrxtva | grep -q netem &&
		! ip netns exec $B tc qdisc show dev rrxtvb | grep -q netem
}
unloss_in_step() {
	local rc=0
	ip netns exec $A tc qdisc add dev rrxtva root netem loss 3% &&
		ip netns exec $B tc qdisc add dev rrxtvb root netem loss 3% || return 1
	unlossed_end $A $B 10 fake_rping 10 >/dev/null || rc=1
	ip netns exec $A tc qdisc del dev rrxtva root 2>/dev/null
	ip netns exec $B tc qdisc del dev rrxtvb root 2>/dev/null
	return $rc
}
check "unlossed_end takes the loss away before its client can print its last ping and disconnect" unloss_in_step
# A doorbell that sends the last packet posted receives what has come
# for it in place before it returns (its early drain). Over a lossy link,
# what comes is often a sequence NAK for the very QP it sends on, which
# rewinds the requester and runs it again: the doorbell must not hold
# that QP's send lock then (it waited on itself for good, in state D).
# Small WRITEs make the receiver answer in place; 3% loss each way makes
# NAKs. The writer must finish in time and have had NAKs to take.
lossy_small_writes() {
	local log=/tmp/rrxe_lw.$$ gi srv c n0 n1 i p rc=0
	local a=(ib_write_bw -F -p 18613 -s 1024 -n 3000 -m 1024)
	gi=$(gid_index rrxewb ffff:10.78.0)
	n0=$(cat $hw/rrxewa/ports/1/hw_counters/rcvd_seq_err)
	ip netns exec $A tc qdisc add dev rrxtva root netem loss 3% &&
		ip netns exec $B tc qdisc add dev rrxtvb root netem loss 3% || return 1
	perf_server_b 18613 $log.s timeout 100 "${a[@]}" -d rrxewb -x "$gi"
	ip netns exec $A timeout 90 "${a[@]}" -d rrxewa -x "$gi" 10.78.0.2 >$log.c 2>&1 &
	c=$!
	for ((i = 0; i < 100; i++)); do
		kill -0 $c 2>/dev/null || break
		sleep 1
	done
	if kill -0 $c 2>/dev/null; then
		echo "the writer did not finish in 100 s:"
		for p in $(pgrep -x ib_write_bw); do
			echo "pid $p state $(awk '{ print $3 }' "/proc/$p/stat"):"
			cat "/proc/$p/stack" 2>/dev/null
		done
		rc=1
	else
		wait $c || rc=1
	fi
	ip netns exec $A tc qdisc del dev rrxtva root 2>/dev/null
	ip netns exec $B tc qdisc del dev rrxtvb root 2>/dev/null
	[ $rc = 0 ] && { wait "$srv" || rc=1; }
	n1=$(cat $hw/rrxewa/ports/1/hw_counters/rcvd_seq_err)
	echo "# 3000 WRITEs of 1 KiB at 3% loss: the writer took $((n1 - n0)) sequence NAKs"
	[ $rc = 0 ] || cat $log.s $log.c
	rm -f $log.s $log.c
	[ $rc = 0 ] && [ $((n1 - n0)) -gt 0 ]
}
check "ib_write_bw, 1 KiB WRITEs across 3% loss each way: the writer takes sequence NAKs in place and finishes" lossy_small_writes
# netem's slots hold A's packets back on A's end once ib_write_bw streams
# 256 KiB WRITEs from A to B: 16 leave every 100 ms, slower than any
# kernel here sends (netem orphans an skb, running its destructor, only
# when it delays or rate-limits it, not for slots, so the packets stay A's
# QP's while they wait; the test kernel has no token bucket qdisc). A
# message is 256 packets at a 1 KiB MTU, and the PSN window alone would
# let 128 of them into the qdisc; the transmit gate stops the requester
# with 64 of its packets in the stack (rxe's bound). The backlog is
# sampled for two seconds (perftest's QP timeout is set to 4 s, so that
# nothing is retransmitted meanwhile), then both ends are stopped.
# The backlog in packets: a burst is one skb in the qdisc, so its bytes
# count, each packet 1082 of them on the wire (Ethernet, IP, UDP, BTH,
# 1 KiB, ICRC; a message's first adds a RETH).
qdisc_backlog() {
	local b
	b=$(ip netns exec "$1" tc -s qdisc show dev "$2" | sed -n 's/.* backlog \([0-9]*\)b [0-9]*p.*/\1/p' | head -n 1)
	echo $((${b:-0} / 1082))
}
gated_burst() {
	local log=/tmp/rrxe_gate.$$ gi srv cli max=0 n i r0 rc=0
	local a=(ib_write_bw -F -p 18611 -s 262144 -n 100000 -m 1024 -u 20)
	gi=$(gid_index rrxewb ffff:10.78.0)
	perf_server_b 18611 $log.s "${a[@]}" -d rrxewb -x "$gi"
	r0=$(cat $hw/rrxewb/ports/1/hw_counters/rcvd_pkts)
	ip netns exec $A "${a[@]}" -d rrxewa -x "$gi" 10.78.0.2 >$log.c 2>&1 &
	cli=$!
	for ((i = 0; i < 100; i++)); do
		[ "$(cat $hw/rrxewb/ports/1/hw_counters/rcvd_pkts)" -gt $((r0 + 2000)) ] && break
		sleep 0.1
	done
	ip netns exec $A tc qdisc add dev rrxtva root netem slot 100ms 100ms packets 16 || rc=1
	for ((i = 0; i < 40; i++)); do
		n=$(qdisc_backlog $A rrxtva)
		[ "${n:-0}" -gt "$max" ] && max=$n
		sleep 0.05
	done
	kill -9 "$srv" "$cli" 2>/dev/null
	wait "$srv" "$cli" 2>/dev/null
	ip netns exec $A tc qdisc del dev rrxtva root
	echo "# at most $max of A's packets waited in its qdisc at once"
	if [ "$max" -lt 32 ]; then
		echo "the qdisc never held a burst: the check cannot tell"; cat $log.s $log.c; rc=1
	elif [ "$max" -gt 64 ]; then
		rc=1
	fi
	rm -f $log.s $log.c
	return $rc
}
check "a slow qdisc holds at most 64 of an RC requester's packets, not its 128-PSN window" gated_burst
check "a second device in a namespace shares its sockets; they close with the last one" \
	bash -c "$(declare -f roce_listening)
		ip netns exec $A ip link add rrxtd9 type dummy && ip -n $A link set rrxtd9 up &&
		ip netns exec $A rdma link add rrxewa2 type $RRXE_LINK_TYPE netdev rrxtd9 &&
		rdma link delete rrxewa && roce_listening $A &&
		rdma link delete rrxewa2 && ! roce_listening $A && roce_listening $B"
check "deleting a namespace with a device in it closes its sockets and removes the device" \
	bash -c "ip netns del $B && $(declare -f wait_for dev_gone); wait_for 10 dev_gone rrxewb"

# The ICRC's table-driven and table-free CRC-32 loops (logic::icrc::Slice8
# and Sparse) each start a page of the module's text, so neither loop
# spans two pages: QEMU's TCG does not chain to a translated block that
# does, and such a loop went back to QEMU's block lookup on every 8-byte
# step (slice-by-8 took 2.3 times as long per 4 KiB packet in a stream).
crc_loops_on_a_page() {
	local a e
	for e in Slice8 Sparse; do
		a=$(awk -v e="$e" '$3 ~ e ".*Backend.*crc32_le" && $4 == "[rrxe]" { print $1; exit }' /proc/kallsyms)
		[ -n "$a" ] || { echo "no $e CRC symbol of rrxe in /proc/kallsyms"; return 1; }
		[[ $a =~ [1-9a-f] ]] || { echo "/proc/kallsyms hides the addresses"; return 1; }
		((16#$a % 4096 == 0)) || { echo "$e's CRC is at $a, not at the start of a page"; return 1; }
	done
}
check "the ICRC's CRC-32 loops each start a page of rrxe's text (QEMU chains no block across pages)" crc_loops_on_a_page

# The stack frees a QP's packets after the QP is gone, and then calls
# rrxe's skb destructor: the module must not go before that. On a fresh
# veth pair, netem's slots hold A's packets (a slot of 64 every 10 s) once
# a pingpong streams, both processes are killed with packets of A's QP in
# the qdisc, and the devices
# are deleted. The unload must wait while the qdisc still holds them, and
# end once the qdisc is deleted (which frees them); the kernel reports
# nothing.
unload_with_packets_out() {
	local log=/tmp/rrxe_gone.$$ gi srv cli unl n i mark waited=no rc=0
	mark=$(kmsg_mark)
	cleanup_net
	mk_veth_pair $A $B &&
		ip netns exec $A rdma link add rrxewa type "$RRXE_LINK_TYPE" netdev rrxtva &&
		ip netns exec $B rdma link add rrxewb type "$RRXE_LINK_TYPE" netdev rrxtvb &&
		wait_gid rrxewa ffff:10.78.0.1 && wait_gid rrxewb ffff:10.78.0.2 || return 1
	gi=$(gid_index rrxewb ffff:10.78.0)
	ip netns exec $B ibv_rc_pingpong -d rrxewb -g "$gi" -s 262144 -m 1024 -n 1000000 >$log.s 2>&1 &
	srv=$!
	pp_listening $srv $B
	ip netns exec $A ibv_rc_pingpong -d rrxewa -g "$gi" -s 262144 -m 1024 -n 1000000 10.78.0.2 >$log.c 2>&1 &
	cli=$!
	# The slots go in once the QPs are connected (they would hold the TCP
	# exchange of ibv_rc_pingpong too).
	for ((i = 0; i < 50; i++)); do
		[ "$(cat $hw/rrxewb/ports/1/hw_counters/rcvd_pkts)" -gt 1000 ] && break
		sleep 0.1
	done
	ip netns exec $A tc qdisc add dev rrxtva root netem slot 10s 10s packets 64 || rc=1
	for ((i = 0; i < 50; i++)); do
		n=$(qdisc_backlog $A rrxtva)
		[ "${n:-0}" -ge 16 ] && break
		sleep 0.1
	done
	kill -9 "$srv" "$cli" 2>/dev/null
	wait "$srv" "$cli" 2>/dev/null
	n=$(qdisc_backlog $A rrxtva)
	rdma link delete rrxewa && rdma link delete rrxewb || rc=1
	modprobe -r rrxe &
	unl=$!
	sleep 1
	kill -0 $unl 2>/dev/null && waited=yes
	ip netns exec $A tc qdisc del dev rrxtva root
	wait $unl || rc=1
	echo "# ${n:-0} packets were in the qdisc when the QPs went; the unload waited for them: $waited"
	[ "${n:-0}" -gt 0 ] || { echo "no packet was left in the qdisc: the check cannot tell"; cat $log.s $log.c; rc=1; }
	[ $waited = yes ] || { echo "rrxe unloaded with its packets still in the qdisc"; rc=1; }
	sleep 1
	no_kernel_report "$mark" || rc=1
	rm -f $log.s $log.c
	load_rrxe || rc=1
	return $rc
}
check "rrxe unloads while a qdisc still holds its packets of QPs that are gone, and the kernel reports nothing" \
	unload_with_packets_out

cleanup_net
ktap_finished
