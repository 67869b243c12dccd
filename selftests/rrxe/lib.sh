# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the rrxe selftests. Sourced, not run.

# KTAP output comes from the kernel's own kselftest helpers.
ktap_dir=${KSELFTEST_DIR:-}
if [ -z "$ktap_dir" ]; then
	for d in "$(dirname "${BASH_SOURCE[0]}")/../kselftest" \
		"${KSRC:-}/tools/testing/selftests/kselftest" \
		"$HOME/.cache/rrxe/src/linux-source-7.3/tools/testing/selftests/kselftest"; do
		[ -f "$d/ktap_helpers.sh" ] && { ktap_dir=$d; break; }
	done
fi
# shellcheck source=/dev/null
. "$ktap_dir/ktap_helpers.sh" || { echo "Bail out! ktap_helpers.sh not found"; exit 4; }

RRXE_LINK_TYPE=${RRXE_LINK_TYPE:-rrxe}

# Runs a check; prints the KTAP line. Output of failing checks is shown as
# diagnostics.
check() {
	local desc=$1; shift
	local out
	if out=$("$@" 2>&1); then
		ktap_test_pass "$desc"
	else
		ktap_test_fail "$desc"
		printf '%s\n' "$out" | sed 's/^/# /'
	fi
}

# Waits up to $1 seconds for a command to succeed.
wait_for() {
	local t=$(( $1 * 10 )); shift
	while [ $t -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		t=$((t - 1))
	done
	"$@"
}

load_rrxe() {
	lsmod | grep -q '^rrxe ' || modprobe rrxe "$@"
}

unload_rrxe() {
	if lsmod | grep -q '^rrxe '; then
		modprobe -r rrxe
	fi
}

# link_add NAME NETDEV
link_add() { rdma link add "$1" type "$RRXE_LINK_TYPE" netdev "$2"; }
link_del() { rdma link delete "$1"; }

dev_exists() { [ -e "/sys/class/infiniband/$1" ]; }
dev_gone() { [ ! -e "/sys/class/infiniband/$1" ]; }

# The value of a field in `ibv_devinfo -v -d DEV` output, e.g. "state".
devinfo_field() {
	ibv_devinfo -v -d "$1" | awk -v f="$2" '
		{ sub(/^[ \t]+/, "") }
		index($0, f ":") == 1 { sub(/^[^:]*:[ \t]*/, ""); print; exit }'
}

# Removes every rrxe test netdev and namespace this suite creates.
cleanup_net() {
	local n
	for n in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep '^rrxt' || true); do
		ip link del "$n" 2>/dev/null || true
	done
	for n in $(ip netns list | awk '{print $1}' | grep '^rrxt' || true); do
		ip netns del "$n" 2>/dev/null || true
	done
}

# A dummy netdev that is up.
mk_dummy() {
	ip link add "$1" type dummy && ip link set "$1" up
}
