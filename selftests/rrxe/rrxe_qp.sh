#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Queue pairs through stock libibverbs/librxe: capacities as rxe reports
# them and bad requests, the state machine and attribute checks of
# modify_qp for RC, UC and UD, query, many QPs, exit without destroy, and
# address handles, the ERR flush, and multicast groups.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 10

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && link_add rrxeq0 rrxtd0 || ktap_exit_fail_msg "setup failed"
bin=$(prog rrxe_qp_test) || ktap_exit_fail_msg "cannot build rrxe_qp_test"

t() { "$bin" rrxeq0 "$@"; }
check "capacities rounded as rxe's rings; bad capacities EINVAL; unsupported types fail" t caps
check "RC, UC, UD: invalid transitions and out-of-range values EINVAL; RESET..RTS, ERR, RESET; query" t states
check "modify without IBV_QP_STATE is checked as RTS -> RTS: path_mtu, dest_qp_num, sq_psn EINVAL and unchanged; min_rnr_timer (RC), access flags (UC), Q_Key (UD) taken" \
	t nostate
check "moving to ERR completes 10 posted receives with WR_FLUSH_ERR, in order, on the receive CQ" t flush
check "multicast: attach/detach, EINVAL for RC and when not attached, 56 QPs per group and 8192 groups (ENOMEM beyond), a datagram to a full group reaches each of its 56 members intact, EBUSY on destroying an attached QP" t mcast
check "1000 QPs at once, distinct numbers" t many 1000
check "AHs need a GRH on RoCE; ah_num (1..32767, distinct) in the create response, none for old providers" t ah

leak_then_clean() {
	t leak 600 | grep -q 'created 600' || { echo "child did not create its QPs"; return 1; }
	wait_for 10 no_user_objects rrxeq0 || { echo "objects left after the process exited"; return 1; }
}
check "process exit without destroy frees every QP (50 of them attached to a multicast group)" leak_then_clean
# big_in_memcg NAME MAX: one RC QP of 65536 send and receive WRs with the
# most gather entries, by a process in a fresh memory cgroup NAME of limit
# MAX; prints the program's verdict and the cgroup's OOM kills. Each case
# has its own cgroup: memory the last one freed may still be charged.
big_in_memcg() {
	local cg=/sys/fs/cgroup/$1 out rc kills
	mkdir "$cg" && echo "$2" >"$cg/memory.max" || { echo "no memory cgroup $cg"; return 1; }
	out=$(bash -c "echo \$\$ >$cg/cgroup.procs && exec $bin rrxeq0 big 65536")
	rc=$?
	kills=$(sed -n 's/^oom_kill //p' "$cg/memory.events")
	rmdir "$cg"
	echo "$out (exit $rc, $kills OOM kills)"
}
# Past the limit the rings' allocation fails (ENOMEM). The process may
# also meet the cgroup's own OOM killer (charged memory is the cgroup's;
# the host is not touched); either way the QP is not created.
memcg_charged() {
	local a b
	[ -e /sys/fs/cgroup/cgroup.controllers ] || mount -t cgroup2 none /sys/fs/cgroup || return 1
	echo +memory >/sys/fs/cgroup/cgroup.subtree_control
	a=$(big_in_memcg "rrxe_qp_max.$$" max)
	b=$(big_in_memcg "rrxe_qp_24m.$$" 24M)
	echo "# without a limit: $a; in 24 MiB: $b"
	[ "$a" = "created (exit 0, 0 OOM kills)" ] || { echo "without a limit: $a"; return 1; }
	case $b in
	"ENOMEM (exit 3, 0 OOM kills)") ;;
	" (exit 137, "[1-9]*" OOM kills)") dmesg | grep -E "oom|Killed process" | tail -n 5 ;;
	*) echo "in a 24 MiB memory cgroup: $b, want ENOMEM"; return 1 ;;
	esac
}
check "a QP's rings are charged to the memory cgroup: a 65536-WR RC QP is created without a limit, not in a 24 MiB cgroup (ENOMEM)" \
	memcg_charged
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxeq0 && ! test -e /sys/class/infiniband/rrxeq0"

cleanup_net
ktap_finished
