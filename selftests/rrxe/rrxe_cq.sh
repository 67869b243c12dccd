#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Completion queues through stock libibverbs/librxe and the raw uverbs
# commands: rxe's capacities and limits, completion vectors and channels,
# resize, the shared ring's mmap info and header (and a process scribbling
# over it), completions to a full CQ (its error event, the cq_overflow
# counter, a receiving QP moved to ERR), many CQs, and process exit
# without destroying them.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 8

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && link_add rrxec0 rrxtd0 || ktap_exit_fail_msg "setup failed"
bin=$(prog rrxe_cq_test) || ktap_exit_fail_msg "cannot build rrxe_cq_test"

t() { "$bin" rrxec0 "$@"; }
check "CQ capacities as rxe (2^k - 1), max_cqe, bad sizes and vectors EINVAL, resize, poll, notify" t api
check "ring mmap info and 384-byte header; resize gives a new ring; a scribbled header is ignored" t ring
check "a full CQ raises IBV_EVENT_CQ_ERR and cq_overflow counts each completion lost (flush, UD SENDs)" t overflow
check "a message whose completion a full receive CQ loses moves its UD, UC or RC QP to ERR, as rdma_rxe's does" t recv_overflow
check "2000 CQs at once" t many 2000

# User CQs only: ib_core's MAD layer keeps a kernel CQ (comm [ib_core]) for
# QP1 on every device.
cq_count() { rdma resource show cq dev rrxec0 2>/dev/null | grep cqn | grep -vc 'comm \[' || true; }
leak_then_clean() {
	t leak 1000 | grep -q 'created 1000' || { echo "child did not create its CQs"; return 1; }
	wait_for 10 bash -c "$(declare -f cq_count); [ \$(cq_count) = 0 ]" ||
		{ echo "$(cq_count) CQs left after the process exited"; return 1; }
}
check "process exit without destroy frees every CQ" leak_then_clean
check "rdma resource shows no user CQ left" bash -c "$(declare -f cq_count); [ \$(cq_count) = 0 ]"
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxec0 && ! test -e /sys/class/infiniband/rrxec0"

cleanup_net
ktap_finished
