#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A hostile process: random and adversarial WQEs written straight into the
# mapped send and receive rings of UD QPs, indices and geometry scribbled,
# the doorbell rung, clean datagrams delivered into poisoned receive rings.
# The kernel must not report anything (the guest harness fails the run on
# any WARN, BUG, KASAN or lockdep report), and clean UD traffic must work
# afterwards. A thread that keeps moving the producer index of a mapped
# send ring must not hold a doorbell in the kernel.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
dir=$(cd "$(dirname "$0")" && pwd)

ktap_print_header
ktap_set_plan 4

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && ip addr add 10.79.0.1/24 dev rrxtd0 && link_add rrxeh0 rrxtd0 ||
	ktap_exit_fail_msg "setup failed"
wait_for 10 bash -c "ibv_devinfo -v -d rrxeh0 | grep -q 'GID\\[  1\\]'" || ktap_exit_fail_msg "GIDs did not appear"
bin=$(mktemp -d)/rrxe_hostile_test
cc -Wall -O2 -o "$bin" "$dir/rrxe_hostile_test.c" -libverbs -lpthread || ktap_exit_fail_msg "cannot build rrxe_hostile_test"

rounds=300
[ "${RRXE_DEBUG:-0}" = 1 ] && rounds=100
check "$rounds rounds of hostile rings and doorbells, then clean UD traffic works" "$bin" rrxeh0 $rounds
check "a doorbell returns while another thread keeps the send ring full (6 s), then clean UD traffic works" \
	timeout 60 "$bin" rrxeh0 race
check "the hostile process left nothing behind" \
	bash -c "[ \$(rdma resource show qp dev rrxeh0 | grep -c lqpn) = 0 ]"
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxeh0 && ! test -e /sys/class/infiniband/rrxeh0"

rm -rf "$(dirname "$bin")"
cleanup_net
ktap_finished
