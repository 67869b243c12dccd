#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Device memory through the uverbs DM methods (stock librxe has none):
# 1 MiB by default, off with dm_size 0, the dm_size parameter, alloc with
# alignment, mmap and a byte pattern, zero-based DM MRs, oversized and
# wrapping registrations, exhaustion, free, and process exit without
# freeing. rrxe_dm_verbs.sh does the same through libibverbs.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
param=/sys/module/rrxe/parameters/dm_size
size=65536

ktap_print_header
ktap_set_plan 10

cleanup_net
# Freshly loaded: an earlier test may have loaded it with another dm_size.
unload_rrxe
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
mk_dummy rrxtd0 && mk_dummy rrxtd1 || ktap_exit_fail_msg "setup failed"
bin=$(prog rrxe_dm_test) || ktap_exit_fail_msg "cannot build rrxe_dm_test"

default=$(cat $param)
by_default() {
	[ "$default" = 1048576 ] || { echo "dm_size is $default by default"; return 1; }
	link_add rrxed0 rrxtd0 || return 1
	"$bin" rrxed0 basic "$default"; local r=$?
	link_del rrxed0; return $r
}
check "dm_size is 1 MiB by default, and a new device has that much" by_default

off() {
	echo 0 >$param
	link_add rrxed0 rrxtd0 || return 1
	"$bin" rrxed0 off; local r=$?
	link_del rrxed0; return $r
}
check "with dm_size 0: max_dm_size 0, DM_ALLOC fails EOPNOTSUPP" off

# A bad value is refused when written (EINVAL), and the value stays.
bad_size() {
	local v out before
	before=$(cat $param)
	for v in 4097 $((2 << 30)) -4096 1M; do
		if out=$({ echo "$v" >$param; } 2>&1); then
			echo "writing $v to dm_size succeeded"; echo "$before" >$param; return 1
		fi
		grep -q "Invalid argument" <<<"$out" || { echo "writing $v: $out"; return 1; }
		[ "$(cat $param)" = "$before" ] || { echo "dm_size is $(cat $param) after writing $v"; return 1; }
	done
}
check "a dm_size that is not whole pages up to 1 GiB is refused when written (EINVAL)" bad_size

echo $size >$param && link_add rrxed0 rrxtd0 || ktap_exit_fail_msg "link add with dm_size $size failed"
echo 0 >$param
# The size is the device's from creation on: a later parameter change only
# affects new devices.
link_add rrxed1 rrxtd1 || ktap_exit_fail_msg "link add failed"
check "a device created with dm_size 0 has no DM while another has" "$bin" rrxed1 off
check "alloc with alignment, mmap, pattern, zero-based DM MRs, oversized/wrapping MRs fail, free" \
	"$bin" rrxed0 basic $size
check "bad lengths and alignments fail EINVAL; exhaustion ENOMEM at dm_size; reuse after free" \
	"$bin" rrxed0 limits $size

leak() {
	"$bin" rrxed0 leak $size | grep -q 'left a DM' || { echo "child did not allocate"; return 1; }
	wait_for 10 bash -c "[ \$(rdma resource show mr dev rrxed0 2>/dev/null | grep -c mrn) = 0 ]" ||
		{ echo "MRs left after the process exited"; return 1; }
}
check "process exit without freeing releases the DM MR" leak
check "and the device memory: all of dm_size can be allocated again" "$bin" rrxed0 limits $size
check "devices with device memory delete cleanly" \
	bash -c "rdma link delete rrxed0 && rdma link delete rrxed1 && ! test -e /sys/class/infiniband/rrxed0"
echo "$default" >$param
check "dm_size is back to its default" bash -c "[ \$(cat $param) = $default ]"

cleanup_net
ktap_finished
