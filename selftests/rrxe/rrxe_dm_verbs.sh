#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Device memory from a user program, through libibverbs: the project's
# rdma-core 59 userspace (tools/rdma-user-env; its rxe provider carries
# the patch series in tools/rdma-core/) on an rrxe device with the default
# dm_size.
# pyverbs allocates 8 KiB of DM, copies to and from it, registers zero-based
# DM MRs and has an RC peer WRITE, READ and do atomics on them (see
# rrxe_dm_verbs.py); bad input gets its errno; freeing a DM that an MR uses
# fails EBUSY and leaves it mapped (rrxe_dm_verbs_busy.c); a freed DM MR's
# rkey is refused; a process exiting with DM mapped and registered leaves
# nothing behind; a context imported from a duplicated command fd imports
# the DM by handle. Without the environment, stock rdma-core 44 is in use
# and ibv_alloc_dm fails EOPNOTSUPP.
#
# The rdma-core 59 build comes from tools/setup-host (tools/build-rdma-core);
# without it this test fails.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
dir=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$dir/../.." && pwd)
param=/sys/module/rrxe/parameters/dm_size
dev=rrxdv0

ktap_print_header
ktap_set_plan 12

# shellcheck source=tools/rdma-user-env
. "$root/tools/rdma-user-env" ||
	ktap_exit_fail_msg "no rdma-core 59 build (tools/setup-host builds it with tools/build-rdma-core)"

cleanup_net
unload_rrxe
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && ip addr add 10.78.0.1/24 dev rrxtd0 && link_add $dev rrxtd0 ||
	ktap_exit_fail_msg "setup failed"
wait_gid $dev "ffff:10.78.0.1" || ktap_exit_fail_msg "no IPv4 GID on $dev"
gi=$(gid_index $dev "ffff:10.78.0.1")
work=$(mktemp -d)
busy=$work/rrxe_dm_verbs_busy
cc -Wall -O2 -I"$RRXE_RDMA_CORE/include" -o "$busy" "$dir/rrxe_dm_verbs_busy.c" \
	-L"$RRXE_RDMA_CORE/lib" -libverbs || ktap_exit_fail_msg "cannot build rrxe_dm_verbs_busy"
py() { /usr/bin/python3 "$dir/rrxe_dm_verbs.py" $dev "$gi" "$@"; }

default() {
	[ "$(cat $param)" = 1048576 ] || { echo "dm_size is $(cat $param)"; return 1; }
	# pyverbs and the libibverbs it runs on are the build's, not Debian's.
	/usr/bin/python3 -c 'import pyverbs.device as d, sys; print(d.__file__)' |
		grep -q "^$RRXE_RDMA_CORE/python/" || { echo "pyverbs is not the build's"; return 1; }
	ldd "$busy" | grep -q "libibverbs.so.1 => $RRXE_RDMA_CORE/lib/" ||
		{ echo "libibverbs is not the build's:"; ldd "$busy"; return 1; }
}
check "dm_size is 1 MiB by default; pyverbs and libibverbs are rdma-core 59's" default
check "8 KiB of DM: ibv_memcpy_to_dm/from_dm whole and in parts, byte for byte" py copy
check "RC peer WRITE, READ, fetch-and-add, compare-and-swap on zero-based DM MRs, byte for byte" py rc
example() {
	cc -Wall -O2 -o "$work/dm-example" "$root/Documentation/examples/dm-example.c" \
		-I"$RRXE_RDMA_CORE/include" -L"$RRXE_RDMA_CORE/lib" -libverbs || return 1
	"$work/dm-example" $dev
}
check "the admin guide's C example (Documentation/examples/dm-example.c) builds and runs" example
check "ibv_import_dm from a duplicated context: the same memory, bounded, stale handles refused" py import
check "ibv_free_dm of a DM with DM MRs fails EBUSY and leaves it mapped and usable" "$busy" $dev
check "a freed DM MR's rkey: the peer's WRITE and READ get remote access errors" py stale

exit_mapped() {
	py exit || return 1
	wait_for 10 bash -c "[ \$(rdma resource show mr dev $dev 2>/dev/null | grep -c mrn) = 0 ]" ||
		{ echo "MRs left after the process exited:"; rdma resource show mr dev $dev; return 1; }
}
check "a process exiting with DM mapped and registered leaves no MR" exit_mapped
check "unaligned copies EINVAL, past the end EFAULT, oversized EINVAL, exhaustion ENOMEM, bad DM MRs" \
	py bad

stock() {
	env -u LD_LIBRARY_PATH -u PYTHONPATH -u RDMAV_DRIVERS /usr/bin/python3 - $dev <<'EOF'
import errno, sys
import pyverbs.device as d
from pyverbs.pyverbs_error import PyverbsRDMAError
if not d.__file__.startswith('/usr/lib/python3/'):
    sys.exit(f'pyverbs from {d.__file__}')
ctx = d.Context(name=sys.argv[1])
try:
    d.DM(ctx, d.AllocDmAttr(length=4096))
except PyverbsRDMAError as ex:
    sys.exit(0 if ex.error_code == errno.EOPNOTSUPP else f'errno {ex.error_code}')
sys.exit('ibv_alloc_dm succeeded with stock rdma-core')
EOF
}
check "without the environment, stock rdma-core 44: ibv_alloc_dm fails EOPNOTSUPP" stock

# A different dm_size reaches the device and the provider.
link_del $dev
echo 65536 >$param
link_add $dev rrxtd0 || ktap_exit_fail_msg "link add failed"
wait_gid $dev "ffff:10.78.0.1" || ktap_exit_fail_msg "no IPv4 GID on $dev"
echo 1048576 >$param
check "a device created with dm_size 64 KiB: max_dm_size and exhaustion follow it" py bad
check "the device deletes cleanly" bash -c "rdma link delete $dev && ! test -e /sys/class/infiniband/$dev"

rm -rf "$work"
cleanup_net
ktap_finished
