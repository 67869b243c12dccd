#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma_cm clients that meet no listener: the same on rdma_rxe, the
# baseline, and on rrxe.
#
# perftest -R connects twice through rdma_cm on one port: a control
# connection, and after a hand-shake over it the QPs of the test. Its
# server calls rdma_listen for the second only after that hand-shake,
# while its client connects right after it, so a server slower than its
# client there has no listener yet: ib_cm finds no listen for the
# client's service ID and rejects the REQ with reason 8 (invalid service
# ID). That is perftest's own race, whatever the provider. Here the
# server runs with rrxe_cm_nolisten.so preloaded, which makes its second
# rdma_listen listen on nothing: the reject is certain.
#
# On each driver: rping's client with no server at all (the REJ reason it
# prints); ib_write_bw -R and ib_send_lat -R against that server (the REJ
# reason the client prints, its exit status, and the kernel's line if it
# faulted). rdma_rxe must give reason 8 (the test made what it meant to);
# rrxe must give the same reason, and each client must end on rrxe as it
# ends on rdma_rxe: the outcome is ib_core's and perftest's, not the
# provider's. Every outcome is printed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 3

IP=10.85.0.1 NETDEV=rrxtj0 DEV=rrxtj
log=$(mktemp -d)
PAIR_DIR=$log
: >"$log/pids"
shim=$(prog rrxe_cm_nolisten.so) || ktap_exit_fail_msg "cannot build rrxe_cm_nolisten.so"

declare -A reason ending

# outcome KEY MARK: records the client's ($log/cli) REJ reason and how it
# ended (exit status $rc; the kernel's line since MARK if it faulted).
outcome() {
	local r fault
	r=$(sed -n 's/.*RDMA_CM_EVENT_REJECTED[;,] error:\{0,1\} \([0-9]*\).*/\1/p' "$log/cli" | head -n1)
	reason[$1]=${r:-none}
	fault=$(kmsg_since "$2" | grep -E "\[[0-9]+\]: segfault at|traps: .*\[[0-9]+\] " | head -n1 |
		sed 's/^\[[^]]*\] *//')
	ending[$1]="$(exit_text "$rc")${fault:+; kernel: $fault}"
	echo "# $1: REJ reason ${reason[$1]}; the client ${ending[$1]}"
	grep -v '^ *$' "$log/cli" | tail -n 6 | sed 's/^/#   /'
}

# no_server: rping's client to $IP port 18820, where nothing listens.
no_server() {
	local mark rc=0
	mark=$(kmsg_mark)
	timeout 120 rping -c -a $IP -p 18820 -C 1 -v >"$log/cli" 2>&1 </dev/null || rc=$?
	outcome "$drv.rping" "$mark"
}

# late_listener TOOL PORT: TOOL -R, its server with the shim.
late_listener() {
	local tool=$1 port=$2 pid mark rc=0
	LD_PRELOAD=$shim timeout 180 "$tool" -R -d $DEV -F -p "$port" >"$log/srv" 2>&1 </dev/null &
	pid=$!
	wait_for 60 listening "cm:$port" "" >/dev/null || echo "# $tool's server never listened"
	mark=$(kmsg_mark)
	# The braces' stderr takes the shell's own "Segmentation fault" line.
	{ timeout 120 "$tool" -R -d $DEV -F -p "$port" $IP >"$log/cli" 2>&1 </dev/null; } 2>/dev/null || rc=$?
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	grep -q "rrxe_cm_nolisten: rdma_listen call 2 not made" "$log/srv" ||
		{ echo "# $tool's server did not reach its second rdma_listen:"; tail -n 5 "$log/srv" | sed 's/^/#   /'; }
	outcome "$drv.$tool" "$mark"
}

run_driver() {
	cleanup_net
	if [ "$drv" = rdma_rxe ]; then modprobe rdma_rxe; else load_rrxe; fi || return 1
	mk_dummy $NETDEV && ip addr add $IP/24 dev $NETDEV || return 1
	if [ "$drv" = rdma_rxe ]; then rdma link add $DEV type rxe netdev $NETDEV; else link_add $DEV $NETDEV; fi &&
		wait_gid $DEV ffff:$IP || return 1
	no_server
	late_listener ib_write_bw 18821
	late_listener ib_send_lat 18822
	rdma link delete $DEV
	ip link del $NETDEV
	if [ "$drv" = rdma_rxe ]; then timeout 60 modprobe -r rdma_rxe; else timeout 60 modprobe -r rrxe; fi ||
		echo "# $drv does not unload"
}

for drv in rdma_rxe rrxe; do
	run_driver || ktap_exit_fail_msg "$drv: setup failed"
done

# same TOOL: rdma_rxe's client was rejected with reason 8, rrxe's with the
# same reason, and it ended the same way on both (its exit status, and
# whether it faulted).
same() {
	local a=${ending[rdma_rxe.$1]:-} b=${ending[rrxe.$1]:-} fa=no fb=no
	[ "${reason[rdma_rxe.$1]:-}" = 8 ] || { echo "rdma_rxe: REJ reason ${reason[rdma_rxe.$1]:-none}, not 8"; return 1; }
	[ "${reason[rrxe.$1]:-}" = 8 ] || { echo "rrxe: REJ reason ${reason[rrxe.$1]:-none}, rdma_rxe's was 8"; return 1; }
	[[ $a == *kernel:* ]] && fa=yes
	[[ $b == *kernel:* ]] && fb=yes
	[ "${a%%;*}" = "${b%%;*}" ] && [ $fa = $fb ] || {
		echo "the client ended differently: rdma_rxe: $a; rrxe: $b"; return 1; }
}
check "rping with no server: REJ reason 8 on rdma_rxe and on rrxe; the client ends alike" same rping
check "ib_write_bw -R, its QPs' listener missing: REJ reason 8 on rdma_rxe and on rrxe; the client ends alike" same ib_write_bw
check "ib_send_lat -R, its QPs' listener missing: REJ reason 8 on rdma_rxe and on rrxe; the client ends alike" same ib_send_lat

cleanup_net
rm -rf "$log"
ktap_finished
