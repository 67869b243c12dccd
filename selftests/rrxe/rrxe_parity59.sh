#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Stock-suite parity with rdma-core 59: tools/parity --rdma-core 59 runs
# rdma-core 59's whole pyverbs suite (from the tools/build-rdma-core build,
# in tools/rdma-user-env) on rdma_rxe and then on rrxe with its default
# device memory. rrxe must pass every case rdma_rxe passes, every device
# memory case (test_device DMTest and SharedDMTest, test_mr
# DeviceMemoryAPITest and DeviceMemoryTest) must pass on rrxe, none
# skipped, the rdma_cm cases must run and pass on rrxe, and every XRC case
# (librxe's XRC verbs, from the series: test_atomic, test_cqex, test_odp,
# test_qpex, test_relaxed_ordering) must pass on rrxe, none skipped. On
# the debug kernel the modules with the DM and rdma_cm cases run, and the
# XRC cases.
#
# rdma_rxe does not run test_rdmacm here: its destroy_qp times out there
# and WARNs (see tools/parity). test_odp is reported on its own: rdma-core
# 59's ODP cases drop the buffers' pages (madvise MADV_DONTNEED) between
# messages and prefetch with ibv_advise_mr, which needs true on-demand
# paging (rrxe's ODP MRs pin nothing: each access reaches the process's
# pages of the moment, see selftests/rrxe/rrxe_odp.sh). rrxe must pass
# every test_odp case rdma_rxe passes: any lost one fails the check.
#
# The rdma-core 59 build comes from tools/setup-host; without it this test
# fails.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -n "${RRXE_OUT:-}" ]; then out=$RRXE_OUT/parity59; mkdir -p "$out"; else out=$(mktemp -d); fi
"$root/tools/build-rdma-core" --check >/dev/null ||
	ktap_exit_fail_msg "no rdma-core 59 build (tools/setup-host builds it with tools/build-rdma-core)"
cleanup_net
unload_rrxe
subset=()
xrc_cases=(test_atomic.AtomicTest.test_xrc_atomic_fetch_and_add
	test_atomic.AtomicTest.test_xrc_atomic_cmp_and_swap
	test_cqex.CqExTestCase.test_xrc_traffic_cq_ex
	test_odp.OdpTestCase.test_odp_xrc_traffic
	test_qpex.QpExTestCase.test_qp_ex_xrc_send
	test_qpex.QpExTestCase.test_qp_ex_xrc_send_imm
	test_relaxed_ordering.RoTestCase.test_ro_xrc_traffic)
[ "${RRXE_DEBUG:-0}" = 1 ] && subset=(test_device test_mr test_rdmacm "${xrc_cases[@]}")
RRXE_OUT=$out RRXE_LINK_TYPE=$RRXE_LINK_TYPE "$root/tools/parity" --rdma-core 59 "${subset[@]}" \
	>"$out/parity59.txt" 2>&1
rc=$?
sed 's/^/# /' "$out/parity59.txt" | grep -vE '^# +test.* ok +ok$|^# +test.* skip +skip$'
lost=$(sed -n 's/^cases rdma_rxe passes that rrxe does not: \([0-9]*\)$/\1/p' "$out/parity59.txt")
odp_lost=$(sed -n 's/^of which test_odp: \([0-9]*\)$/\1/p' "$out/parity59.txt")
cm=$(sed -n 's/^test_rdmacm on rrxe .*: \([0-9]*\) ok, \([0-9]*\) failed$/\1 \2/p' "$out/parity59.txt")
dm=$(sed -n 's/^DM cases on rrxe: \([0-9]*\) ok, \([0-9]*\) not ok$/\1 \2/p' "$out/parity59.txt")
xrc=$(sed -n 's/^XRC cases on rrxe: \([0-9]*\) ok, \([0-9]*\) not ok$/\1 \2/p' "$out/parity59.txt")
rxe_ok=$(sed -n 's/^rdma_rxe: \([0-9]*\) ok.*/\1/p' "$out/parity59.txt")

if [ -n "$rxe_ok" ] && [ "$rxe_ok" -gt 0 ]; then
	ktap_test_pass "rdma-core 59's suite ran on rdma_rxe ($rxe_ok cases passed)"
else
	ktap_test_fail "rdma-core 59's suite ran on rdma_rxe"
fi
if [ -n "$lost" ] && [ -n "$odp_lost" ] && [ "$((lost - odp_lost))" = 0 ]; then
	ktap_test_pass "rrxe passes every case rdma_rxe passes, test_odp aside"
else
	ktap_test_fail "rrxe passes every case rdma_rxe passes, test_odp aside (${lost:-?} lost, ${odp_lost:-?} of them test_odp)"
fi
if [ "${odp_lost:-x}" = 0 ]; then
	ktap_test_pass "test_odp: rrxe passes every case rdma_rxe passes"
else
	ktap_test_fail "test_odp: rrxe passes every case rdma_rxe passes (${odp_lost:-no result} lost)"
fi
read -r dm_ok dm_bad <<<"${dm:-0 1}"
if [ "$dm_ok" -gt 0 ] && [ "$dm_bad" = 0 ]; then
	ktap_test_pass "every device memory case passes on rrxe, none skipped ($dm_ok)"
else
	ktap_test_fail "every device memory case passes on rrxe ($dm_ok pass, $dm_bad fail or skip)"
fi
read -r cm_ok cm_bad <<<"${cm:-0 1}"
if [ "$cm_ok" -gt 0 ] && [ "$cm_bad" = 0 ]; then
	ktap_test_pass "test_rdmacm runs on rrxe over the NIC: $cm_ok cases pass, none fail"
else
	ktap_test_fail "test_rdmacm runs on rrxe over the NIC ($cm_ok pass, $cm_bad fail; parity exit $rc)"
fi
read -r xrc_ok xrc_bad <<<"${xrc:-0 1}"
if [ "$xrc_ok" = "${#xrc_cases[@]}" ] && [ "$xrc_bad" = 0 ]; then
	ktap_test_pass "every XRC case passes on rrxe, none skipped ($xrc_ok)"
else
	ktap_test_fail "every XRC case passes on rrxe, none skipped ($xrc_ok of ${#xrc_cases[@]} pass, $xrc_bad fail or skip)"
fi
echo "# logs: $out"
ktap_finished
