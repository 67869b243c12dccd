#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# On-demand paging: IBV_ACCESS_ON_DEMAND MRs over anonymous mappings whose
# pages are dropped (madvise MADV_DONTNEED) between messages, as rdma-core's
# test_odp does. An RC peer's RDMA WRITE, READ, SEND and atomics, and the
# requester's own gathers and scatters, reach the process's current pages,
# byte for byte; ibv_advise_mr prefetches (each advice, with and without
# FLUSH) return 0 and a bad lkey fails EINVAL; an ODP MR whose process's
# address space is gone fails remote access, and the kernel log stays
# clean. A page fault that never completes (rrxe_stall_test's memory, a
# stand-in for a stalled file system) holds up only its own QP: two other
# QPs of the device keep exchanging messages, the WRITE and the atomic
# land once it is released, and the device deletes within 5 s while it is
# stalled. The same holds where UD and UC receives, and RC, UC and UD
# requesters' own gathers and scatters meet such memory: their doorbells
# return at once, UD and UC drop what they cannot place (counted in
# odp_fault_deferred), and the sends and RC operations complete once it
# is released. Runs rrxe_odp_test.c against the project's rdma-core 59 userspace
# (tools/rdma-user-env): rdma-core 44's librxe does not pass
# ibv_advise_mr to the kernel.
#
# The rdma-core 59 build comes from tools/setup-host (tools/build-rdma-core);
# without it this test fails.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
dir=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$dir/../.." && pwd)
dev=rrxod0

ktap_print_header
ktap_set_plan 11

# shellcheck source=tools/rdma-user-env
. "$root/tools/rdma-user-env" ||
	ktap_exit_fail_msg "no rdma-core 59 build (tools/setup-host builds it with tools/build-rdma-core)"

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
modprobe -r rrxe_stall_test 2>/dev/null
modprobe rrxe_stall_test || ktap_exit_fail_msg "modprobe rrxe_stall_test failed (tools/guest installs it)"
stall=/sys/module/rrxe_stall_test/parameters
mk_dummy rrxtd0 && ip addr add 10.79.0.1/24 dev rrxtd0 && link_add $dev rrxtd0 ||
	ktap_exit_fail_msg "setup failed"
wait_gid $dev "ffff:10.79.0.1" || ktap_exit_fail_msg "no IPv4 GID on $dev"
work=$(mktemp -d)
bin=$work/rrxe_odp_test
cc -Wall -O2 -I"$RRXE_RDMA_CORE/include" -o "$bin" "$dir/rrxe_odp_test.c" \
	-L"$RRXE_RDMA_CORE/lib" -libverbs || ktap_exit_fail_msg "cannot build rrxe_odp_test"
mark=$(kmsg_mark)

t() { "$bin" $dev "$@"; }
check "RDMA WRITE from and into ODP MRs after MADV_DONTNEED: the process sees the data" t write
check "RDMA READ of ODP memory refilled after MADV_DONTNEED, into a dropped ODP MR" t read
check "SEND gathered from and scattered into ODP MRs after MADV_DONTNEED" t send
check "FETCH_AND_ADD and CMP_AND_SWP on dropped ODP words, results into a dropped ODP MR" t atomic
check "ibv_advise_mr: each advice, with and without FLUSH, returns 0; a bad lkey fails EINVAL" t advise
check "an ODP MR of an exited process: an RDMA WRITE into it fails with a remote access error" t gone
check "a stalled page fault holds up only its QP; released, the WRITE, the atomic and the READ complete" t stall
check "UD, UC and the RC requester's own memory stalled: doorbells return, others go on; released, all land" t stall_more

# The device is deleted while a WRITE's fault (or a SEND's gather) is
# stalled. The deletion runs in the background: one that waits for the
# fault ends only once the fault is released, after the check. The device
# comes back for the next check.
stalled_delete() {
	local mode=$1 out=$work/hold pid del rc=0
	echo 0 >"$stall"/release
	"$bin" $dev "$mode" >"$out" 2>&1 &
	pid=$!
	wait_for 30 grep -q stalled "$out" || { cat "$out"; kill -9 $pid; echo 1 >"$stall"/release; return 1; }
	rdma link delete $dev &
	del=$!
	wait_for 5 dev_gone $dev || { echo "$dev still there 5 s after rdma link delete, with a fault stalled"; rc=1; }
	kill -9 $pid
	echo 1 >"$stall"/release
	wait $pid 2>/dev/null
	wait $del || rc=1
	link_add $dev rrxtd0 && wait_gid $dev "ffff:10.79.0.1" || { echo "$dev did not come back"; rc=1; }
	return $rc
}
check "the device deletes within 5 s while a fault on its QP's memory is stalled" stalled_delete stall_hold
check "the device deletes within 5 s while a SEND's gather from stalled memory waits" stalled_delete stall_send_hold
check "no kernel report (WARN, BUG, KASAN, lockdep, hung task)" no_kernel_report "$mark"

rm -rf "$work"
modprobe -r rrxe_stall_test
cleanup_net
ktap_finished
