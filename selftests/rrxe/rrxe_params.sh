#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Module parameters: a custom link_type works, a bad one is refused; a
# bad dm_size is refused at load.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 5

cleanup_net
unload_rrxe
mk_dummy rrxtd0 || ktap_exit_fail_msg "setup failed"

check "link_type=rrxe_alt registers that link type" \
	bash -c "modprobe rrxe link_type=rrxe_alt &&
		grep -qx rrxe_alt /sys/module/rrxe/parameters/link_type &&
		rdma link add rrxeq0 type rrxe_alt netdev rrxtd0 &&
		test -e /sys/class/infiniband/rrxeq0"
check "the default type is not registered then" \
	bash -c "! rdma link add rrxeq1 type rrxe netdev rrxtd0 2>/dev/null && ! test -e /sys/class/infiniband/rrxeq1"
check "unload with the custom type" \
	bash -c "modprobe -r rrxe && ! test -e /sys/class/infiniband/rrxeq0"
check "a link_type with bad characters is refused with EINVAL" \
	bash -c "out=\$(modprobe rrxe 'link_type=a/b' 2>&1); [ \$? -ne 0 ] && grep -q 'Invalid argument' <<<\"\$out\" &&
		! lsmod | grep -q '^rrxe '"
check "a dm_size that is not whole pages up to 1 GiB is refused at load with EINVAL" \
	bash -c "for v in 4097 2147483648; do out=\$(modprobe rrxe dm_size=\$v 2>&1); [ \$? -ne 0 ] &&
		grep -q 'Invalid argument' <<<\"\$out\" && ! lsmod | grep -q '^rrxe ' || exit 1; done"

cleanup_net
ktap_finished
