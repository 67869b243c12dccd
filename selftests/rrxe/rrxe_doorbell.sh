#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Doorbells: ibv_post_send returns promptly whatever it was asked to
# send, and nothing a process posts keeps it, or the device, from going.
# On one device (QPs of one device; their packets go by local delivery):
# one UC SEND and one RC WRITE of 256 MiB, five times each: the caller
# runs for at most 10 ms inside ibv_post_send (its own CPU time; 50 ms on
# the debug kernel) and ibv_post_send returns within ten times that (the
# best of the five for each), a fraction of the transfer's time, and the
# transfers complete, the data checked byte for byte; a process posting 8 GiB of UC SENDs in one call, killed
# with SIGKILL half a second later, exits within a second; with such a
# transfer under way, `rdma link delete` finishes within 5 s;
# the kernel reported nothing and rrxe unloads.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

limit=10
[ "${RRXE_DEBUG:-0}" = 1 ] && limit=50
dummy_dev rrxedb0 10.79.5.1
bin=$(prog rrxe_doorbell_test) || ktap_exit_fail_msg "cannot build rrxe_doorbell_test"
tmp=$(mktemp -d)
mark=$(kmsg_mark)

one() {
	timeout 300 "$bin" rrxedb0 "$1" "$limit" >"$tmp/out" 2>&1
	local rc=$?
	cat "$tmp/out"
	return $rc
}
check "a UC SEND of 256 MiB: the caller runs at most $limit ms in ibv_post_send, which returns within $((limit * 10)) ms (best of five), the data arrives" one uc
sed 's/^/# /' "$tmp/out"
check "an RC WRITE of 256 MiB: the caller runs at most $limit ms in ibv_post_send, which returns within $((limit * 10)) ms (best of five), the data arrives" one rc
sed 's/^/# /' "$tmp/out"

ms() { echo $(($(date +%s%N) / 1000000)); }

# busy: starts the poster of 8 GiB in the background ($pid), and gives it
# half a second from its ibv_post_send call.
busy() {
	local fifo=$tmp/fifo b
	rm -f "$fifo"
	mkfifo "$fifo"
	"$bin" rrxedb0 busy 3 3>"$fifo" >"$tmp/busy" 2>&1 &
	pid=$!
	if ! read -r -n1 -t 60 b <"$fifo" || [ "$b" != p ]; then
		echo "the poster did not post:"
		cat "$tmp/busy"
		return 1
	fi
	# The transfer is under way, in the doorbell or after it.
	sleep 0.5
}

killed() {
	local t
	busy || return 1
	t=$(ms)
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	t=$(($(ms) - t))
	echo "the process exited $t ms after SIGKILL" | tee "$tmp/info"
	[ "$t" -le 1000 ]
}
check "a process sending 8 GiB of UC SENDs, killed with SIGKILL, exits within 1 s" killed
sed 's/^/# /' "$tmp/info"

deleted() {
	local t rc=0
	busy || return 1
	t=$(ms)
	timeout 60 rdma link delete rrxedb0 || rc=1
	t=$(($(ms) - t))
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	echo "rdma link delete took $t ms while 8 GiB of UC SENDs were being sent" | tee "$tmp/info"
	[ $rc = 0 ] && [ "$t" -le 5000 ] && dev_gone rrxedb0
}
check "rdma link delete finishes within 5 s while a process's 8 GiB transfer runs" deleted
sed 's/^/# /' "$tmp/info"
check "no kernel report" no_kernel_report "$mark"
check "the module unloads" modprobe -r rrxe

rm -rf "$tmp"
cleanup_net
ktap_finished
