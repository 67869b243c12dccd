#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Devices on netdevs inside network namespaces: created from inside the
# namespace, and removed when the namespace (and with it the netdev) goes.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 5

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
ip netns add rrxtns1 && ip link add rrxtva type veth peer name rrxtvb netns rrxtns1 &&
	ip link set rrxtva up && ip -n rrxtns1 link set rrxtvb up ||
	ktap_exit_fail_msg "netns setup failed"

check "add from inside a namespace" \
	ip netns exec rrxtns1 rdma link add rrxen1 type "$RRXE_LINK_TYPE" netdev rrxtvb
check "the namespace's device is ACTIVE on its netdev" \
	bash -c "ip netns exec rrxtns1 rdma link show rrxen1/1 | grep -q 'state ACTIVE.*netdev rrxtvb'"
check "add on the init-namespace end too" link_add rrxen0 rrxtva
check "deleting the namespace removes its device (netdev unregister)" \
	bash -c "ip netns del rrxtns1 && $(declare -f wait_for dev_gone); wait_for 10 dev_gone rrxen1 && wait_for 10 dev_gone rrxen0"
check "no device is left" bash -c "! rdma link show | grep -q 'rrxen'"

cleanup_net
ktap_finished
