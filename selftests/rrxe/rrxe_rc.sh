#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# RC (reliable connected) transport. First rrxe_rc_test's modes between QPs
# of one device (SEND scatter/gather and immediates, RDMA WRITE and READ,
# atomics and a fetch_add race, RNR and transport retries, the ERR flush,
# remote access violations, memory windows, atomic alignment in memory,
# FLUSH rights, RESET dropping what is in flight, a responder destroyed
# the moment it completes a receive), data compared byte for
# byte. Then the stock tools on that device: ibv_rc_pingpong and
# ibv_srq_pingpong validating every buffer, perftest's RC bandwidth and
# latency tests over verbs and rdma_cm. Then between two namespaces over a
# veth pair: the pingpongs over IPv4 and IPv6 (also at a path MTU above the
# veth's), rping with validation over IPv4 and IPv6, rdma_server/
# rdma_client, ib_read_bw over rdma_cm and ib_atomic_bw.
# Every server runs under a timeout; the client must finish first and both
# must succeed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 37

A=rrxtra B=rrxtrb
work=$(mktemp -d)
PAIR_DIR=$work
: >"$work/pids"

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtr0 && ip addr add 10.81.0.1/24 dev rrxtr0 && link_add rrxer0 rrxtr0 ||
	ktap_exit_fail_msg "setup failed"
wait_gid rrxer0 ffff:10.81.0.1 || ktap_exit_fail_msg "no IPv4 GID"
gi=$(gid_index rrxer0 ffff:10.81.0.1)
bin=$(prog rrxe_rc_test) || ktap_exit_fail_msg "cannot build rrxe_rc_test"

t() { timeout 300 "$bin" rrxer0 "$@"; }
check "RC SEND: 10257 bytes from 2 SGEs into 3, with immediate, 0 bytes, 100 in a row signaled every 10th" t send
check "RC WRITE of 64 KiB, WRITE with immediate, READ of 64 KiB + 1, 1 byte and into 2 SGEs, zero-length ops with a bogus key" \
	t write_read
check "RC FETCH_AND_ADD and CMP_AND_SWP (swap and no swap); two QPs race 400 fetch_add(1): all values distinct" t atomic
check "RC RNR: no receive and rnr_retry 0 gives RNR_RETRY_EXC_ERR; with rnr_retry 7 a receive posted 200 ms late takes the SEND" \
	t rnr
check "RC transport retries: a WRITE to a destroyed QP is retried 3 times on a backed-off timer, none cut short, then RETRY_EXC_ERR; counters match (4 rounds); at retry_cnt 7, 7 times (not for ever)" \
	t retry
check "RC error: both QPs in ERR, later WQEs and the receives flushed with WR_FLUSH_ERR, target unchanged" t flush_err
check "RC remote access violations (foreign PD, wrong key, past the MR, u64 wrap, access rights, misaligned atomic, invalidated and foreign windows) fail, target unchanged" \
	t security
check "RC memory windows: type 1 bind, bounds, unbind, dealloc; zero-based type 2; SEND_WITH_INV; failing binds" t mw
check "RC atomics and ATOMIC WRITE need an 8-byte aligned target in memory, not only an aligned VA (zero-based windows and MRs at 4 mod 8): INV_REQ, target unchanged" \
	t atomic_align
check "RC FLUSH needs the QP's flush rights and the MR's; one of no placement type is INV_REQ whatever its rkey (no rkey oracle)" \
	t flush
check "RESET drops without a completion a SEND RNR-looping (RTS), one failed halfway (ERR) and a receive held mid-SEND (RTS), RC and UC; reconnected with new PSNs only the new SEND (and a READ) completes" \
	t reset
check "RC: a QP holding a receive mid-SEND whose own SEND then fails locally enters ERR and flushes the held receive and the one in its ring" \
	t err_held
check "RC: a responder that destroys its QP the moment its receive completes still ACKs the SEND (100 times; the requester's SEND completes with SUCCESS)" \
	t ack_destroy
check "RC: a responder that moves its QP to ERR the moment its receive completes (as rdma_disconnect) still ACKs the SEND (100 times)" \
	t ack_error

# pp TOOL PORT ARGS...: a stock ibv_*_pingpong validating its buffers (-c),
# server and client on rrxer0 with its IPv4 GID, over TCP to 127.0.0.1.
pp() {
	local tool=$1 port=$2; shift 2
	local a=("$tool" -d rrxer0 -g "$gi" -p "$port" -c "$@")
	pair "tcp:$port" "" "" "${a[@]}" -- "${a[@]}" 127.0.0.1
}

# perf TOOL PORT ARGS...: a perftest test, server and client on rrxer0 with
# its IPv4 GID; perf_cm the same, connected through rdma_cm (-R).
perf() {
	local tool=$1 port=$2; shift 2
	local a=("$tool" -d rrxer0 -x "$gi" -F -p "$port" "$@")
	pair "tcp:$port" "" "" "${a[@]}" -- "${a[@]}" 10.81.0.1
}
perf_cm() {
	local tool=$1 port=$2; shift 2
	local a=("$tool" -R -d rrxer0 -F -p "$port" "$@")
	pair "cm:$port" "" "" "${a[@]}" -- "${a[@]}" 10.81.0.1
}

# The debug kernel (KASAN, lockdep) runs all this about four times slower:
# perftest moves less there.
bw=200 lat=100
[ "${RRXE_DEBUG:-0}" = 1 ] && bw=50 lat=30

check "ibv_rc_pingpong -c on one device: 4096-byte messages, 200 iterations" pp ibv_rc_pingpong 18521 -s 4096 -n 200
check "ibv_srq_pingpong -c on one device: 4 QPs sharing an SRQ, 100 iterations each" \
	pp ibv_srq_pingpong 18522 -q 4 -s 4096 -n 100
check "ib_write_bw on one device: $bw x 64 KiB" perf ib_write_bw 18601 -s 65536 -n $bw
check "ib_read_bw on one device: $bw x 64 KiB" perf ib_read_bw 18602 -s 65536 -n $bw
check "ib_send_bw on one device: $bw x 64 KiB" perf ib_send_bw 18603 -s 65536 -n $bw
check "ib_atomic_bw on one device: $bw fetch_adds" perf ib_atomic_bw 18604 -n $bw
check "ib_write_lat on one device: $lat iterations" perf ib_write_lat 18605 -n $lat
check "ib_read_lat on one device: $lat iterations" perf ib_read_lat 18606 -n $lat
check "ib_send_lat on one device: $lat iterations" perf ib_send_lat 18607 -n $lat
check "ib_atomic_lat on one device: $lat iterations" perf ib_atomic_lat 18608 -n $lat
check "ib_write_bw -R (rdma_cm) on one device: $bw x 64 KiB" perf_cm ib_write_bw 18609 -s 65536 -n $bw
check "ib_send_lat -R (rdma_cm) on one device: $lat iterations" perf_cm ib_send_lat 18610 -n $lat

# Two namespaces: rrxera on rrxtva (10.78.0.1, fd78::1) in A, rrxerb on
# rrxtvb (10.78.0.2, fd78::2) in B.
mk_veth_pair $A $B || ktap_exit_fail_msg "veth setup failed"
ip netns exec $A rdma link add rrxera type "$RRXE_LINK_TYPE" netdev rrxtva &&
	ip netns exec $B rdma link add rrxerb type "$RRXE_LINK_TYPE" netdev rrxtvb ||
	ktap_exit_fail_msg "devices failed"
wait_gid rrxera ffff:10.78.0.1 && wait_gid rrxerb ffff:10.78.0.2 &&
	wait_gid rrxera fd78::1 && wait_gid rrxerb fd78::2 || ktap_exit_fail_msg "GIDs did not appear"

# pp_ns TOOL PORT GID_TEXT ARGS...: a stock pingpong validating its buffers,
# server on rrxera in A, client on rrxerb in B, each with its GID that
# contains GID_TEXT; the QP numbers go over TCP to 10.78.0.1.
pp_ns() {
	local tool=$1 port=$2 g=$3; shift 3
	local ga gb
	ga=$(gid_index rrxera "$g")
	gb=$(gid_index rrxerb "$g")
	[ -n "$ga" ] && [ -n "$gb" ] || { echo "no GID like $g"; return 1; }
	pair "tcp:$port" $A $B "$tool" -d rrxera -g "$ga" -p "$port" -c "$@" -- \
		"$tool" -d rrxerb -g "$gb" -p "$port" -c "$@" 10.78.0.1
}

# rping_ns ADDR: rping server in A bound to ADDR, client in B; 500 pings of
# 1000 bytes, each validated by the client and counted.
rping_ns() {
	local n
	pair cm:7174 $A $B rping -s -a "$1" -C 500 -S 1000 -V -- rping -c -a "$1" -C 500 -S 1000 -V -v || return 1
	n=$(grep -c '^ping data: ' "$work/client")
	[ "$n" -eq 500 ] || { echo "the client pinged $n times, not 500"; tail -n 5 "$work/client"; return 1; }
}

rdma_server_ns() {
	pair cm:7471 $A $B rdma_server -s 10.78.0.1 -- rdma_client -s 10.78.0.1 || return 1
	grep -q '^rdma_client: end 0' "$work/client" && grep -q '^rdma_server: end 0' "$work/server" || {
		cat "$work/client" "$work/server"; return 1; }
}

check "ibv_rc_pingpong -c between namespaces over IPv4: 8 KiB messages, 200 iterations" \
	pp_ns ibv_rc_pingpong 18531 ffff:10.78.0. -s 8192 -n 200
check "ibv_rc_pingpong -c between namespaces over IPv6: 3000-byte messages, 256-byte MTU" \
	pp_ns ibv_rc_pingpong 18532 fd78: -s 3000 -m 256 -n 100
check "ibv_rc_pingpong -c between namespaces: 300000-byte messages at a 1 KiB MTU (293 packets, past the 128-PSN window), 10 iterations" \
	pp_ns ibv_rc_pingpong 18534 ffff:10.78.0. -s 300000 -m 1024 -n 10
# big_mtu: the QPs' path MTU (4096) above what the 1500-byte veth carries,
# which modify_qp accepts, as rdma_rxe does (it checks against the port's
# max_mtu only). Messages that fit in one packet of the link pass; an 8 KiB
# SEND, whose 4096-byte packets the IP layer refuses (EMSGSIZE), fails at
# once with LOC_QP_OP_ERR instead of being retried until the retries run
# out (rdma_rxe's retries at retry_cnt 7 never do). rdma_rxe fails it at once too: it sets LOC_QP_OP_ERR,
# and its QP's error flush then reports the WQE as WR_FLUSH_ERR.
big_mtu() {
	local ga pid rc t0 t
	pp_ns ibv_rc_pingpong 18535 ffff:10.78.0. -s 1000 -m 4096 -n 20 || return 1
	ga=$(gid_index rrxera ffff:10.78.0.)
	ip netns exec $A timeout 60 ibv_rc_pingpong -d rrxera -g "$ga" -p 18536 -s 8192 -m 4096 -n 1 \
		>"$work/server" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >>"$work/pids"
	wait_for 20 listening tcp:18536 $A
	t0=$(date +%s)
	rc=0
	ip netns exec $B timeout 40 ibv_rc_pingpong -d rrxerb -g "$ga" -p 18536 -s 8192 -m 4096 -n 1 \
		10.78.0.1 >"$work/client" 2>&1 </dev/null || rc=$?
	t=$(($(date +%s) - t0))
	kill "$pid" 2>/dev/null
	wait "$pid"
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$t" -gt 20 ] || ! grep -q "Failed status local QP operation error" "$work/client"; then
		echo "8 KiB SEND at path MTU 4096 over a 1500-byte link: client exited $rc after $t s"
		tail -n 5 "$work/client"
		return 1
	fi
	echo "# the 8 KiB SEND failed after $t s: $(grep -m1 'Failed status' "$work/client")"
}

check "path MTU 4096 over a 1500-byte veth (accepted, as by rdma_rxe): 1000-byte messages pass, an 8 KiB SEND fails at once with LOC_QP_OP_ERR" \
	big_mtu
check "ibv_srq_pingpong -c between namespaces: 4 QPs, 100 iterations each" \
	pp_ns ibv_srq_pingpong 18533 ffff:10.78.0. -q 4 -s 4096 -n 100
check "rping -V between namespaces over IPv4: 500 validated pings of 1000 bytes" rping_ns 10.78.0.1
check "rping -V between namespaces over IPv6: 500 validated pings of 1000 bytes" rping_ns fd78::1
check "rdma_server and rdma_client between namespaces" rdma_server_ns
check "ib_read_bw -R (rdma_cm) between namespaces: $bw x 64 KiB" \
	pair cm:18611 $A $B ib_read_bw -R -d rrxera -F -p 18611 -s 65536 -n $bw -- \
	ib_read_bw -R -d rrxerb -F -p 18611 -s 65536 -n $bw 10.78.0.1
check "ib_atomic_bw between namespaces: $bw fetch_adds" \
	pair tcp:18612 $A $B ib_atomic_bw -d rrxera -x "$(gid_index rrxera ffff:10.78.0.1)" -F -p 18612 -n $bw -- \
	ib_atomic_bw -d rrxerb -x "$(gid_index rrxerb ffff:10.78.0.2)" -F -p 18612 -n $bw 10.78.0.1

stop_servers
check "the devices delete cleanly afterwards" \
	bash -c "rdma link delete rrxer0 && rdma link delete rrxera && rdma link delete rrxerb &&
		! test -e /sys/class/infiniband/rrxer0 && ! test -e /sys/class/infiniband/rrxera &&
		! test -e /sys/class/infiniband/rrxerb"

rm -rf "$work"
cleanup_net
ktap_finished
