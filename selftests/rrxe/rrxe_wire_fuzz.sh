#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The wire fuzzer. Two rrxe devices in two network namespaces joined by a
# veth pair; from the peer namespace, rrxe_wire_fuzz injects a million
# RoCEv2 packets with valid ICRCs and malformed transport headers at the
# first device (every BTH opcode, truncated and oversized headers, edge
# values, wrong pads, QP1 MADs, multicast, IP fragments), aimed in part at
# the live QPs it sniffs on the link, at PSNs a blind attacker would guess,
# and at READs long answered (duplicates with other lengths). It paces
# itself by the device's rcvd_pkts so that none is lost before rrxe's
# transports and the real traffic is not held up behind them. Validated RC traffic (ibv_rc_pingpong -c, rping -V) runs
# between the devices all the while and must not break, as must XRC
# traffic (ibv_xsrq_pingpong), whose XRC SRQ the injector names in part of
# its XRC packets to the live target QPs. Afterwards RC, UC
# and UD traffic still works, the kernel reported nothing, the devices
# delete and rrxe unloads.
#
# Named cases: oversized MADs to QP1 must leave rdma_cm working; a live RC
# requester must ignore NAKs at PSNs none of its requests holds, and
# positive ACKs ahead of anything it sent.
#
# RRXE_FUZZ_PACKETS (default 1000000; 30000 on the debug kernel, where the
# cold CI budget allows no more) and
# RRXE_FUZZ_SEED (default 1) change the run.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 16

A=rrxtfa B=rrxtfb
# The debug kernel's receive path is some 15 times slower here: a million
# packets take it most of an hour (RRXE_FUZZ_PACKETS=1000000 runs them),
# and the validated traffic runs shorter.
# A pingpong client gets PP_TIMEOUT seconds (lib.sh), a blind NAK stream
# naks messages.
# The checks afterwards run `after` iterations: 20 on the debug kernel,
# where each of the three took 16 to 24 s with 100 and 15 to 19 s with 20
# (most of it the programs' start).
packets=1000000 iters=200 pings=40 lossy=300 naks=20 after=100 xrc_iters=100
if [ "${RRXE_DEBUG:-0}" = 1 ]; then
	packets=30000 iters=50 pings=10 lossy=60 naks=5 after=20 xrc_iters=20
	export PP_TIMEOUT=180
fi
packets=${RRXE_FUZZ_PACKETS:-$packets}
seed=${RRXE_FUZZ_SEED:-1}
cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_veth_pair $A $B || ktap_exit_fail_msg "veth setup failed"
# Room for oversized packets and unfragmented 3 KiB datagrams.
ip -n $A link set rrxtva mtu 9000 && ip -n $B link set rrxtvb mtu 9000 ||
	ktap_exit_fail_msg "cannot set the MTU"
ip netns exec $A rdma link add rrxefa type "$RRXE_LINK_TYPE" netdev rrxtva &&
	ip netns exec $B rdma link add rrxefb type "$RRXE_LINK_TYPE" netdev rrxtvb ||
	ktap_exit_fail_msg "cannot add the devices"
wait_gid rrxefa ffff:10.78.0.1 && wait_gid rrxefb ffff:10.78.0.2 &&
	wait_gid rrxefa fd78::1 && wait_gid rrxefb fd78::2 || ktap_exit_fail_msg "GIDs did not appear"
tmp=$(mktemp -d)
bin=$(prog rrxe_wire_fuzz) || ktap_exit_fail_msg "cannot build rrxe_wire_fuzz"
mac_a=$(ip netns exec $A cat /sys/class/net/rrxtva/address)
mark=$(kmsg_mark)
hw=/sys/class/infiniband/rrxefa/ports/1/hw_counters

# Validated traffic until $tmp/stop exists; each loop writes how many runs
# passed, or the output of the one that failed, to $tmp/NAME.
rc_loop() {
	local n=0 t longest=0
	while [ ! -e "$tmp/stop" ]; do
		t=$SECONDS
		if ! pingpong_ns ibv_rc_pingpong $A rrxefa $B rrxefb 10.78.0.1 ffff:10.78.0 \
			-s 4096 -m 1024 -n $iters >"$tmp/rc.out" 2>&1; then
			{ echo "run $((n + 1)) failed after $((SECONDS - t)) s:"; cat "$tmp/rc.out"; } >"$tmp/rc"
			return 1
		fi
		t=$((SECONDS - t))
		[ $t -gt $longest ] && longest=$t
		n=$((n + 1))
	done
	echo "$n" >"$tmp/rc"
	echo "the longest run took $longest s" >>"$tmp/rc"
}
# rping's server (in B) READs the client's buffer (in A): READ requests
# cross the link to the fuzzed device, for the injector to duplicate.
rping_loop() {
	local n=0
	PAIR_DIR=$tmp/pair
	mkdir -p "$PAIR_DIR" && : >"$PAIR_DIR/pids"
	while [ ! -e "$tmp/stop" ]; do
		if ! pair cm:7174 $B $A rping -s -a 10.78.0.2 -p 7174 -C $pings -S 2000 -V -- \
			rping -c -a 10.78.0.2 -p 7174 -C $pings -S 2000 -V >"$tmp/rping.out" 2>&1; then
			{ echo "run $((n + 1)) failed:"; cat "$tmp/rping.out"; } >"$tmp/rping"
			return 1
		fi
		n=$((n + 1))
	done
	echo "$n" >"$tmp/rping"
}

# The MAD layer posts QP1 receive buffers of one MAD and never reposts one
# that completes in error (it takes that for a QP in ERR). 600 datagrams
# to QP1 longer than a MAD (more than its 512 buffers) must not leave the
# device without MAD traffic: rdma_cm still connects.
oversized_mads() {
	ip netns exec $B "$bin" mad rrxtvb "$mac_a" 10.78.0.2 10.78.0.1 600 1024 || return 1
	PAIR_DIR=$tmp/pair
	mkdir -p "$PAIR_DIR" && : >"$PAIR_DIR/pids"
	pair cm:7174 $B $A rping -s -a 10.78.0.2 -p 7174 -C 5 -S 100 -V -- \
		rping -c -a 10.78.0.2 -p 7174 -C 5 -S 100 -V
}
check "600 MADs of 1 KiB to QP1 leave rdma_cm working (rping -V connects)" oversized_mads

# A performance management MAD from the peer's QP1 gets an answer only if
# it is a request: one Get(ClassPortInfo) makes the device answer once,
# and the answer, a GetResp, gets none from the peer's device (which, if
# it answered it, and its answer in turn, would keep the two devices
# sending MADs to each other for as long as they exist); a GetResp
# injected on its own gets none either.
pma_count() {
	echo "$(cat /sys/class/infiniband/rrxefa/ports/1/hw_counters/rcvd_pkts) $(cat /sys/class/infiniband/rrxefb/ports/1/hw_counters/rcvd_pkts)"
}
pma_answers() {
	local a0 b0 a1 b1 a2 b2
	read -r a0 b0 < <(pma_count)
	ip netns exec $B "$bin" mad rrxtvb "$mac_a" 10.78.0.2 10.78.0.1 1 256 4 1 || return 1
	sleep 3
	read -r a1 b1 < <(pma_count)
	echo "# Get: rrxefa received $((a1 - a0)), rrxefb $((b1 - b0)) in 3 s"
	ip netns exec $B "$bin" mad rrxtvb "$mac_a" 10.78.0.2 10.78.0.1 1 256 4 0x81 || return 1
	sleep 3
	read -r a2 b2 < <(pma_count)
	echo "# GetResp: rrxefa received $((a2 - a1)), rrxefb $((b2 - b1)) in 3 s"
	[ $((a1 - a0)) = 1 ] && [ $((b1 - b0)) = 1 ] && [ $((a2 - a1)) = 1 ] && [ $((b2 - b1)) = 0 ]
}
check "a performance MAD is answered if it is a request, once, and never a response (no MAD ping-pong between devices)" \
	pma_answers

# XRC (rdma-core 59's ibv_xsrq_pingpong, tools/rdma-user-env): two
# clients in B send to target QPs on the fuzzed device, whose XRC SRQ the
# injector learns from their XRCETHs and names in part of its XRC
# packets to them.
xrc_loop() {
	local n=0
	while [ ! -e "$tmp/stop" ]; do
		if ! xsrq_ns $A rrxefa $B rrxefb 10.78.0.1 ffff:10.78.0 18530 2 $xrc_iters \
			>"$tmp/xrc.out" 2>&1; then
			{ echo "run $((n + 1)) failed:"; cat "$tmp/xrc.out"; } >"$tmp/xrc"
			return 1
		fi
		n=$((n + 1))
	done
	echo "$n" >"$tmp/xrc"
}

# Multicast packets reach the UDP socket only for a group the netdev joined.
ip netns exec $A "$bin" join rrxtva 239.1.2.3 ff0e::102 3600 &
joiner=$!
rcvd0=$(cat $hw/rcvd_pkts)
# The injector paces itself by the device's rcvd_pkts (opened here, in
# the namespace that shows it).
exec 3<"$hw/rcvd_pkts"
rc_loop &
rc_pid=$!
rping_loop &
rping_pid=$!
xrc_loop &
xrc_pid=$!
# Let the streams start, so that the injector sees them from the start.
sleep 3
echo "# seed $seed"
t0=$(date +%s)
ip netns exec $B "$bin" fuzz rrxtvb "$mac_a" 10.78.0.2 10.78.0.1 fd78::2 fd78::1 \
	"$packets" "$seed" /dev/fd/3 >"$tmp/fuzz" 2>&1
fuzz_rc=$?
exec 3<&-
t1=$(date +%s)
touch "$tmp/stop"
wait $rc_pid
wait $rping_pid
wait $xrc_pid
kill $joiner 2>/dev/null
wait $joiner 2>/dev/null
rcvd=$(( $(cat $hw/rcvd_pkts) - rcvd0 ))
cat "$tmp/fuzz"
echo "# fuzzing took $((t1 - t0)) s; rrxefa counted $rcvd packets received"

injected() {
	local n
	n=$(sed -n 's/^# injected \([0-9]*\) packets.*/\1/p' "$tmp/fuzz")
	[ "$fuzz_rc" = 0 ] && [ "${n:-0}" -ge "$packets" ]
}
check "$packets fuzzed RoCEv2 packets injected from the peer namespace (every opcode, live QPs, MADs, multicast, fragments)" \
	injected
# Unknown opcodes, truncations and bad BTH fields stop before the count.
all_counted() {
	local lost
	lost=$(sed -n 's/.*the device counted all but \(-*[0-9]*\) .*/\1/p' "$tmp/fuzz")
	[ -n "$lost" ] && [ "$lost" -le $((packets / 1000)) ]
}
check "the well-formed ones all reached rrxe's transports (rcvd_pkts; at most 0.1% lost)" all_counted
runs_passed() {
	local r
	r=$(head -n1 "$tmp/$1")
	cat "$tmp/$1"
	[[ $r =~ ^[0-9]+$ ]] && [ "$r" -ge 1 ]
}
echo "# ibv_rc_pingpong runs during the fuzzing: $(head -n1 "$tmp/rc") ($(sed -n 2p "$tmp/rc"))"
echo "# rping runs during the fuzzing: $(head -n1 "$tmp/rping")"
echo "# ibv_xsrq_pingpong runs during the fuzzing: $(head -n1 "$tmp/xrc")"
check "ibv_rc_pingpong -c (4 KiB, $iters iterations a run) passed throughout the fuzzing" \
	runs_passed rc
check "rping -V (SEND, READ, WRITE; $pings pings a run) passed throughout the fuzzing" \
	runs_passed rping
check "ibv_xsrq_pingpong (XRC: 2 clients, $xrc_iters round trips each a run) passed throughout the fuzzing" \
	runs_passed xrc
# Part of the XRC packets to live target QPs named their XRC SRQ.
live_srq() {
	local n
	n=$(sed -n 's/.* \([0-9]*\) naming a live XRC SRQ,.*/\1/p' "$tmp/fuzz")
	echo "# $n packets named a live XRC SRQ"
	[ "${n:-0}" -gt 0 ]
}
check "XRC packets reached live XRC target QPs naming their XRC SRQ (past the SRQ check)" live_srq

check "afterwards, ibv_rc_pingpong -c between the devices" \
	pingpong_ns ibv_rc_pingpong $A rrxefa $B rrxefb 10.78.0.1 ffff:10.78.0 -s 8192 -m 1024 -n $after
check "afterwards, ibv_uc_pingpong -c between the devices" \
	pingpong_ns ibv_uc_pingpong $A rrxefa $B rrxefb 10.78.0.1 ffff:10.78.0 -s 4096 -m 1024 -n $after
check "afterwards, ibv_ud_pingpong -c between the devices over IPv6" \
	pingpong_ns ibv_ud_pingpong $B rrxefb $A rrxefa 10.78.0.2 fd78: -s 1024 -n $after

# The requester of a live RC stream gets NAKs of every kind (invalid
# request, remote access, remote operation, invalid RD request, sequence,
# RNR) on each request it sends, at PSNs 4096 to 2^23 - 4096 ahead of that
# request's and 4096 to 2^20 behind: no outstanding request has them, so
# they must be ignored. Its 256 KiB messages outrun the 128-PSN window, so
# that one is partly sent most of the time.
blind_naks() {
	local rc irc
	ip netns exec $B timeout 120 "$bin" nak rrxtvb "$mac_a" 10.78.0.2 10.78.0.1 90 >"$tmp/nak" 2>&1 &
	local inj=$!
	local t=$SECONDS
	pingpong_ns ibv_rc_pingpong $A rrxefa $B rrxefb 10.78.0.1 ffff:10.78.0 -s 262144 -m 1024 -n $naks
	rc=$?
	echo "# $naks messages of 256 KiB took $((SECONDS - t)) s (exit $rc)"
	wait $inj
	irc=$?
	cat "$tmp/nak"
	[ $rc = 0 ] && [ $irc = 0 ]
}
check "blind NAKs at PSNs no request holds do not break a live RC stream (ibv_rc_pingpong -c)" blind_naks

# Positive ACKs 4096 to 2^23 - 4096 ahead of each request's PSN: beyond
# anything sent, they must not complete requests, of which some were lost
# (5% loss on the requester's link; the same stream without them first,
# as the control).
#
# ibv_rc_pingpong has no closing handshake: with 5% loss on the server's
# link, the client's last SEND can lose its ACK after the server finished
# and destroyed its QP, and the client then fails that SEND after its 7
# retries (about 2 s; wr_id 2, "transport retry counter exceeded"). The
# client has one SEND out at a time, and the server finished only once all
# of them arrived, so that is its last one. A request that a blind ACK
# completed and the link lost stops both sides instead (each sends only
# once it has received), so the server must finish, its data checked (-c),
# and the client must end within 20 s of it.
# wait_pid PID SECONDS: PID's exit status, or 124 once it ran SECONDS more
# (then it is killed).
wait_pid() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && { kill "$1"; wait "$1"; return 124; }
	wait "$1"
}
lossy_pingpong() {
	local gi srv cli src ccl
	gi=$(gid_index rrxefa ffff:10.78.0)
	[ -n "$gi" ] || { echo "no IPv4 GID on rrxefa"; return 1; }
	ip netns exec $A ibv_rc_pingpong -d rrxefa -g "$gi" -c -s 4096 -m 1024 -n $lossy \
		>"$tmp/lossy.srv" 2>&1 &
	srv=$!
	pp_listening $srv $A
	ip netns exec $B ibv_rc_pingpong -d rrxefb -g "$gi" -c -s 4096 -m 1024 -n $lossy 10.78.0.1 \
		>"$tmp/lossy.cli" 2>&1 &
	cli=$!
	wait_pid $srv "${PP_TIMEOUT:-60}"
	src=$?
	wait_pid $cli 20
	ccl=$?
	if [ $src != 0 ]; then
		echo "the server exited $src:"
		cat "$tmp/lossy.srv" "$tmp/lossy.cli"
		return 1
	fi
	grep -q "^$lossy iters in" "$tmp/lossy.srv" || { echo "the server did not finish:"; cat "$tmp/lossy.srv"; return 1; }
	[ $ccl = 0 ] && return 0
	if [ $ccl = 1 ] && grep -qx "Failed status transport retry counter exceeded (12) for wr_id 2" "$tmp/lossy.cli"; then
		echo "# the client's last SEND lost its ACK after the server finished: it ran out of retries"
		return 0
	fi
	echo "the client exited $ccl:"
	cat "$tmp/lossy.cli"
	return 1
}
blind_acks() {
	local rc irc inj
	ip netns exec $A tc qdisc add dev rrxtva root netem loss 5% || return 1
	lossy_pingpong || { echo "the control failed"; ip netns exec $A tc qdisc del dev rrxtva root; return 1; }
	ip netns exec $B timeout 120 "$bin" ack rrxtvb "$mac_a" 10.78.0.2 10.78.0.1 90 >"$tmp/ack" 2>&1 &
	inj=$!
	lossy_pingpong
	rc=$?
	wait $inj
	irc=$?
	ip netns exec $A tc qdisc del dev rrxtva root
	cat "$tmp/ack"
	[ $rc = 0 ] && [ $irc = 0 ]
}
check "blind ACKs ahead of anything sent do not break a live RC stream with 5% loss (ibv_rc_pingpong -c)" blind_acks

check "no kernel report" no_kernel_report "$mark"
check "both devices delete" \
	bash -c "rdma link delete rrxefa && rdma link delete rrxefb && ! test -e /sys/class/infiniband/rrxefa && ! test -e /sys/class/infiniband/rrxefb"
check "rrxe unloads" modprobe -r rrxe

rm -rf "$tmp"
cleanup_net
echo "# rrxe_wire_fuzz.sh took $SECONDS s"
ktap_finished
