#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The kernel's own rxe kselftests (tools/testing/selftests/rdma, from the
# Debian linux-source package), unmodified: first on the in-tree rdma_rxe,
# as the baseline, then on rrxe in drop-in mode, where
# tools/modprobe/rrxe-as-rdma_rxe.conf makes `modprobe rdma_rxe` load
# rrxe with link_type=rxe and `modprobe -r rdma_rxe` unload it. In drop-in
# mode each test must pass, rdma_rxe must never be loaded, and rrxe must
# have been loaded as link type rxe while the test ran.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

src=${KSRC:-$HOME/.cache/rrxe/src/linux-source-7.3}/tools/testing/selftests
conf=$(cd "$(dirname "$0")/../.." && pwd)/tools/modprobe/rrxe-as-rdma_rxe.conf
if [ ! -f "$src/rdma/Makefile" ]; then
	ktap_print_header
	ktap_skip_all "stock rxe kselftests not found under $src"
	exit "$KSFT_SKIP"
fi
read -r -a tests < <(sed -n '/^TEST_PROGS/,/^$/p' "$src/rdma/Makefile" | sed -e 's/TEST_PROGS :=//' -e 's/[\\]//g' | tr -s ' \t\n' ' ')
set -- "${tests[@]}"

ktap_print_header
ktap_set_plan $(( 2 * $# ))

# A private copy, laid out as the kselftest tree expects (rdma/ next to
# kselftest/ktap_helpers.sh).
work=$(mktemp -d)
mkdir -p "$work/rdma" "$work/kselftest"
cp "$src"/rdma/*.sh "$work/rdma/" && cp "$src/kselftest/ktap_helpers.sh" "$work/kselftest/" ||
	ktap_exit_fail_msg "cannot copy the stock tests"

cleanup_net
unload_rrxe
modprobe -r rdma_rxe 2>/dev/null

# run_stock T: the stock test T as kselftest runs it; its stderr (the
# scripts send stdout to /dev/null) goes to $work/T.log. The tests expect
# /dev/net/tun, but two of them unload tun when they finish (and with it
# the device node), while rxe_test_NETDEV_UNREGISTER.sh does not load it:
# each starts with tun loaded and the node present. Each gets 300 s, 1200 s
# on the debug kernel: there rxe_netns_names.sh alone takes minutes with
# either driver, as it waits on every device's queued unregistration and
# on namespace teardown.
limit=300
[ "${RRXE_DEBUG:-0}" = 1 ] && limit=1200
run_stock() {
	local t0 rc
	modprobe tun 2>/dev/null
	[ -e /dev/net/tun ] || { mkdir -p /dev/net && mknod /dev/net/tun c 10 200; }
	t0=$(date +%s)
	(cd "$work/rdma" && timeout $limit bash "./$1") >"$work/$1.log" 2>&1
	rc=$?
	# rxe_rping_between_netns.sh starts its rping client a fixed second
	# after the server: on a slow guest the server may not listen yet, and
	# the client is rejected (REJ reason 8, no listener) whatever the
	# driver. That is the script's race: run it once more.
	if [ $rc != 0 ] && grep -q "RDMA_CM_EVENT_REJECTED, error 8" "$work/$1.log"; then
		ktap_print_msg "$2: $1 lost its own listen race (REJ reason 8); once more"
		(cd "$work/rdma" && timeout $limit bash "./$1") >"$work/$1.log" 2>&1
		rc=$?
	fi
	ktap_print_msg "$2: $1 took $(($(date +%s) - t0)) s"
	return $rc
}

for t in "$@"; do
	run_stock "$t" rdma_rxe
	rc=$?
	if [ $rc = 0 ]; then
		ktap_test_pass "rdma_rxe: $t"
	elif [ $rc = "$KSFT_SKIP" ]; then
		ktap_test_skip "rdma_rxe: $t"
	else
		ktap_test_fail "rdma_rxe: $t (exit $rc)"
		sed 's/^/# /' "$work/$t.log" | tail -n 20
	fi
	modprobe -r rdma_rxe 2>/dev/null
done

# Drop-in mode: the modprobe.d file, on a private copy of /etc/modprobe.d.
grep -q '^rdma_rxe ' /proc/modules && ktap_exit_fail_msg "rdma_rxe is still loaded"
md=$(mktemp -d)
cp -a /etc/modprobe.d/. "$md/" 2>/dev/null
cp "$conf" "$md/"
mount --bind "$md" /etc/modprobe.d || ktap_exit_fail_msg "cannot install the modprobe.d file"

loads() { dmesg | grep -c 'rrxe: loaded, link type rxe'; }
for t in "$@"; do
	before=$(loads)
	run_stock "$t" "rrxe drop-in"
	rc=$?
	if grep -q '^rdma_rxe ' /proc/modules; then
		ktap_test_fail "rrxe drop-in: $t (rdma_rxe got loaded)"
		modprobe -r --ignore-remove rdma_rxe
	elif [ "$(loads)" -le "$before" ]; then
		ktap_test_fail "rrxe drop-in: $t (rrxe was not loaded as link type rxe)"
	elif [ $rc = 0 ]; then
		ktap_test_pass "rrxe drop-in: $t"
	else
		ktap_test_fail "rrxe drop-in: $t (exit $rc)"
		sed 's/^/# /' "$work/$t.log" | tail -n 20
	fi
	unload_rrxe
done

umount /etc/modprobe.d
rm -rf "$md" "$work"
cleanup_net
ktap_finished
