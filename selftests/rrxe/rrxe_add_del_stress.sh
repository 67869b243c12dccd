#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Many add/delete cycles, and netdevs removed under live devices, leave
# nothing behind. On the debug kernel the guest harness also runs kmemleak.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

# Every registration also brings up ib_core's MAD agents on QP1, which is
# slow on the debug kernel: fewer cycles there (its point is kmemleak).
CYCLES=${RRXE_STRESS_CYCLES:-100}
[ "${RRXE_DEBUG:-0}" = 1 ] && CYCLES=${RRXE_STRESS_CYCLES:-25}
ktap_print_header
ktap_set_plan 4

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 || ktap_exit_fail_msg "setup failed"

cycles() {
	local i
	for i in $(seq 1 "$CYCLES"); do
		rdma link add rrxes0 type "$RRXE_LINK_TYPE" netdev rrxtd0 || { echo "add $i failed"; return 1; }
		rdma link delete rrxes0 || { echo "delete $i failed"; return 1; }
	done
}
check "$CYCLES rdma link add/delete cycles" cycles

netdev_cycles() {
	local i
	for i in $(seq 1 20); do
		ip link add rrxtx0 type dummy && ip link set rrxtx0 up &&
			rdma link add rrxes1 type "$RRXE_LINK_TYPE" netdev rrxtx0 &&
			ip link del rrxtx0 || { echo "cycle $i failed"; return 1; }
		wait_for 10 dev_gone rrxes1 || { echo "device stayed after netdev $i"; return 1; }
	done
}
check "20 netdev create/add/unregister cycles" netdev_cycles
check "no device is left" bash -c "! ls /sys/class/infiniband/ | grep -q '^rrxes'"
check "module unloads afterwards (no leaked references)" \
	bash -c "[ \"\$(awk '\$1 == \"rrxe\" {print \$3}' /proc/modules)\" = 0 ] && modprobe -r rrxe"

cleanup_net
ktap_finished
