# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Shared helpers for the rrxe selftests. Sourced, not run.

lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

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
# diagnostics; of a passing check, the lines it printed starting "# " (what
# it measured, or what it had to retry).
check() {
	local desc=$1; shift
	local out t=$SECONDS
	if out=$("$@" 2>&1); then
		ktap_test_pass "$desc"
		printf '%s\n' "$out" | grep '^# '
	else
		ktap_test_fail "$desc"
		printf '%s\n' "$out" | sed 's/^/# /'
	fi
	# The long checks say how long they took (the CI budget is spent there).
	t=$((SECONDS - t))
	[ "$t" -lt 10 ] || echo "# the check above took $t s"
}

# prog NAME: the path of the selftests' C program NAME (the Makefile's
# PROGS, from NAME.c). tools/guest builds them on the host before the boot
# into $RRXE_PROGS: cc takes 6 to 15 s a program in the test guest and 11
# to 29 s on the debug kernel, under a second on the host. A program whose
# sources changed since (or without $RRXE_PROGS) is built here, into a
# temporary directory.
prog() {
	local mk=(make -s -C "$lib_dir") d
	if [ -n "${RRXE_PROGS:-}" ] && "${mk[@]}" -q BIN="$RRXE_PROGS" "$RRXE_PROGS/$1" 2>/dev/null; then
		echo "$RRXE_PROGS/$1"
		return 0
	fi
	d=$(mktemp -d) && "${mk[@]}" BIN="$d" "$d/$1" >&2 && echo "$d/$1"
}

# nap SECONDS: waits as `sleep` does, without starting a process: a read
# that times out on a pipe nobody writes to. A poll loop's `sleep` costs a
# fork and an exec each pass, which under QEMU's TCG take milliseconds of
# the guest's CPU: in a pair bench's server guest, polling for the other
# guest 10 times a second (pair_wait) took a quarter of its only vCPU from
# the run it waited for. Falls back to `sleep` if the pipe cannot be had.
_rrxe_nap_fd=
nap() {
	local _x
	if [ -z "$_rrxe_nap_fd" ]; then
		# In a group: `exec` with only redirections keeps them all, and a
		# bare 2>/dev/null on it would silence the shell's stderr for good.
		{ exec {_rrxe_nap_fd}<> <(:); } 2>/dev/null || _rrxe_nap_fd=
	fi
	if [ -z "$_rrxe_nap_fd" ]; then
		sleep "$1"
		return 0
	fi
	read -r -t "$1" -u "$_rrxe_nap_fd" _x || true
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

# load_rrxe [PARAM=VALUE...]: rrxe loaded (with those module parameters, if
# it was not loaded yet).
# shellcheck disable=SC2120
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

# dummy_dev DEV ADDR: a test's start on one device: no test netdev left,
# rrxe loaded, device DEV on a dummy netdev rrxtd0 with ADDR/24, its IPv4
# GID up. Bails out of the test on failure.
dummy_dev() {
	cleanup_net
	load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
	mk_dummy rrxtd0 && ip addr add "$2/24" dev rrxtd0 && link_add "$1" rrxtd0 ||
		ktap_exit_fail_msg "setup failed"
	wait_gid "$1" "ffff:$2" || ktap_exit_fail_msg "no IPv4 GID"
}

# Two namespaces joined by a veth pair, each end up with an address:
# mk_veth_pair NS_A NS_B (ends rrxtva in NS_A with 10.78.0.1 and fd78::1,
# rrxtvb in NS_B with 10.78.0.2 and fd78::2).
mk_veth_pair() {
	local a=$1 b=$2
	ip netns add "$a" && ip netns add "$b" &&
	ip link add rrxtva type veth peer name rrxtvb &&
	ip link set rrxtva netns "$a" && ip link set rrxtvb netns "$b" &&
	ip -n "$a" addr add 10.78.0.1/24 dev rrxtva &&
	ip -n "$b" addr add 10.78.0.2/24 dev rrxtvb &&
	ip -n "$a" addr add fd78::1/64 dev rrxtva nodad &&
	ip -n "$b" addr add fd78::2/64 dev rrxtvb nodad &&
	ip -n "$a" link set lo up && ip -n "$b" link set lo up &&
	ip -n "$a" link set rrxtva up && ip -n "$b" link set rrxtvb up
}

# Waits until DEV lists a GID containing TEXT (e.g. ffff:10.78.0.1).
wait_gid() {
	local dev=$1 text=$2
	# shellcheck disable=SC2317
	_has_gid() { ibv_devinfo -v -d "$dev" | grep -q "GID\[.*$text"; }
	wait_for 10 _has_gid
}

# The GID index of DEV whose GID contains TEXT.
gid_index() {
	ibv_devinfo -v -d "$1" | sed -n "s/.*GID\[ *\([0-9]*\)\]:.*$2.*/\1/p" | head -n1
}

# pp_listening PID [NS]: waits (up to 20 s) until the ibv_*_pingpong server
# PID listens on TCP port 18515, the tools' default, in namespace NS (this
# one when none): it does once its QPs exist, which a slow guest may take
# seconds to make. Returns at once if PID has exited.
pp_listening() {
	local pid=$1 pre=() i
	[ -n "${2:-}" ] && pre=(ip netns exec "$2")
	for ((i = 0; i < 200; i++)); do
		"${pre[@]}" ss -Htln "sport = :18515" 2>/dev/null | grep -q . && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# pingpong_ns TOOL NS_SRV DEV_SRV NS_CLI DEV_CLI SRV_IP GID_TEXT ARGS...: a
# stock ibv_*_pingpong with its server in one namespace and its client in
# another, each on its own device, using the GID that contains GID_TEXT
# on each side (the same index on both, as the tools take one -g).
pingpong_ns() {
	local tool=$1 ns_s=$2 dev_s=$3 ns_c=$4 dev_c=$5 ip=$6 g=$7; shift 7
	local log=/tmp/rrxe_pp.$$ gi
	gi=$(gid_index "$dev_s" "$g")
	[ -n "$gi" ] || { echo "no GID like $g on $dev_s"; return 1; }
	ip netns exec "$ns_s" "$tool" -d "$dev_s" -g "$gi" -c "$@" >$log 2>&1 &
	local srv=$!
	pp_listening $srv "$ns_s"
	timeout "${PP_TIMEOUT:-60}" ip netns exec "$ns_c" "$tool" -d "$dev_c" -g "$gi" -c "$@" "$ip" || {
		kill $srv 2>/dev/null; cat $log; rm -f $log; return 1; }
	wait $srv || { cat $log; rm -f $log; return 1; }
	rm -f $log
}

# xsrq_ns NS_S DEV_S NS_C DEV_C IP G PORT CLIENTS ITERS: rdma-core 59's
# ibv_xsrq_pingpong (XRC, through the rxe provider of the tools/rdma-core/
# series, in tools/rdma-user-env): a server on DEV_S in namespace NS_S
# (address IP, TCP port PORT) and CLIENTS client processes on DEV_C in
# NS_C, ITERS round trips each, every one at most PP_TIMEOUT seconds (60),
# through the GID like G. Prints the logs of what failed.
xsrq_ns() {
	local ns_s=$1 dev_s=$2 ns_c=$3 dev_c=$4 ip=$5 g=$6 port=$7 n=$8 iters=$9
	local log=/tmp/rrxe_xsrq.$$ gi srv clients=() rc=0 i
	(
		# Not followed: its functions would be taken for those of every
		# script that sources this file.
		# shellcheck source=/dev/null
		. "$(dirname "${BASH_SOURCE[0]}")/../../tools/rdma-user-env" ||
			{ echo "no rdma-core 59 build (tools/setup-host)"; exit 1; }
		gi=$(gid_index "$dev_s" "$g")
		[ -n "$gi" ] || { echo "no GID like $g on $dev_s"; exit 1; }
		timeout "${PP_TIMEOUT:-60}" ip netns exec "$ns_s" ibv_xsrq_pingpong -d "$dev_s" \
			-g "$gi" -p "$port" -c "$n" -n "$iters" >"$log.s" 2>&1 </dev/null &
		srv=$!
		# Until it listens, or exits.
		wait_for 30 eval "listening tcp:$port $ns_s || ! kill -0 $srv 2>/dev/null"
		if ! listening "tcp:$port" "$ns_s"; then
			wait "$srv"
			echo "the server did not listen:"
			tail -n 5 "$log.s"
			rm -f "$log".*
			exit 1
		fi
		for i in $(seq "$n"); do
			timeout "${PP_TIMEOUT:-60}" ip netns exec "$ns_c" ibv_xsrq_pingpong -d "$dev_c" \
				-g "$gi" -p "$port" -n "$iters" "$ip" >"$log.$i" 2>&1 </dev/null &
			clients+=($!)
		done
		for i in "${!clients[@]}"; do
			wait "${clients[$i]}" || { rc=1; echo "client $((i + 1)):"; tail -n 5 "$log.$((i + 1))"; }
		done
		wait "$srv" || { rc=1; echo "server:"; tail -n 5 "$log.s"; }
		[ $rc = 0 ] && echo "# the server saw $(grep -c remote: "$log.s") clients: $(tail -n 1 "$log.s")"
		rm -f "$log".*
		exit $rc
	)
}

# Server/client pairs. A test sets PAIR_DIR to a fresh directory (with an
# empty "pids" file) before using them.

# stop_servers: stops the servers `pair` started that still run (each under
# `timeout`, by its own pid).
stop_servers() {
	local p
	while read -r p; do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = timeout ] && kill "$p" 2>/dev/null
	done <"$PAIR_DIR/pids"
	return 0
}

# listening HOW NS: a server listens: tcp:PORT or udp:PORT (a socket in namespace NS,
# "" for this one), cm:PORT (an rdma_cm ID listening on PORT, any device) or
# maddr:GROUP (a netdev in NS joined multicast GROUP). rdma_listen marks an
# ID LISTEN and asks the IB CM to listen within the one call, so a client
# started once cm:PORT holds, which must still resolve its address and
# route before its REQ leaves, finds the listener. A perftest -R server
# listens on PORT twice: cm:PORT sees the first (see perftest_rejected).
listening() {
	local pre=()
	[ -n "$2" ] && pre=(ip netns exec "$2")
	case $1 in
	tcp:*) "${pre[@]}" ss -Htln "sport = :${1#tcp:}" 2>/dev/null | grep -q . ;;
	udp:*) "${pre[@]}" ss -Huln "sport = :${1#udp:}" 2>/dev/null | grep -q . ;;
	cm:*) rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*src-addr [^ ]*:${1#cm:} " ;;
	maddr:*) "${pre[@]}" ip maddr show 2>/dev/null | grep -qw "${1#maddr:}" ;;
	*) return 1 ;;
	esac
}

# pair_diag: what a failed pair leaves to look at: the QPs (state, PSNs)
# and the kernel's last messages.
pair_diag() {
	echo "QPs:"
	rdma res show qp 2>/dev/null | tail -n 20
	echo "kernel log:"
	dmesg | tail -n 20
}

# pair's server (pair's locals: ps, server, how, ns_s): started in the
# background as $pid, waited for until it listens (at most 20 s).
pair_start_server() {
	local i
	"${ps[@]}" timeout 120 "${server[@]}" >"$PAIR_DIR/server" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >>"$PAIR_DIR/pids"
	for ((i = 0; i < 200; i++)); do
		listening "$how" "$ns_s" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
}

# pair HOW SRV_NS CLI_NS SERVER... -- CLIENT...: starts SERVER in SRV_NS
# (at most 120 s), waits up to 20 s for it to listen (HOW as in listening;
# after that the client tries anyway), runs CLIENT in CLI_NS (at most 100 s).
# Both must exit 0. Their output stays in $PAIR_DIR/server and $PAIR_DIR/client,
# written line by line, so that what one printed before it was killed
# (at its timeout) is there too. A perftest client -R rejected for no
# listener yet is run again (see perftest_rejected).
pair() {
	local how=$1 ns_s=$2 ns_c=$3; shift 3
	local server=() ps=() pc=() pid rc i
	while [ "$1" != -- ]; do server+=("$1"); shift; done
	shift
	ps=(stdbuf -oL -eL) pc=(stdbuf -oL -eL)
	[ -n "$ns_s" ] && ps=(ip netns exec "$ns_s" "${ps[@]}")
	[ -n "$ns_c" ] && pc=(ip netns exec "$ns_c" "${pc[@]}")
	pair_start_server
	rc=0
	"${pc[@]}" timeout 100 "$@" >"$PAIR_DIR/client" 2>&1 </dev/null || rc=$?
	for ((i = 2; i <= 5; i++)); do
		perftest_rejected "$rc" || break
		echo "# $1 -R lost perftest's own listen race (REJ reason 8: its server listens for the test's QPs only after the hand-shake); the client $(exit_text "$rc"), the server $(kill -0 "$pid" 2>/dev/null && echo "still ran" || echo "had ended"); try $i of 5, with a new server"
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		pair_start_server
		rc=0
		"${pc[@]}" timeout 100 "$@" >"$PAIR_DIR/client" 2>&1 </dev/null || rc=$?
	done
	if [ "$rc" -ne 0 ]; then
		echo "client failed ($(exit_text "$rc")): $*"
		tail -n 40 "$PAIR_DIR/client"
		pair_diag
		kill "$pid" 2>/dev/null
		wait "$pid"
		echo "server: ${server[*]}"
		tail -n 40 "$PAIR_DIR/server"
		return 1
	fi
	wait "$pid"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "server exited $rc: ${server[*]}"
		tail -n 40 "$PAIR_DIR/server"
		return 1
	fi
}

# exit_text STATUS: "exited N", or "was killed by SIGNAME" for 128 + a
# signal's number (as the shell and `timeout` report it); 124 is
# `timeout`'s own.
exit_text() {
	if [ "$1" -eq 124 ]; then
		echo "timed out"
	elif [ "$1" -gt 128 ] && [ "$1" -lt 160 ]; then
		echo "was killed by SIG$(kill -l $(($1 - 128)))"
	else
		echo "exited $1"
	fi
}

# perftest_rejected STATUS: pair's client (exit STATUS) is a perftest -R
# client that lost perftest's own race. The tool connects twice through
# rdma_cm on its port: a control connection, then, after a hand-shake
# over it, the test's QPs. Its server destroys the first listener once
# connected and calls rdma_listen for the QPs only after the hand-shake,
# while its client connects right after it; a server slower there has no
# IB CM listen for the service ID yet, and ib_cm rejects the REQ with
# reason 8 (invalid service ID), whatever the provider (rrxe_cm_reject.sh
# makes it on rdma_rxe and on rrxe). perftest 4.5-0.17 (Debian 12) then
# retries by itself with the rdma_cm IDs it has just freed
# (rdma_cm_client_connection after rdma_cm_destroy_cma) and faults in
# librdmacm (fixed upstream in perftest 3d9d8d0, "Fix crashes and
# logical flaws in RDMA CM connection retry"); its server is left
# waiting, or on a dead client's connection: hence a new server each
# time. The message is rdma_cm_event_error_handler's; rping's and the
# other librdmacm tools' differ, and are not retried.
perftest_rejected() {
	[ "$1" -ne 0 ] && grep -q "RDMA_CM_EVENT_REJECTED; error: 8\." "$PAIR_DIR/client"
}

# unlossed_end NSA NSB COUNT CMD...: runs CMD, a verbose rping client of
# COUNT (at least 4) 60000-byte pings (`rping -c -C COUNT -S 60000 -V -v`),
# its standard output through a pipe, and takes the netem qdiscs off
# rrxtva (in NSA) and rrxtvb (in NSB) once it has read COUNT - 3 validated
# pings' lines; CMD's exit status is returned. rping's server loops until
# the client's DREQ arrives, and the client destroys its cm_id right after
# rdma_disconnect, which cancels the DREQ's retransmissions: with 3% loss a
# run in 33 or so lost its one DREQ and left the server waiting for ever,
# every ping validated, with rdma_rxe as with rrxe. Nothing reads the pipe
# while the qdiscs go, and each line is 60000 bytes: the client can print
# a pipe's worth (64 KiB) and awk can hold about as much, but it can print
# neither its last line nor disconnect, which comes after it, before the
# loss is gone. A client that stops short leaves the loss on.
unlossed_end() {
	local a=$1 b=$2 n=$3
	shift 3
	"$@" | awk -v k=$((n - 3)) \
		-v unloss="ip netns exec $a tc qdisc del dev rrxtva root; ip netns exec $b tc qdisc del dev rrxtvb root" \
		'{ print; fflush() } /^ping data: / && ++c == k { system(unloss) }'
	return "${PIPESTATUS[0]}"
}


# no_user_objects DEV: no QP, CQ, MR, PD, SRQ or user context of any
# process is left on DEV (rdma res lists a process's objects with its pid;
# the kernel's own, ib_core's, have none). A failing query fails too.
no_user_objects() {
	local out
	out=$({ rdma res show qp link "$1" && rdma res show cq dev "$1" && rdma res show mr dev "$1" &&
		rdma res show pd dev "$1" && rdma res show srq dev "$1" && rdma res show ctx dev "$1"; } 2>&1) &&
		! printf '%s\n' "$out" | grep -q ' pid ' && return 0
	echo "left on $1:"
	printf '%s\n' "$out"
	return 1
}

# The kernel log's newest timestamp now (seconds since boot), for
# kmsg_since and no_kernel_report. Not a count of lines: once the ring
# buffer wraps (it keeps the newest lines), a count points past the end
# and a test would see none of its own lines.
kmsg_mark() {
	dmesg | awk 'match($0, /^\[ *[0-9]+\.[0-9]+\]/) { t = substr($0, RSTART + 1, RLENGTH - 2) + 0 }
		END { printf "%.6f\n", t }'
}

# kmsg_since MARK: the kernel log's lines logged after MARK (kmsg_mark's);
# a line without a timestamp goes with the line before it.
kmsg_since() {
	dmesg | awk -v m="$1" 'match($0, /^\[ *[0-9]+\.[0-9]+\]/) { t = substr($0, RSTART + 1, RLENGTH - 2) + 0 }
		t > m + 0'
}

# no_kernel_report MARK: fails, printing them, if the kernel logged a WARN,
# BUG, oops, KASAN, lockdep or hung-task report after MARK (from kmsg_mark).
# The same patterns as tools/guest-init's scan of the whole run, and the
# same exception: the reports tools/kreport-filter knows (another
# subsystem's, shown without rrxe) are left out, with a line saying so.
no_kernel_report() {
	local re='WARNING:|BUG:|Oops|KASAN|UBSAN|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|lockdep|suspicious RCU usage|INFO: task .* blocked|kernel BUG|list_add corruption|list_del corruption|refcount_t:|Kernel panic'
	local hits known filter=$lib_dir/../../tools/kreport-filter
	known=$(mktemp)
	if [ -x "$filter" ]; then
		hits=$(kmsg_since "$1" | "$filter" "$known" | grep -E "$re")
	else
		hits=$(kmsg_since "$1" | grep -E "$re")
	fi
	sed -n 's/^known report: \(.*\)/known kernel report left out: \1 (see the admin guide, "Known issues"; lockdep is off after it)/p' "$known"
	rm -f "$known"
	[ -z "$hits" ] && return 0
	echo "kernel reports:"
	printf '%s\n' "$hits" | head -n 20
	return 1
}

# --- two guests (tools/guest --pair) -------------------------------------
# Each guest has $RRXE_PAIR (a or b), the MAC of its NIC on the link
# between them ($RRXE_PAIR_MAC) and a directory both see ($RRXE_PAIR_DIR).

# The name of this guest's netdev on the link to the other guest.
pair_netdev() {
	local f
	for f in /sys/class/net/*/address; do
		if [ "$(cat "$f")" = "${RRXE_PAIR_MAC:?not in a guest pair}" ]; then
			f=${f%/address}
			echo "${f##*/}"
			return 0
		fi
	done
	return 1
}

# The other guest's name.
pair_peer() { [ "${RRXE_PAIR:?}" = a ] && echo b || echo a; }

# pair_signal NAME [TEXT]: tells the other guest that NAME happened here
# (with TEXT, which pair_wait prints there).
pair_signal() {
	printf '%s\n' "${2:-}" >"$RRXE_PAIR_DIR/$RRXE_PAIR.$1.tmp" &&
		mv "$RRXE_PAIR_DIR/$RRXE_PAIR.$1.tmp" "$RRXE_PAIR_DIR/$RRXE_PAIR.$1"
}

# pair_wait NAME SECONDS: waits for the other guest's pair_signal NAME and
# prints its TEXT; fails after SECONDS.
pair_wait() {
	local f t=$(($2 * 10))
	f=$RRXE_PAIR_DIR/$(pair_peer).$1
	while [ ! -f "$f" ]; do
		[ $t -gt 0 ] || return 1
		nap 0.1
		t=$((t - 1))
	done
	cat "$f"
}
