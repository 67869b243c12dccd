#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A process streams 256 MiB (one UC SEND) or 1 GiB (RC WRITEs, READs) to a QP
# of another process on the same device, and that process is killed with
# SIGKILL mid-stream. The killed process's context must be torn down with
# nothing left behind and no kernel report (its rings used to outlive it in
# the streamer's hands: a WARN in uverbs_destroy_ufile_hw, then a
# use-after-free of the freed context when the streamer let go); the
# streamer gets its completion; the device deletes cleanly afterwards. A
# streamer killed early takes its peer with it.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

dummy_dev rrxepx0 10.79.1.1
bin=$(prog rrxe_peer_exit_test) || ktap_exit_fail_msg "cannot build rrxe_peer_exit_test"

# killed MODE: round 0 checks the data; three more rounds kill the peer at
# 10, 40 and 70% of round 0's time; then no kernel report.
killed() {
	local mark
	mark=$(kmsg_mark)
	timeout 600 "$bin" rrxepx0 "$1" 3 && no_kernel_report "$mark"
}

check "UC SEND of 256 MiB: the receiver killed mid-stream, 3 times" killed uc
check "128 RC WRITEs of 8 MiB: the target killed mid-stream, 3 times" killed rc_write
check "128 RC READs of 8 MiB: the responder killed mid-stream, 3 times" killed rc_read
# A streamer that stops early (killed here while its peer waits for it, as
# when one of its checks fails) takes its peer with it: a peer left waiting
# on its pipe would hold this script's output open for ever.
no_peer_left() {
	! pgrep -f rrxe_peer_exit_test
}
# The streamer ("hold") connects to its peer and then waits to be killed,
# so the kill lands while the peer waits however slowly this script runs
# (a stream's kernel threads can keep a shell off the CPU for a second
# and more). Its output is shown when it ends on its own or never says
# it holds.
streamer_killed() {
	local pid peer n=0 out st
	out=$(mktemp)
	"$bin" rrxepx0 rc_write hold >"$out" 2>&1 &
	pid=$!
	until grep -q '^holding with peer' "$out"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			st=$?
			echo "the streamer ended (status $st) before it held:"
			sed 's/^/# /' "$out"
			rm -f "$out"
			return 1
		fi
		n=$((n + 1))
		if [ "$n" -ge 600 ]; then
			echo "the streamer did not hold within a minute:"
			sed 's/^/# /' "$out"
			kill -KILL "$pid"
			wait "$pid"
			rm -f "$out"
			return 1
		fi
		sleep 0.1
	done
	peer=$(awk '/^holding with peer/ { print $4 }' "$out")
	rm -f "$out"
	if ! kill -0 "$peer" 2>/dev/null || [ "$(ps -o ppid= -p "$peer" | tr -d ' ')" != "$pid" ]; then
		echo "the streamer's peer $peer is not its live child"
		kill -KILL "$pid"
		wait "$pid"
		return 1
	fi
	kill -KILL "$pid"
	wait "$pid"
	wait_for 20 no_peer_left || { echo "a peer outlived its streamer"; return 1; }
}
check "the streamer killed before its peer: the peer goes too" streamer_killed
# No user object of any process is left (the MAD layer's own kernel QPs,
# CQs, PD and MR stay).
check "the killed processes left no QP, CQ, MR, PD, SRQ or context behind" \
	wait_for 10 no_user_objects rrxepx0
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxepx0 && ! test -e /sys/class/infiniband/rrxepx0"

cleanup_net
ktap_finished
