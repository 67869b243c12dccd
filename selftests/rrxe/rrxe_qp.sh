#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Queue pairs through stock libibverbs/librxe: capacities as rxe reports
# them and bad requests, the state machine and attribute checks of
# modify_qp for RC, UC and UD, query, many QPs, exit without destroy, and
# address handles, the ERR flush, and multicast groups.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
dir=$(cd "$(dirname "$0")" && pwd)

ktap_print_header
ktap_set_plan 8

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && link_add rrxeq0 rrxtd0 || ktap_exit_fail_msg "setup failed"
bin=$(mktemp -d)/rrxe_qp_test
cc -Wall -O2 -o "$bin" "$dir/rrxe_qp_test.c" -libverbs || ktap_exit_fail_msg "cannot build rrxe_qp_test"

t() { "$bin" rrxeq0 "$@"; }
check "capacities rounded as rxe's rings; bad capacities EINVAL; unsupported types fail" t caps
check "RC, UC, UD: invalid transitions and out-of-range values EINVAL; RESET..RTS, ERR, RESET; query" t states
check "moving to ERR completes 10 posted receives with WR_FLUSH_ERR, in order, on the receive CQ" t flush
check "multicast: attach/detach, EINVAL for RC and when not attached, 56 QPs per group and 8192 groups (ENOMEM beyond), EBUSY on destroying an attached QP" t mcast
check "1000 QPs at once, distinct numbers" t many 1000
check "AHs need a GRH on RoCE; ah_num (1..32767, distinct) in the create response, none for old providers" t ah

leak_then_clean() {
	t leak 600 | grep -q 'created 600' || { echo "child did not create its QPs"; return 1; }
	wait_for 10 bash -c "[ \$(rdma resource show qp dev rrxeq0 2>/dev/null | grep -c 'lqpn') = 0 ]" ||
		{ echo "QPs left after the process exited"; rdma resource show qp dev rrxeq0 | head; return 1; }
}
check "process exit without destroy frees every QP (50 of them attached to a multicast group)" leak_then_clean
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxeq0 && ! test -e /sys/class/infiniband/rrxeq0"

rm -rf "$(dirname "$bin")"
cleanup_net
ktap_finished
