#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Unloading with devices present removes them cleanly; an open user context
# pins the module; unregistering a device with an open context completes.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 7

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && mk_dummy rrxtd1 && mk_dummy rrxtd2 || ktap_exit_fail_msg "setup failed"

check "three devices" bash -c "rdma link add rrxer0 type $RRXE_LINK_TYPE netdev rrxtd0 &&
	rdma link add rrxer1 type $RRXE_LINK_TYPE netdev rrxtd1 &&
	rdma link add rrxer2 type $RRXE_LINK_TYPE netdev rrxtd2"

# A process holding a user context and a PD on rrxer0.
fifo=$(mktemp -u); mkfifo "$fifo"
/usr/bin/python3 -c "
from pyverbs.device import Context
from pyverbs.pd import PD
import sys
ctx = Context(name='rrxer0'); pd = PD(ctx)
print('ready', flush=True)
sys.stdin.readline()
# The device is gone: closing may fail with an error, but must not hang.
for o in (pd, ctx):
    try:
        o.close()
    except Exception as e:
        print('close:', e, flush=True)
print('closed', flush=True)
" <"$fifo" >"$fifo.out" &
holder=$!
exec 7>"$fifo"
wait_for 20 grep -q ready "$fifo.out"

check "deleting a device with an open context completes (context disassociated)" \
	bash -c "timeout 30 rdma link delete rrxer0 && ! test -e /sys/class/infiniband/rrxer0"
exec 7>&-
holder_done() { ! kill -0 "$holder" 2>/dev/null && grep -q closed "$fifo.out"; }
check "the process holding it closes its objects and exits afterwards" wait_for 10 holder_done
wait "$holder" 2>/dev/null
rm -f "$fifo" "$fifo.out"

check "rmmod with devices present succeeds" modprobe -r rrxe
check "all devices are gone" bash -c "! ls /sys/class/infiniband/ | grep -q '^rrxer'"
check "reload and add again" bash -c "modprobe rrxe && rdma link add rrxer0 type $RRXE_LINK_TYPE netdev rrxtd0"
check "rmmod again" bash -c "modprobe -r rrxe && ! test -e /sys/class/infiniband/rrxer0"

cleanup_net
ktap_finished
