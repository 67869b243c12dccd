#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# An NVMe-oF connect command that reaches the target before the target's
# rdma_cm has seen the RTU, on rdma_rxe. The order is legal on every
# transport: the passive side's QP is in RTS from rdma_accept on, before
# its REP leaves, and the active side sends as soon as its RTU has left.
# nvmet-rdma keeps such a command (its queue is not live yet) and runs it
# from its rdma_cm handler at ESTABLISHED, holding rdma_cm's handler_mutex,
# and a connect command takes nvmet_config_sem: removing a port's last
# subsystem link takes the two the other way round (nvmet_config_sem, then
# rdma_destroy_id), and lockdep reports a possible circular locking
# dependency. This test makes rdma_rxe take that order every time:
#
# two rdma_rxe devices in init_net, each on a tap device (10.81.0.1/24 and
# 10.81.0.2/24, the same subnet so that rdma_cm's route checks pass both
# ways, with accept_local and no rp_filter), joined by rrxe_rtu_wire.py, a
# wire that drops the first RTU of each connection. The target (a file
# namespace on a tmpfs) listens on the second device's address; the host
# connects from the first's (--host-traddr, one I/O queue). The target's
# REP times out and is sent again, and the RTU that answers it passes: by
# then the connect command has waited in nvmet's queue.
#
#   1. the host connects (an admin queue and one I/O queue); 64 KiB
#      written and read back match;
#   2. the wire dropped the first RTU of both connections, and at least
#      one RC SEND (the connect command) passed before the RTU that got
#      through;
#   3. nvmet ran both connect commands from its rdma_cm handler: the stack
#      of each (the nvmet_req_init tracepoint's, debug kernel) has
#      nvmet_rdma_handle_command called from nvmet_rdma_cm_handler;
#   4. unlinking the subsystem from the port makes lockdep report the
#      circular dependency, and tools/kreport-filter knows the report
#      (nvmet-connect-in-cm-handler), so that the harness can leave that
#      one out and fail on any other;
#   5. the target, the host, the devices and rdma_rxe all go;
#   6. the kernel logged no report but that one.
#
# 3 needs tracing and 4 lockdep (the debug kernel): without them they are
# skipped. Lockdep turns itself off at its first report; when an earlier
# report of this boot turned it off, 4 is skipped too. The test ends with
# lockdep off, so the harness runs it last. Logs go to $RRXE_OUT/nvmeof_rtu.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

A=10.81.0.1
B=10.81.0.2
TAPA=rrxtwa
TAPB=rrxtwb
DEVA=rrxtxa
DEVB=rrxtxb
PORT=4420
NQN=nqn.2026-11.org.rrxe:rrxt-rtu
CFS=/sys/kernel/config/nvmet
TR=/sys/kernel/tracing
uuid=$(cat /proc/sys/kernel/random/uuid)
root=$(cd "$(dirname "$0")/../.." && pwd)

if [ -n "${RRXE_OUT:-}" ]; then logdir=$RRXE_OUT/nvmeof_rtu; mkdir -p "$logdir"; else logdir=$(mktemp -d); fi
rm -f "$logdir"/*
mnt=$(mktemp -d)

mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config ||
	ktap_exit_fail_msg "cannot mount configfs"
[ -d $TR/events ] || mount -t tracefs none $TR 2>/dev/null
lockdep=$(awk '/debug_locks:/ { print $2 }' /proc/lockdep_stats 2>/dev/null)

teardown() {
	local rc=0 l
	[ $tracing = 1 ] && {
		echo 0 >$TR/events/nvmet/nvmet_req_init/enable
		echo '!stacktrace' >$TR/events/nvmet/nvmet_req_init/trigger
		echo 0 >$TR/events/nvmet/nvmet_req_init/filter
	} 2>/dev/null
	timeout 60 nvme disconnect -n $NQN >/dev/null 2>&1
	for l in "$CFS"/ports/1/subsystems/*; do [ -L "$l" ] && { rm "$l" || rc=1; }; done
	[ -d $CFS/ports/1 ] && { rmdir $CFS/ports/1 || rc=1; }
	if [ -d $CFS/subsystems/$NQN ]; then
		echo 0 >$CFS/subsystems/$NQN/namespaces/1/enable
		rmdir $CFS/subsystems/$NQN/namespaces/1 $CFS/subsystems/$NQN || rc=1
	fi
	mountpoint -q "$mnt" && { umount "$mnt" || rc=1; }
	timeout 60 modprobe -r nvme_rdma nvmet_rdma nvmet nvme_fabrics || rc=1
	dev_exists $DEVA && { rdma link delete $DEVA || rc=1; }
	dev_exists $DEVB && { rdma link delete $DEVB || rc=1; }
	timeout 60 modprobe -r rdma_rxe || rc=1
	# The wire started in set-up's subshell: its pid is in a file.
	if [ -s "$logdir/wire.pid" ]; then
		kill "$(cat "$logdir/wire.pid")" 2>/dev/null
		wait_for 10 bash -c "! kill -0 $(cat "$logdir/wire.pid") 2>/dev/null" || rc=1
		rm -f "$logdir/wire.pid"
	fi
	cleanup_net
	return $rc
}

# --- set-up --------------------------------------------------------------------

cleanup_net
unload_rrxe
modprobe -r rdma_rxe 2>/dev/null
mark=$(kmsg_mark)
modprobe nvmet_rdma && modprobe nvme_rdma || ktap_exit_fail_msg "modprobe nvmet_rdma nvme_rdma failed"
# nvmet's tracepoints, where the kernel has tracing (the debug kernel).
tracing=0
[ -d $TR/events/nvmet/nvmet_req_init ] && tracing=1
setup() {
	ip tuntap add dev $TAPA mode tap && ip tuntap add dev $TAPB mode tap || return 1
	python3 "$lib_dir/rrxe_rtu_wire.py" $TAPA $TAPB >"$logdir/wire.log" 2>&1 &
	echo $! >"$logdir/wire.pid"
	wait_for 30 grep -q '^wire: up' "$logdir/wire.log" || { cat "$logdir/wire.log"; return 1; }
	local d
	for d in all $TAPA $TAPB; do
		sysctl -qw "net.ipv4.conf.$d.rp_filter=0" "net.ipv4.conf.$d.accept_local=1" || return 1
	done
	ip link set $TAPA up && ip link set $TAPB up &&
		ip addr add $A/24 dev $TAPA && ip addr add $B/24 dev $TAPB || return 1
	modprobe rdma_rxe && rdma link add $DEVA type rxe netdev $TAPA &&
		rdma link add $DEVB type rxe netdev $TAPB || return 1
	wait_gid $DEVA "ffff:$A" && wait_gid $DEVB "ffff:$B" || { echo "no IPv4 GIDs"; return 1; }
	mount -t tmpfs -o size=64M rrxt-rtu "$mnt" && truncate -s 32M "$mnt/ns.img" || return 1
	local s=$CFS/subsystems/$NQN
	mkdir -p $s/namespaces/1 && echo 1 >$s/attr_allow_any_host &&
		echo "$mnt/ns.img" >$s/namespaces/1/device_path && echo 1 >$s/namespaces/1/enable &&
		mkdir -p $CFS/ports/1 && echo rdma >$CFS/ports/1/addr_trtype &&
		echo ipv4 >$CFS/ports/1/addr_adrfam && echo $B >$CFS/ports/1/addr_traddr &&
		echo $PORT >$CFS/ports/1/addr_trsvcid &&
		ln -s $s $CFS/ports/1/subsystems/$NQN || { echo "target set-up failed"; return 1; }
	if [ $tracing = 1 ]; then
		# Fabrics connect commands (opcode 0x7f, fctype 1), with their stacks.
		echo 0 >$TR/tracing_on && echo >$TR/trace &&
			echo 'opcode == 0x7f && fctype == 1' >$TR/events/nvmet/nvmet_req_init/filter &&
			echo 'stacktrace if opcode == 0x7f && fctype == 1' >$TR/events/nvmet/nvmet_req_init/trigger &&
			echo 1 >$TR/events/nvmet/nvmet_req_init/enable && echo 1 >$TR/tracing_on ||
			{ echo "tracing set-up failed"; return 1; }
	fi
}
out=$(setup 2>&1) || {
	printf '%s\n' "$out" | sed 's/^/# /'
	teardown >/dev/null 2>&1
	ktap_exit_fail_msg "set-up failed"
}

# --- the checks ------------------------------------------------------------------

bdev() {
	local c b
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = $NQN ] || continue
		for b in "$c/${c##*/}"n*; do
			[ -b "/dev/${b##*/}" ] && { echo "/dev/${b##*/}"; return 0; }
		done
	done
	return 1
}

connect_io() {
	local t0=$SECONDS b f
	timeout 120 nvme connect -t rdma -a $B -s $PORT -n $NQN --host-traddr=$A \
		--hostnqn="nqn.2014-08.org.nvmexpress:uuid:$uuid" --hostid="$uuid" \
		--nr-io-queues=1 || { echo "nvme connect failed"; return 1; }
	echo "connected in $((SECONDS - t0)) s"
	wait_for 30 bdev >/dev/null || {
		echo "no block device $((SECONDS - t0)) s after the connect began:"
		find /sys/class/nvme/ /sys/class/nvme/*/ /dev -maxdepth 1 -name 'nvme*' | head -n 30
		grep -H . /sys/class/nvme/*/state
		ps -eo pid,stat,wchan:32,comm | awk '$2 ~ /D/' | head -n 20
		return 1
	}
	b=$(bdev)
	f=$(mktemp)
	head -c 65536 /dev/urandom >"$f"
	dd if="$f" of="$b" bs=4096 oflag=direct status=none &&
		cmp <(dd if="$b" bs=4096 count=16 iflag=direct status=none) "$f" ||
		{ echo "64 KiB on $b did not read back"; rm -f "$f"; return 1; }
	rm -f "$f"
	echo "64 KiB written to $b and read back"
}
check "rdma_rxe over a wire that loses each connection's first RTU: the host connects, 64 KiB read back" connect_io

# Two connections (admin and I/O queue): each lost its first RTU, and a
# SEND passed before the RTU that got through.
wire_order() {
	cat "$logdir/wire.log"
	local drops passes early
	drops=$(grep -c '^drop rtu' "$logdir/wire.log")
	passes=$(grep -c '^pass rtu' "$logdir/wire.log")
	early=$(grep -cE '^pass rtu .* sends=[1-9]' "$logdir/wire.log")
	[ "$drops" -ge 2 ] && [ "$passes" -ge 2 ] && [ "$early" -ge 2 ] ||
		{ echo "RTUs dropped $drops, passed $passes, passed after a SEND $early (want 2 or more each)"; return 1; }
}
check "each connection's first RTU lost, the connect command reached the target before the RTU that passed" wire_order

if [ $tracing = 1 ]; then
	cm_handler() {
		echo 0 >$TR/tracing_on
		cp $TR/trace "$logdir/trace"
		awk '/nvmet_req_init:/ { n++; sub(/.*cmd=/, ""); print "connect: " $0 }
			prev ~ /=> nvmet_rdma_handle_command$/ && /=> nvmet_rdma_cm_handler$/ { cm++ }
			/=> nvmet_rdma_recv_done$/ { rd++ }
			{ prev = $0 }
			END { printf "%d connect commands: %d run from the rdma_cm handler, %d from recv_done\n", n, cm, rd
				exit !(n >= 2 && cm == n) }' "$logdir/trace"
	}
	check "nvmet ran both connect commands from its rdma_cm handler (their stacks)" cm_handler
else
	ktap_test_skip "nvmet ran both connect commands from its rdma_cm handler (no tracing: not the debug kernel)"
fi

if [ "$lockdep" = 1 ]; then
	lockdep_report() {
		local m known
		m=$(kmsg_mark)
		timeout 60 nvme disconnect -n $NQN >/dev/null
		rm "$CFS/ports/1/subsystems/$NQN" || { echo "unlink failed"; return 1; }
		wait_for 30 bash -c "dmesg | grep -q 'possible circular locking dependency'"
		kmsg_since "$m" >"$logdir/kmsg"
		known=$(mktemp)
		"$root/tools/kreport-filter" "$known" <"$logdir/kmsg" >/dev/null
		grep '^known report: ' "$known"
		sed -n '/is trying to acquire lock:/,/which lock already depends/p' "$known" | head -n 6
		grep -q '^known report: nvmet-connect-in-cm-handler$' "$known" ||
			{ echo "no known report in the log after the unlink:"; head -n 60 "$logdir/kmsg"; rm -f "$known"; return 1; }
		rm -f "$known"
	}
	check "unlinking the port: lockdep's nvmet_config_sem/handler_mutex report, known to tools/kreport-filter" lockdep_report
elif [ -n "$lockdep" ]; then
	ktap_test_skip "unlinking the port: lockdep's report (lockdep was turned off earlier in this boot)"
else
	ktap_test_skip "unlinking the port: lockdep's report (no lockdep: not the debug kernel)"
fi

check "the target, the host, the devices and rdma_rxe go" teardown
# Any report but the known one fails.
check "no kernel report but the known one" no_kernel_report "$mark"
rmdir "$mnt" 2>/dev/null
echo "# logs: $logdir"
ktap_finished
