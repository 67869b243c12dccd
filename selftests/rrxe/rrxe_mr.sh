#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Memory registration and memory windows through stock libibverbs/librxe:
# access rules, keys, unaligned, iova and zero-based regions, u64 wrap,
# thousands of MRs, a multi-GiB MR, and process exit without dereg.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 11

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && link_add rrxem0 rrxtd0 || ktap_exit_fail_msg "setup failed"
bin=$(prog rrxe_mr_test) || ktap_exit_fail_msg "cannot build rrxe_mr_test"

t() { "$bin" rrxem0 "$@"; }
check "reg/dereg with each valid access combination; lkey == rkey in the MR range" t basic
check "page-unaligned start and length" t unaligned
check "iova != addr, zero-based, a region ending at 2^64; iova + length wrapping fails EINVAL" t iova
check "bad access flags fail EINVAL, unmapped memory EFAULT; an on-demand MR registers" t badflags
check "a PD with an MR cannot be freed until the MR is" t pd_busy
check "rereg of access, PD and translation keeps the key; bad reregs fail EINVAL" t rereg
check "5000 MRs at once, distinct keys" t many 5000
check "a 4 GiB MR" t big 4
check "64 type 1 and 64 type 2 memory windows: rkeys in the MW range" t mw

mr_count() { rdma resource show mr dev rrxem0 2>/dev/null | grep -c 'mrn' || true; }
leak_then_clean() {
	t leak 2000 | grep -q 'registered 2000' || { echo "child did not register"; return 1; }
	wait_for 10 bash -c "[ \$(rdma resource show mr dev rrxem0 2>/dev/null | grep -c mrn) = 0 ]" ||
		{ echo "$(mr_count) MRs left after the process exited"; return 1; }
}
check "process exit without dereg frees every MR" leak_then_clean
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxem0 && ! test -e /sys/class/infiniband/rrxem0"

cleanup_net
ktap_finished
