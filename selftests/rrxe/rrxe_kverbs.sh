#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Kernel verbs, as a kernel ULP uses them, through the test module
# kmod/rrxe_kverbs_test.ko (built with rrxe by tools/build-module): PD DMA
# MRs (get_dma_mr), kernel CQs, ib_alloc_mr and ib_map_mr_sg, and kernel
# UD traffic (kernel QPs and a kernel SRQ, a non-sleepable AH, DMA-mapped
# buffers), kernel RC traffic, RC QPs reset and reconnected. One KTAP line
# per check the module logs; the module's load fails if any check does.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
modinfo rrxe_kverbs_test >/dev/null 2>&1 || ktap_exit_fail_msg "rrxe_kverbs_test.ko is not installed (tools/guest installs it)"
mk_dummy rrxtd0 && link_add rrxek0 rrxtd0 || ktap_exit_fail_msg "setup failed"
# The traffic check addresses the link-local GID (index 0).
wait_gid rrxek0 fe80 || ktap_exit_fail_msg "no link-local GID"

mark="rrxe_kverbs_test mark $$ $RANDOM"
echo "$mark" >/dev/kmsg
modprobe rrxe_kverbs_test netdev=rrxtd0; rc=$?
log=$(dmesg | sed -n "/$mark/,\$p" | grep -o 'rrxe_kverbs_test: .*')
n=0
while IFS= read -r line; do
	case "$line" in
	"rrxe_kverbs_test: ok "*) ktap_test_pass "${line#rrxe_kverbs_test: ok }"; n=$((n + 1)) ;;
	"rrxe_kverbs_test: FAIL "*) ktap_test_fail "${line#rrxe_kverbs_test: FAIL }"; n=$((n + 1)) ;;
	esac
done <<<"$log"
if [ $rc -eq 0 ] && printf '%s\n' "$log" | grep -q 'all passed'; then
	ktap_test_pass "the test module loaded: every check passed"
else
	printf '%s\n' "$log" | sed 's/^/# /'
	ktap_test_fail "the test module failed to load (exit $rc)"
fi
n=$((n + 1))
modprobe -r rrxe_kverbs_test 2>/dev/null
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxek0 && ! test -e /sys/class/infiniband/rrxek0"
ktap_set_plan $((n + 1))
cleanup_net
ktap_finished
