#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# UC and UD traffic between QPs of one device through stock libibverbs and
# librxe, data compared byte for byte: UC WRITE (with immediate) over many
# MTUs, the remote-access checks on every rejected WRITE (target unchanged,
# no receive completion, the next message fine), UC SEND scatter and the
# too-long SEND, UC and UD receives from an SRQ and its limit event.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 5

dummy_dev rrxet0 10.79.0.1
bin=$(prog rrxe_traffic_test) || ktap_exit_fail_msg "cannot build rrxe_traffic_test"

t() { "$bin" rrxet0 "$@"; }
check "UC WRITE with immediate over 10 MTUs, a plain 70000-byte WRITE, a zero-length WRITE without a key" t uc_write
check "UC WRITEs with a foreign PD's rkey, a wrong key, past the MR, near u64 wrap, without remote write: dropped, nothing changed" t uc_reject
check "UC SEND with immediate over three SGEs; a too-long SEND dropped and its WQE kept" t uc_send
check "UC and UD receives from an SRQ; the limit event fires below the limit and disarms" t srq
check "the device deletes cleanly afterwards" \
	bash -c "rdma link delete rrxet0 && ! test -e /sys/class/infiniband/rrxet0"

cleanup_net
ktap_finished
