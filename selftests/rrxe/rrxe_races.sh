#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Races between a verb and the teardown of what it uses. A memory window
# bound (type 2 through the send queue, type 1 with ibv_bind_mw) while
# another thread deregisters its MR: the window is never left bound to a
# deregistered MR, and its rkey then refuses remote access. A type 2
# window invalidated and bound again while an atomic through its old rkey is
# held (by the test build's hook) between finding the window and using
# its binding: the old rkey is refused. A QP moved to ERR with 32000
# receives posted flushes them all without keeping interrupts off on its
# CPU for long (its timer interrupts are handled meanwhile). The owner of
# a DM MR killed while a peer's READ of it is held (by the hook) between
# finding the MR and copying: its exit waits for the copy, and the READ
# completes with the DM's bytes. A kernel UD QP
# destroyed while a process floods it with datagrams (rrxe_race_test
# ud_flood, through the kernel test module's destroy_race check): no
# completion naming the destroyed QP reaches its CQ afterwards. Nothing
# is left behind, and the module unloads.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 10

mark=$(kmsg_mark)
dummy_dev rrxera0 10.79.2.1
wait_gid rrxera0 fe80 || ktap_exit_fail_msg "no link-local GID"
tmp=$(mktemp -d)
bin=$(prog rrxe_race_test) || ktap_exit_fail_msg "cannot build rrxe_race_test"

# Each race writes its summary lines to $tmp/summary: shown with the
# failure, or as diagnostics after a passing KTAP line.
race() {
	rm -f "$tmp/passed"
	"$@" && touch "$tmp/passed" && return 0
	cat "$tmp/summary"
	return 1
}
summary() { [ -e "$tmp/passed" ] && sed 's/^/# /' "$tmp/summary"; }

# 400 rounds of the window race; 50 on the debug kernel (RRXE_DEBUG=1),
# where the harness runs this for the DM owner's race under KASAN.
rounds=${RRXE_RACE_ROUNDS:-400}
[ "${RRXE_DEBUG:-0}" = 1 ] && rounds=${RRXE_RACE_ROUNDS:-50}
mw_race() {
	local t0=$SECONDS rc
	timeout 600 "$bin" rrxera0 mw_dereg "$rounds" >"$tmp/summary" 2>&1
	rc=$?
	echo "mw_dereg: $((SECONDS - t0)) s" >>"$tmp/summary"
	return $rc
}
check "$rounds rounds of binds racing ibv_dereg_mr: no window bound to a deregistered MR, its rkey refused" race mw_race
summary

rebind_race() {
	timeout 120 "$bin" rrxera0 mw_rebind >"$tmp/summary" 2>&1
}
check "an atomic through a type 2 window's old rkey, held while the window is bound again, is refused" \
	race rebind_race
summary

send_err_race() {
	timeout 120 "$bin" rrxera0 send_err >"$tmp/summary" 2>&1
}
check "a UC SEND that fails locally: its QP is in ERR when its error completion is seen" \
	race send_err_race
summary

flush_race() {
	timeout 120 "$bin" rrxera0 flush_irqs >"$tmp/summary" 2>&1
}
check "the ERR flush of 32000 receives lets its CPU's timer interrupts in" \
	race flush_race
summary

# DM through libibverbs needs the project's rdma-core 59 (stock librxe has
# none); the program is built against either, the library is chosen here.
dm_exit_race() {
	(
		. "$(dirname "$0")/../../tools/rdma-user-env" || { echo "no rdma-core 59 build"; exit 1; }
		timeout 120 "$bin" rrxera0 dm_exit
	) >"$tmp/summary" 2>&1
}
check "a DM owner killed while a READ of its DM is held: its exit waits for the copy, the READ gets the DM's bytes" \
	race dm_exit_race
summary

# The kernel test module destroys its QPs while this process floods them.
destroy_race() {
	local mark rc log t0=$SECONDS
	mark="rrxe_races mark $$ $RANDOM"
	echo "$mark" >/dev/kmsg
	taskset -c 0 "$bin" rrxera0 ud_flood 600 >"$tmp/flood" 2>&1 &
	local flood=$!
	modprobe rrxe_kverbs_test netdev=rrxtd0 destroy_race="${RRXE_DESTROY_ROUNDS:-1500}"
	rc=$?
	kill "$flood" 2>/dev/null
	wait "$flood" 2>/dev/null
	modprobe -r rrxe_kverbs_test 2>/dev/null
	log=$(dmesg | sed -n "/$mark/,\$p" | grep -o 'rrxe_kverbs_test: .*')
	{ printf '%s\n' "$log"; echo "destroy_race: $((SECONDS - t0)) s"; } >"$tmp/summary"
	[ $rc -eq 0 ] && printf '%s\n' "$log" | grep -q 'all passed'
}
check "kernel UD QPs destroyed under a flood of datagrams: no completion names a destroyed QP" race destroy_race
summary

check "no kernel report" no_kernel_report "$mark"
check "nothing of the processes is left on the device" no_user_objects rrxera0
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxera0 && ! test -e /sys/class/infiniband/rrxera0"
check "the module unloads" modprobe -r rrxe

rm -rf "$tmp"
cleanup_net
ktap_finished
