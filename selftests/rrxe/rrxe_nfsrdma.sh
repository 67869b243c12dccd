#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# NFS over RDMA, on rdma_rxe and then on rrxe in one guest: nfsd in one
# network namespace listening on rdma port 20049, the NFS client in
# another, joined by a veth pair with an RDMA device on each end. For
# NFSv3 and NFSv4.2: the mount (proto=rdma), a 64 MiB file and 200 small
# files read back after a remount with equal sha256 sums, and nfsd
# restarted while a writer runs (a hard mount: the writer finishes and its
# files are intact); then everything is torn down and no RDMA object is
# left. rdma_rxe's results are notes; rrxe's are the tests, and rrxe must
# pass every case rdma_rxe passes.
#
# nfsd, rpc_pipefs, rpcbind, rpc.mountd and nfsdcld are per network
# namespace: they run (nsenter --net, in the guest's mount namespace) in
# the server's; the export and /var/lib/nfs are tmpfs mounts of the test.
#
# On the debug kernel (the hardening harness) only rrxe runs, NFSv4.2
# alone, with a 16 MiB file, 50 small ones and a writer of 4 MiB files:
# there the point is that no kernel report comes of it, and rdma_rxe's own
# reports would fail the harness. The writer's files are smaller there so
# that its fsync across the nfsd restart stays well within the guest's
# hung-task watchdog (60 s): with 16 MiB files it ended 54 to 81 s after
# nfsd was back.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

NS_S=rrxtnfss NS_C=rrxtnfsc
SRV_IP=10.81.0.1 CLI_IP=10.81.0.2 PORT=20049
DRIVERS="rxe rrxe" BIG_MIB=64 NSMALL=200 MID_MIB=16
VERSIONS="3 4.2"
[ "${RRXE_DEBUG:-0}" = 1 ] && DRIVERS=rrxe BIG_MIB=16 NSMALL=50 MID_MIB=4 VERSIONS=4.2
DRIVERS=${RRXE_NFS_DRIVERS:-$DRIVERS}
VERSIONS=${RRXE_NFS_VERSIONS:-$VERSIONS}
BIG_MIB=${RRXE_NFS_BIG_MIB:-$BIG_MIB}
NSMALL=${RRXE_NFS_NSMALL:-$NSMALL}
# rrxe against rdma_rxe's results: only when both run.
parity=0
[[ " $DRIVERS " == *" rxe "* && " $DRIVERS " == *" rrxe "* ]] && parity=1

# Cases per driver: the listener, four per NFS version, the teardown.
nvers=$(wc -w <<<"$VERSIONS")
per_drv=$((2 + 4 * nvers))
ktap_print_header
ktap_set_plan $((per_drv + parity))

S() { nsenter --net=/run/netns/$NS_S "$@"; }
C() { nsenter --net=/run/netns/$NS_C "$@"; }

base=$(mktemp -d /tmp/rrxe-nfs.XXXXXX)
lib=$base/lib exp=$base/export orig=$base/orig mnt=$base/mnt
pids=$base/pids

# Results of rdma_rxe's cases, by description: 0 passed, 1 failed.
declare -A rxe_res=()
lost=0

# run_case DESC CMD...: on rdma_rxe a note, on rrxe a KTAP test.
run_case() {
	local desc=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=1
	# A case's "note: " lines are printed whatever its verdict.
	grep '^note: ' <<<"$out" | sed "s/^note: /# $drv: /"
	if [ "$drv" = rxe ]; then
		rxe_res[$desc]=$rc
		if [ $rc = 0 ]; then
			echo "# rdma_rxe: ok: $desc"
		else
			echo "# rdma_rxe: FAILED (a note, not a test): $desc"
			printf '%s\n' "$out" | sed 's/^/#   /'
		fi
	else
		if [ $rc = 0 ]; then
			ktap_test_pass "rrxe: $desc"
		else
			ktap_test_fail "rrxe: $desc"
			printf '%s\n' "$out" | sed 's/^/# /'
			[ "${rxe_res[$desc]:-1}" = 0 ] && lost=$((lost + 1))
		fi
	fi
	return $rc
}

# bg NAME CMD...: a daemon in the server's namespace, in the foreground of
# a background job whose pid (nsenter's, which execs CMD) is kept to stop
# it by.
bg() {
	local name=$1
	shift
	nsenter --net=/run/netns/$NS_S "$@" >"$base/$name.log" 2>&1 </dev/null &
	echo "$name $!" >>"$pids"
}

# gone PID: no process PID, or only its zombie.
gone() { [ ! -e "/proc/$1" ] || grep -q ') Z ' "/proc/$1/stat"; }

# Stops the daemons bg started (they may be children of another subshell)
# and waits until they are gone.
stop_bg() {
	local name pid
	[ -f "$pids" ] || return 0
	while read -r name pid; do
		kill "$pid" 2>/dev/null || continue
		wait_for 10 gone "$pid" || echo "$name ($pid) did not stop"
	done <"$pids"
	: >"$pids"
}

# registered PROG: rpcbind in the server's namespace lists PROG.
registered() { S rpcinfo -p 127.0.0.1 | grep -qw "$1"; }

nfsd_start() {
	S rpc.nfsd -G 10 -L 10 --rdma="$PORT" 8 &&
		S grep -qx "rdma $PORT" /proc/fs/nfsd/portlist
}

# The server: nfsd's and rpc_pipefs' file systems of the server's
# namespace, rpcbind, the export, rpc.mountd, nfsdcld (NFSv4 client
# tracking, so that a restarted nfsd lets clients reclaim their state),
# nfsd on TCP and on rdma.
srv_start() {
	mkdir -p "$lib/rpc_pipefs" "$lib/nfsdcld" "$lib/v4recovery" "$lib/sm" &&
		: >"$lib/etab" && : >"$lib/rmtab" &&
		S mount -t nfsd nfsd /proc/fs/nfsd &&
		S mount -t rpc_pipefs rpc_pipefs "$lib/rpc_pipefs" || return 1
	bg rpcbind rpcbind -f -w
	wait_for 10 registered portmapper || { echo "rpcbind did not start"; cat "$base/rpcbind.log"; return 1; }
	S exportfs -i -o rw,sync,no_root_squash,insecure,no_subtree_check,fsid=0 "*:$exp" || return 1
	bg mountd rpc.mountd -F -p 20048
	bg nfsdcld nfsdcld -F -p "$lib/rpc_pipefs" -s "$lib/nfsdcld"
	wait_for 10 registered mountd ||
		{ echo "rpc.mountd did not register"; cat "$base/mountd.log"; return 1; }
	nfsd_start || { cat /proc/fs/nfsd/portlist; return 1; }
}

srv_stop() {
	S rpc.nfsd 0 2>/dev/null
	S exportfs -ua 2>/dev/null
	stop_bg
	umount "$lib/rpc_pipefs" 2>/dev/null
	umount /proc/fs/nfsd 2>/dev/null
	return 0
}

nfs_mount() {
	local v=$1 path=$exp opts
	opts="rdma,port=$PORT,vers=$v,hard"
	case $v in
	3) opts+=",nolock,mountproto=tcp" ;;
	4*) path=/ ;;
	esac
	C mount -t nfs -o "$opts" "$SRV_IP:$path" "$mnt"
}

nfs_umount() { umount "$mnt"; }

# The mount shows proto=rdma, the version and the port.
case_mount() {
	bounded 180 nfs_mount "$1" || { stuck "the mount"; return 1; }
	grep " $mnt nfs" /proc/mounts
	grep -q " $mnt nfs.* .*vers=$1,.*proto=rdma,port=$PORT," /proc/mounts ||
		{ echo "not an rdma mount"; return 1; }
}

# Copies the originals in, remounts (and drops the caches), and checks
# the sums through NFS and in the export.
case_data() {
	local d=$mnt/data
	rm -rf "$d" && mkdir "$d" || return 1
	bounded 180 cp -r "$orig/." "$d/" || { stuck "the copy in"; return 1; }
	bounded 120 sync || { stuck "sync"; return 1; }
	nfs_umount && echo 3 >/proc/sys/vm/drop_caches && nfs_mount "$1" || return 1
	bounded 180 bash -c "cd '$d' && sha256sum --quiet -c '$base/sums'" ||
		{ echo "sums differ through NFS"; stuck "the read back"; return 1; }
	(cd "$exp/data" && sha256sum --quiet -c "$base/sums") || { echo "sums differ in the export"; return 1; }
}

# A writer copies a MID_MIB MiB file 6 times (64 KiB blocks, fsync each) while
# nfsd stops and starts again.
case_restart() {
	local d=$mnt/restart w rc i t
	rm -rf "$d" && mkdir "$d" || return 1
	(for i in 1 2 3 4 5 6; do
		dd if="$orig/mid" of="$d/f$i" bs=64k conv=fsync status=none || exit 1
	done) &
	w=$!
	wait_for 60 test -s "$d/f2" || { echo "the writer did not start"; kill $w; return 1; }
	S rpc.nfsd 0 || { echo "rpc.nfsd 0 failed"; return 1; }
	echo "note: v$v: nfsd stopped with $(stat -c %s "$exp/restart/f2" 2>/dev/null) bytes of f2 written"
	sleep 2
	nfsd_start || { echo "nfsd did not restart"; return 1; }
	t=$SECONDS
	rc=0
	timeout_wait $w 240 || rc=$?
	[ $rc = 0 ] || { echo "the writer failed ($rc)"; return 1; }
	echo "note: v$v: the writer ended $((SECONDS - t)) s after nfsd was back"
	for i in 1 2 3 4 5 6; do
		cmp "$orig/mid" "$d/f$i" || return 1
	done
}

# bounded SECONDS CMD...: CMD, given up (left running: an NFS hard mount
# can hold it in D state) after SECONDS.
bounded() {
	local s=$1 t=$(($1 * 10)) pid
	shift
	# Not on our standard output: a command substitution reading it would
	# wait for a stuck CMD too.
	"$@" >"$base/bounded.out" 2>&1 </dev/null &
	pid=$!
	while kill -0 "$pid" 2>/dev/null && [ $t -gt 0 ]; do
		sleep 0.1
		t=$((t - 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		cat "$base/bounded.out"
		echo "given up after $s s: $*"
		return 124
	fi
	wait "$pid"
	t=$?
	cat "$base/bounded.out"
	return $t
}

# stuck WHAT: the transport's state when WHAT did not finish, and a mark
# that later cases of this driver must not touch the mount.
stuck() {
	echo "$1 did not finish; the QPs, counters and RPC transport:"
	rdma res show qp | grep rrxtnfs
	rdma statistic show link rrxtnfss/1
	rdma statistic show link rrxtnfsc/1
	grep -A12 'xprt:' /proc/self/mountstats | head -n 20
	dmesg | tail -n 15
	touch "$base/stuck"
}

# timeout_wait PID SECONDS: waits for the job PID, killing it after SECONDS.
timeout_wait() {
	local pid=$1 t=$(($2 * 10))
	while kill -0 "$pid" 2>/dev/null && [ $t -gt 0 ]; do
		sleep 0.1
		t=$((t - 1))
	done
	kill -0 "$pid" 2>/dev/null && { kill "$pid"; echo "timed out"; }
	wait "$pid"
}

# No connection, MR or non-kernel QP left on the test's devices (QP 0 and 1
# are the GSI/SMI QPs of the device itself).
no_rdma_objects() {
	local out
	out=$({ rdma res show cm_id; rdma res show qp; rdma res show mr; } 2>&1 | grep -E 'rrxtnfs' | grep -vE 'lqpn [01] ')
	[ -z "$out" ] && return 0
	echo "$out"
	return 1
}

teardown() {
	srv_stop
	wait_for 30 no_rdma_objects || return 1
	rdma link delete rrxtnfss 2>/dev/null
	rdma link delete rrxtnfsc 2>/dev/null
	ip netns del $NS_S 2>/dev/null
	ip netns del $NS_C 2>/dev/null
	wait_for 20 dev_gone rrxtnfss && wait_for 20 dev_gone rrxtnfsc || { rdma link show; return 1; }
	if [ "$drv" = rxe ]; then
		modprobe -r rdma_rxe
	else
		modprobe -r rrxe
	fi
}

setup_net() {
	local type=$drv
	[ "$drv" = rrxe ] && type=$RRXE_LINK_TYPE
	ip netns add $NS_S && ip netns add $NS_C &&
		ip link add rrxtnvs type veth peer name rrxtnvc &&
		ip link set rrxtnvs netns $NS_S && ip link set rrxtnvc netns $NS_C &&
		ip -n $NS_S addr add $SRV_IP/24 dev rrxtnvs &&
		ip -n $NS_C addr add $CLI_IP/24 dev rrxtnvc &&
		ip -n $NS_S link set lo up && ip -n $NS_C link set lo up &&
		ip -n $NS_S link set rrxtnvs up && ip -n $NS_C link set rrxtnvc up &&
		S rdma link add rrxtnfss type "$type" netdev rrxtnvs &&
		C rdma link add rrxtnfsc type "$type" netdev rrxtnvc &&
		wait_gid rrxtnfss "ffff:$SRV_IP" && wait_gid rrxtnfsc "ffff:$CLI_IP"
}

# The originals: a BIG_MIB MiB file, NSMALL files of 1 to 64 KiB, and the
# writer's MID_MIB MiB file.
make_originals() {
	local i
	mkdir -p "$orig/small" &&
		head -c $((BIG_MIB << 20)) /dev/urandom >"$orig/big" &&
		head -c $((MID_MIB << 20)) /dev/urandom >"$orig/mid" || return 1
	for ((i = 0; i < NSMALL; i++)); do
		head -c $(((RANDOM % 64 + 1) << 10)) /dev/urandom >"$orig/small/s$i" || return 1
	done
	(cd "$orig" && find . -type f -print0 | xargs -0 sha256sum) >"$base/sums"
}

cleanup() {
	umount "$mnt" 2>/dev/null
	srv_stop
	cleanup_net
	umount /var/lib/nfs 2>/dev/null
	umount "$base" 2>/dev/null
	rmdir "$base" 2>/dev/null
}
trap cleanup EXIT

cleanup_net
unload_rrxe
modprobe -r rdma_rxe 2>/dev/null
mount -t tmpfs -o size=1G,mode=0755 rrxtnfs "$base" &&
	mkdir -p "$lib" "$exp" "$orig" "$mnt" && mount --bind "$lib" /var/lib/nfs ||
	ktap_exit_fail_msg "tmpfs set-up failed"
make_originals || ktap_exit_fail_msg "could not write the originals"
for m in nfsd nfs nfsv3 nfsv4 rpcrdma; do
	modprobe $m || ktap_exit_fail_msg "modprobe $m failed"
done

for drv in $DRIVERS; do
	echo "# driver: $drv"
	if [ "$drv" = rxe ]; then
		modprobe rdma_rxe
	else
		load_rrxe
	fi || ktap_exit_fail_msg "loading $drv failed"
	: >"$pids"
	rm -rf "${exp:?}"/*
	setup_net || ktap_exit_fail_msg "$drv: network set-up failed"
	t0=$SECONDS
	run_case "nfsd in the server namespace listens on rdma $PORT" srv_start
	for v in $VERSIONS; do
		if [ -e "$base/stuck" ]; then
			echo "# $drv: NFS is stuck, v$v not tried"
		elif run_case "v$v: mount over rdma (proto=rdma)" case_mount "$v"; then
			run_case "v$v: ${BIG_MIB} MiB and $NSMALL small files, sha256 equal after a remount" case_data "$v"
			run_case "v$v: nfsd restarted under a writer, which finishes, files equal" case_restart
			run_case "v$v: unmount" nfs_umount
		else
			for c in "${BIG_MIB} MiB and $NSMALL small files, sha256 equal after a remount" \
				"nfsd restarted under a writer, which finishes, files equal" unmount; do
				run_case "v$v: $c" false
			done
		fi
	done
	if [ -e "$base/stuck" ]; then
		echo "# $drv: NFS is stuck: no teardown; giving up"
		umount -f -l "$mnt"
		trap - EXIT
		ktap_finished
	fi
	run_case "server stopped, devices and namespaces gone, no RDMA object left, module unloads" teardown
	echo "# $drv: $((SECONDS - t0)) s"
done

if [ $parity = 0 ]; then
	:
elif [ "$lost" = 0 ]; then
	ktap_test_pass "rrxe passes every case rdma_rxe passes"
else
	ktap_test_fail "rrxe passes every case rdma_rxe passes ($lost lost)"
fi
ktap_finished
