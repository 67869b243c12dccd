#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Shared receive queues through stock libibverbs/librxe: sizes and limits,
# query, the limit attribute, QPs on an SRQ, a resize that keeps posted
# WQEs (the new mmap info reaches librxe through the pointer in the modify
# command), and exit without destroying.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 4

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && link_add rrxes0 rrxtd0 || ktap_exit_fail_msg "setup failed"
bin=$(prog rrxe_srq_test) || ktap_exit_fail_msg "cannot build rrxe_srq_test"

t() { "$bin" rrxes0 "$@"; }
check "SRQ capacity 2^k - 1, bad sizes EINVAL, limit checks, QPs on an SRQ, EBUSY while used" t api
check "resize keeps 50 posted WQEs: exactly 205 more fit in 255; shrinking below them EINVAL" t resize
check "process exit without destroying 100 SRQs with posted WQEs" bash -c "'$bin' rrxes0 leak | grep -q 'left 100'"
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxes0 && ! test -e /sys/class/infiniband/rrxes0"

cleanup_net
ktap_finished
