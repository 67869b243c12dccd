#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The port follows the netdev: link down/up changes the port state and
# raises IBV_EVENT_PORT_ERR / IBV_EVENT_PORT_ACTIVE.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && link_add rrxep0 rrxtd0 || ktap_exit_fail_msg "setup failed"

events=$(mktemp)
stdbuf -oL ibv_asyncwatch -d rrxep0 >"$events" 2>&1 &
watch_pid=$!
# Events queue on the context's async FD from the moment it exists, which
# ibv_asyncwatch announces.
wait_for 30 grep -q 'async event FD' "$events" || ktap_exit_fail_msg "ibv_asyncwatch did not start"

ip link set rrxtd0 down
check "link down: port state DOWN, physical state DISABLED" \
	bash -c "$(declare -f devinfo_field); [ \"\$(devinfo_field rrxep0 state)\" = 'PORT_DOWN (1)' ] &&
		[ \"\$(devinfo_field rrxep0 phys_state)\" = 'DISABLED (3)' ]"
check "link down: rdma link shows DOWN" \
	bash -c "rdma link show rrxep0/1 | grep -q 'state DOWN'"
check "link down raised IBV_EVENT_PORT_ERR" \
	bash -c "$(declare -f wait_for); wait_for 5 grep -q 'IBV_EVENT_PORT_ERR' $events"

ip link set rrxtd0 up
check "link up: port state ACTIVE, physical state LINK_UP" \
	bash -c "$(declare -f devinfo_field wait_for); wait_for 5 bash -c '[ \"\$(ibv_devinfo -d rrxep0 | grep -c PORT_ACTIVE)\" = 1 ]' &&
		[ \"\$(devinfo_field rrxep0 phys_state)\" = 'LINK_UP (5)' ]"
check "link up raised IBV_EVENT_PORT_ACTIVE" \
	bash -c "$(declare -f wait_for); wait_for 5 grep -q 'IBV_EVENT_PORT_ACTIVE' $events"
kill "$watch_pid" 2>/dev/null; wait "$watch_pid" 2>/dev/null

check "delete" bash -c "rdma link delete rrxep0 && ! test -e /sys/class/infiniband/rrxep0"
rm -f "$events"
cleanup_net
ktap_finished
