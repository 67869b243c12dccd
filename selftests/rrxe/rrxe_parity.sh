#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Stock-suite parity: tools/parity runs rdma-core's whole pyverbs suite on
# rdma_rxe and then on rrxe, each with one device on the guest's virtio-net
# NIC, and prints both results per case. rrxe must pass every case
# rdma_rxe passes, and the rdma_cm cases (test_rdmacm), which need the
# device's sysfs parent, must run and pass on rrxe. On the debug kernel a
# subset runs (see below).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 3

root=$(cd "$(dirname "$0")/../.." && pwd)
# The logs stay where the harness can see them ($RRXE_OUT is shared with
# the host under tools/guest).
if [ -n "${RRXE_OUT:-}" ]; then out=$RRXE_OUT/parity; mkdir -p "$out"; else out=$(mktemp -d); fi
cleanup_net
unload_rrxe
# The whole suite on the test kernel; on the debug kernel, where it runs
# about four times slower, the modules whose results differ between the
# drivers or that need the NIC (on-demand paging, rdma_cm, CQs).
subset=()
[ "${RRXE_DEBUG:-0}" = 1 ] && subset=(test_odp test_rdmacm test_cq)
RRXE_OUT=$out RRXE_LINK_TYPE=$RRXE_LINK_TYPE "$root/tools/parity" "${subset[@]}" >"$out/parity.txt" 2>&1
rc=$?
sed 's/^/# /' "$out/parity.txt" | grep -vE '^# +test.* ok +ok$|^# +test.* skip +skip$'
lost=$(sed -n 's/^cases rdma_rxe passes that rrxe does not: \([0-9]*\)$/\1/p' "$out/parity.txt")
cm=$(sed -n 's/^test_rdmacm on rrxe .*: \([0-9]*\) ok, \([0-9]*\) failed$/\1 \2/p' "$out/parity.txt")
rxe_ok=$(sed -n 's/^rdma_rxe: \([0-9]*\) ok.*/\1/p' "$out/parity.txt")

if [ -n "$rxe_ok" ] && [ "$rxe_ok" -gt 0 ]; then
	ktap_test_pass "the suite ran on rdma_rxe ($rxe_ok cases passed)"
else
	ktap_test_fail "the suite ran on rdma_rxe"
fi
if [ "$lost" = 0 ]; then
	ktap_test_pass "rrxe passes every case rdma_rxe passes"
else
	ktap_test_fail "rrxe passes every case rdma_rxe passes (${lost:-?} lost)"
fi
read -r cm_ok cm_bad <<<"${cm:-0 1}"
if [ "$cm_ok" -gt 0 ] && [ "$cm_bad" = 0 ]; then
	ktap_test_pass "test_rdmacm runs on rrxe over the NIC: $cm_ok cases pass, none fail"
else
	ktap_test_fail "test_rdmacm runs on rrxe over the NIC ($cm_ok pass, $cm_bad fail; parity exit $rc)"
fi
echo "# logs: $out"
ktap_finished
