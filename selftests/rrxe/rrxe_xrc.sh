#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# XRC objects through the uverbs commands (stock librxe has no XRC verbs):
# XRC domains, alone and shared by two processes through a file, with
# uverbs' O_CREAT and O_EXCL rules, freed when their last holder exits; an
# XRC target QP refused (EOPNOTSUPP); XRC SRQs, each with its number,
# holding their domain open. Then no kernel report, and the device
# deletes with nothing left.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 4

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && link_add rrxex0 rrxtd0 || ktap_exit_fail_msg "setup failed"
bin=$(prog rrxe_xrc_test) || ktap_exit_fail_msg "cannot build rrxe_xrc_test"
mark=$(kmsg_mark)

check "XRC domains: without a file; shared through one (EAGAIN without O_CREAT, EINVAL with O_EXCL), alive while a second process holds it, gone once it exits; an XRC target QP EOPNOTSUPP" \
	"$bin" rrxex0 xrcd
check "XRC SRQs: two in a domain on a CQ, distinct numbers below 2^24 (rxe's response agrees); the domain EBUSY while they live, closed after" \
	"$bin" rrxex0 xsrq
check "no kernel report" no_kernel_report "$mark"
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxex0 && ! test -e /sys/class/infiniband/rrxex0"

cleanup_net
ktap_finished
