#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma-core's stock pyverbs tests, unmodified, one KTAP line per stock case:
# test_device, test_pd, test_mr (MRs, and memory windows of both types with
# RC traffic through them), test_cq, test_cq_events, test_cqex, test_qp,
# test_qpex (the extended post API on RC, UC and UD, with atomics, ATOMIC
# WRITE, memory-window binds and SEND with invalidate), test_atomic and
# test_addr. Skips are reported as skips: device memory is off (dm_size=0:
# stock librxe has no DM verbs, and this suite's DM tests skip only when
# max_dm_size is 0), raw packet QPs do not exist on RoCE.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

ktap_print_header

cleanup_net
unload_rrxe
load_rrxe dm_size=0 || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && ip addr add 10.78.0.1/24 dev rrxtd0 && link_add rrxepv0 rrxtd0 ||
	ktap_exit_fail_msg "setup failed"
wait_for 10 bash -c "ibv_devinfo -v -d rrxepv0 | grep -q 'GID\[  1\]'" || ktap_exit_fail_msg "GIDs did not appear"

out=$("$root/tools/pyverbs-suite" rrxepv0 test_device test_pd test_mr test_cq test_cq_events \
	test_cqex test_qp test_qpex test_atomic test_addr 2>&1)
rc=$?
# unittest -v prints "name (module.Class.name)" then "doc ... result"; the
# result may share the first line when there is no docstring.
results=$(printf '%s\n' "$out" | awk '
	/^test[a-zA-Z0-9_]* \(tests\./ { name = $2; gsub(/[()]/, "", name); sub(/^tests\./, "", name) }
	/ \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$/ {
		r = $0; sub(/.* \.\.\. /, "", r); print name "\t" r }')
n=$(printf '%s\n' "$results" | grep -c . || true)
[ "$n" -gt 0 ] || { printf '%s\n' "$out" | sed 's/^/# /'; ktap_exit_fail_msg "no stock test ran"; }
while IFS=$'\t' read -r name r; do
	case "$r" in
	ok) ktap_test_pass "$name" ;;
	skipped*) ktap_test_skip "$name (${r#skipped })" ;;
	*) ktap_test_fail "$name ($r)" ;;
	esac
done <<<"$results"
ktap_set_plan "$n"
if [ $rc -ne 0 ] && [ "$KTAP_CNT_FAIL" -eq 0 ]; then
	printf '%s\n' "$out" | tail -n 30 | sed 's/^/# /'
	ktap_test_fail "pyverbs suite exited $rc"
	KSFT_NUM_TESTS=$((KSFT_NUM_TESTS + 1))
fi

link_del rrxepv0
cleanup_net
ktap_finished
