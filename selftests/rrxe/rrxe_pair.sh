#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Two kernels over virtio-net: run in both guests of `tools/guest --pair`
# (run-tests does). Guest a has an rrxe device on its link to guest b; b
# has an rrxe device, then an rdma_rxe one. Stock ibv_rc_pingpong and
# ibv_ud_pingpong (-c, every buffer validated), rping -V through rdma_cm
# and RDMA READs (perftest) cross the link both ways, rrxe to rrxe and
# rrxe to rdma_rxe; XRC (rdma-core 59's ibv_xsrq_pingpong, three clients
# on b against one server on a) from rrxe to rrxe; eight QPs of WRITEs at MTU 9000 lose nothing, nor
# does a UC ping-pong through a widened receive race (rrxe to rrxe); then
# an NVMe-oF target on a's rrxe device (a file-backed namespace) serves
# an nvme-rdma host on b, over rrxe and then over rdma_rxe, with fio's
# verified random writes. Each guest reports its own side: a server's exit
# status on one, its client's on the other.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 14

[ -n "${RRXE_PAIR:-}" ] || ktap_exit_fail_msg "not in a guest pair (tools/guest --pair)"
me=$RRXE_PAIR
nd=$(pair_netdev) || ktap_exit_fail_msg "no netdev with MAC $RRXE_PAIR_MAC"
if [ "$me" = a ]; then addr=10.79.0.1 peer=10.79.0.2; else addr=10.79.0.2 peer=10.79.0.1; fi
dev=rrxtp$me
mark=$(kmsg_mark)

# up TYPE: this guest's device of link type TYPE on the link, with its
# IPv4 GID, and the other guest's address answering.
up() {
	rdma link add "$dev" type "$1" netdev "$nd" &&
		wait_gid "$dev" "ffff:$addr" && wait_for 20 ping -c1 -W1 "$peer" >/dev/null
}

# step NAME HOW SERVER... -- CLIENT...: guest a runs SERVER (at most 150
# s), waits for it to listen (HOW as in lib.sh's listening), tells b, and
# reports SERVER's exit status; b waits for that and reports CLIENT's
# (at most 120 s).
step() {
	local name=$1 how=$2; shift 2
	local server=() pid rc
	while [ "$1" != -- ]; do server+=("$1"); shift; done
	shift
	if [ "$me" = a ]; then
		timeout 150 "${server[@]}" >"/tmp/$name.server" 2>&1 </dev/null &
		pid=$!
		wait_for 30 listening "$how" "" || { echo "the server did not listen"; }
		pair_signal "$name" ready
		wait "$pid"
		rc=$?
		[ $rc -eq 0 ] || { echo "server exited $rc: ${server[*]}"; tail -n 20 "/tmp/$name.server"; }
		return $rc
	fi
	pair_wait "$name" 180 >/dev/null || { echo "guest a never got ready for $name"; return 1; }
	timeout 120 "$@" >"/tmp/$name.client" 2>&1 </dev/null
	rc=$?
	[ $rc -eq 0 ] || { echo "client exited $rc: $*"; tail -n 20 "/tmp/$name.client"; }
	return $rc
}

# link_del DEV: deletes DEV, failing (not hanging) if that takes over 60 s:
# the deletion waits for every reference on the device, and one that is
# never put would keep it, and the guest, waiting for good.
link_del() {
	local pid i rc log=/tmp/rrxe-pair-link-del
	# Its output goes to a file: a check collects its function's output
	# until the last writer closes it, and a deletion stuck for good
	# would hold that open, and the check, for good.
	rdma link del "$1" >"$log" 2>&1 </dev/null &
	pid=$!
	for ((i = 0; i < 600; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			rc=$?
			cat "$log"
			return $rc
		fi
		nap 0.1
	done
	echo "rdma link del $1 still waits after 60 s (a reference on the device is never put)"
	return 1
}

# The server side names the address; the client side connects to it.
srv() { [ "$me" = a ] || echo 10.79.0.1; }

root=$(cd "$(dirname "$0")/../.." && pwd)

# xsrq: rdma-core 59's ibv_xsrq_pingpong, through librxe's XRC verbs (the
# tools/rdma-core/ series): a server on a with one XRC SRQ and a target
# and an initiator QP per client, three client processes on b sharing one
# XRC domain through the tool's file, 20 round trips each.
xsrq() {
	# shellcheck source=tools/rdma-user-env
	. "$root/tools/rdma-user-env" || { echo "no rdma-core 59 build (tools/setup-host)"; return 1; }
	# shellcheck disable=SC2016,SC2046 # the clients' script; srv as above.
	step xsrq tcp:18520 ibv_xsrq_pingpong -d "$dev" -g "$g" -p 18520 -c 3 -n 20 -- \
		bash -c 'p=(); for _ in 1 2 3; do "$@" & p+=($!); done
			r=0; for x in "${p[@]}"; do wait "$x" || r=1; done; exit $r' \
		xsrq ibv_xsrq_pingpong -d "$dev" -g "$g" -p 18520 -n 20 $(srv)
}

NQN=nqn.2026-11.org.rrxe:pair
CFS=/sys/kernel/config/nvmet

# target_up: guest a's nvmet target: a 96 MiB file-backed namespace of
# NQN on port 4420 of a's address, over RDMA.
target_up() {
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || return 1
	modprobe nvmet && modprobe nvmet-rdma || return 1
	# On tmpfs: nvmet takes the namespace's block size from the file
	# system's (the guest's /tmp may be the host's, shared, whose block
	# size it cannot use).
	mkdir -p /tmp/rrxe-pair-ns && { mountpoint -q /tmp/rrxe-pair-ns ||
		mount -t tmpfs -o size=128M none /tmp/rrxe-pair-ns; } &&
		truncate -s 96M /tmp/rrxe-pair-ns/ns1 || return 1
	mkdir "$CFS/subsystems/$NQN" &&
		echo 1 >"$CFS/subsystems/$NQN/attr_allow_any_host" &&
		mkdir "$CFS/subsystems/$NQN/namespaces/1" &&
		printf '%s' /tmp/rrxe-pair-ns/ns1 >"$CFS/subsystems/$NQN/namespaces/1/device_path" &&
		echo 1 >"$CFS/subsystems/$NQN/namespaces/1/enable" &&
		mkdir "$CFS/ports/1" &&
		echo rdma >"$CFS/ports/1/addr_trtype" && echo ipv4 >"$CFS/ports/1/addr_adrfam" &&
		echo "$addr" >"$CFS/ports/1/addr_traddr" && echo 4420 >"$CFS/ports/1/addr_trsvcid" &&
		ln -s "$CFS/subsystems/$NQN" "$CFS/ports/1/subsystems/$NQN"
}

target_down() {
	rm -f "$CFS/ports/1/subsystems/$NQN"
	rmdir "$CFS/ports/1" 2>/dev/null
	[ -d "$CFS/subsystems/$NQN" ] || return 0
	echo 0 >"$CFS/subsystems/$NQN/namespaces/1/enable" 2>/dev/null
	rmdir "$CFS/subsystems/$NQN/namespaces/1" && rmdir "$CFS/subsystems/$NQN"
}

# The block device of an NVMe namespace on this host (the guest has no
# NVMe device but the fabric's).
nvme_ns() {
	local d
	for d in /dev/nvme[0-9]*n1; do
		[ -b "$d" ] && { echo "$d"; return 0; }
	done
	return 1
}

# nvme_io STRICT: guest b connects to a's target over RDMA, writes 64 MiB
# of random 4-64 KiB blocks at queue depth 16 and reads them back verified
# (crc32c), then disconnects. With STRICT=1 the controller must also never
# have needed error recovery (a reconnect) on the way.
nvme_io() {
	local strict=$1 ns out rc m n
	m=$(kmsg_mark)
	modprobe nvme-rdma || return 1
	timeout 60 nvme connect -t rdma -a 10.79.0.1 -s 4420 -n "$NQN" || { echo "nvme connect failed"; return 1; }
	wait_for 30 nvme_ns || { echo "no namespace appeared"; nvme disconnect -n "$NQN"; return 1; }
	ns=$(nvme_ns)
	out=$(timeout 300 fio --name=pair --filename="$ns" --direct=1 --ioengine=libaio \
		--rw=randwrite --bsrange=4k-64k --iodepth=16 --size=64M --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --randrepeat=0 2>&1)
	rc=$?
	[ $rc -eq 0 ] || { echo "fio exited $rc"; printf '%s\n' "$out" | tail -n 20; }
	timeout 60 nvme disconnect -n "$NQN" >/dev/null || { echo "nvme disconnect failed"; rc=1; }
	n=$(kmsg_since "$m" | grep -c "starting error recovery")
	if [ "$n" -gt 0 ] && [ "$strict" = 1 ]; then
		echo "the host needed error recovery $n times:"
		kmsg_since "$m" | grep "nvme" | head -n 10
		rc=1
	elif [ "$n" -gt 0 ]; then
		# rdma_rxe's host QP can go to the error state with no error
		# completion (its first failed work request reports WR flushed)
		# when a stalled peer's retransmissions arrive with their ACKs;
		# nvme-rdma reconnects and retries, and the data is verified.
		echo "# note: rdma_rxe's host needed error recovery $n times (see rrxe_pair.sh)" >/tmp/rrxe-pair-note
	fi
	return $rc
}

# nvme_step NAME STRICT: a's target serves b's nvme_io STRICT.
nvme_step() {
	if [ "$me" = a ]; then
		target_up || { echo "target setup failed"; target_down; pair_signal "$1" failed; return 1; }
		pair_signal "$1" ready
		pair_wait "$1-done" 600 >/dev/null || { echo "guest b never finished $1"; target_down; return 1; }
		target_down
		return 0
	fi
	local r rc=0
	r=$(pair_wait "$1" 180) || { echo "guest a never got ready for $1"; return 1; }
	[ "$r" = ready ] || { echo "guest a's target failed"; pair_signal "$1-done"; return 1; }
	nvme_io "$2" || rc=1
	pair_signal "$1-done"
	return $rc
}

load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
ip addr add "$addr/24" dev "$nd" && ip link set "$nd" up || ktap_exit_fail_msg "link setup failed"
check "$me: rrxe device on the link ($nd), other guest reachable" up "$RRXE_LINK_TYPE"
g=$(gid_index "$dev" "ffff:$addr")

# shellcheck disable=SC2046 # srv prints nothing on a, the address on b.
check "$me: RC rrxe <-> rrxe, 200 x 4 KiB validated (ibv_rc_pingpong -c)" \
	step rc1 tcp:18515 ibv_rc_pingpong -d "$dev" -g "$g" -c -s 4096 -n 200 -- \
	ibv_rc_pingpong -d "$dev" -g "$g" -c -s 4096 -n 200 $(srv)
# shellcheck disable=SC2046
check "$me: UD rrxe <-> rrxe, 200 x 1 KiB validated (ibv_ud_pingpong -c)" \
	step ud1 tcp:18515 ibv_ud_pingpong -d "$dev" -g "$g" -c -s 1024 -n 200 -- \
	ibv_ud_pingpong -d "$dev" -g "$g" -c -s 1024 -n 200 $(srv)
check "$me: rping -V rrxe <-> rrxe through rdma_cm, 100 pings" \
	step cm1 cm:7179 rping -s -a 10.79.0.1 -p 7179 -C 100 -S 1000 -V -- \
	rping -c -a 10.79.0.1 -p 7179 -C 100 -S 1000 -V
# shellcheck disable=SC2046
check "$me: RC READs rrxe <-> rrxe, 200 x 64 KiB (ib_read_bw)" \
	step rd1 tcp:18711 ib_read_bw -d "$dev" -x "$g" -F -p 18711 -s 65536 -n 200 -- \
	ib_read_bw -d "$dev" -x "$g" -F -p 18711 -s 65536 -n 200 $(srv)
check "$me: XRC rrxe <-> rrxe, three clients against one server (ibv_xsrq_pingpong, rdma-core 59)" xsrq

# Eight QPs of 64 KiB WRITEs at link MTU 9000 (a 4 KiB path MTU): their
# windows (8 x 128 packets, each in a 9 KiB virtio-net buffer) may all
# wait in a's receive queue behind its one vCPU, and rrxe must not drop
# them there (a queue bound of 8 MiB did). Each guest checks its own
# sequence counters: a lost packet raises a's out_of_seq_request and b's
# rcvd_seq_err. A retransmit timeout is not a loss: the QP whose packets
# wait at the tail of such a queue may hear nothing for its timeout
# (perftest's 67 ms) and retransmit; it is noted.
seq_counters() {
	local d=/sys/class/infiniband/$dev/ports/1/hw_counters n
	for n in "$@"; do printf '%s=%s ' "$n" "$(cat "$d/$n")"; done
}
many_qps() {
	local lost=(out_of_seq_request rcvd_seq_err) retried=(completer_retry_err duplicate_request)
	local before after rb ra rc
	ip link set "$nd" mtu 9000 || return 1
	wait_for 10 bash -c "ibv_devinfo -d $dev | grep -q 'active_mtu:.*4096'" || { echo "active_mtu did not follow"; ip link set "$nd" mtu 1500; return 1; }
	before=$(seq_counters "${lost[@]}") rb=$(seq_counters "${retried[@]}")
	# shellcheck disable=SC2046
	step wr8 tcp:18713 ib_write_bw -d "$dev" -x "$g" -F -p 18713 -q 8 -s 65536 -n 400 -- \
		ib_write_bw -d "$dev" -x "$g" -F -p 18713 -q 8 -s 65536 -n 400 $(srv)
	rc=$?
	after=$(seq_counters "${lost[@]}") ra=$(seq_counters "${retried[@]}")
	[ "$before" = "$after" ] || { echo "packets lost: before $before, after $after"; rc=1; }
	[ "$rb" = "$ra" ] && [ $rc -eq 0 ] || echo "# note: before $rb, after $ra"
	pair_signal wr8-done && pair_wait wr8-done 120 >/dev/null || { echo "the other guest did not finish"; rc=1; }
	ip link set "$nd" mtu 1500 || rc=1
	return $rc
}
check "$me: 8 RC QPs of 64 KiB WRITEs at a 4 KiB MTU, no packet lost" many_qps

# A UC ping-pong with the window of a race opened wide. A doorbell
# receives in place (see net_glue.c's struct rrxe_inline), and a packet
# that came from the wire while it gave up its CPU's slot was noted for a
# drain that had already ended: it stayed in its device's queue for good,
# holding a reference on the device. UC has no retransmission, so the
# ping-pong stopped (RC recovered after a retransmit timeout), and the
# device could no longer be deleted. Unforced, a busy host met it about
# once in 15,000 round trips. The module's test knob
# test_rx_inline_delay_us makes each doorbell wait there, which the fix
# does with bottom halves off: the other guest's reply, due about then,
# meets the window in nearly every round trip, and the module before the
# fix stopped within the first few. With the fix it costs the wait.
UC_DELAY=/sys/module/rrxe/parameters/test_rx_inline_delay_us
uc_pingpong() {
	local rc v before t0=$SECONDS
	# The knob is off by default and refuses what it cannot take.
	[ "$(cat "$UC_DELAY")" = 0 ] || { echo "$UC_DELAY is $(cat "$UC_DELAY") by default"; return 1; }
	for v in 10001 x -1; do
		! echo "$v" 2>/dev/null >"$UC_DELAY" || { echo "$UC_DELAY took $v"; return 1; }
	done
	[ "$(cat "$UC_DELAY")" = 0 ] || { echo "a refused value changed $UC_DELAY"; return 1; }
	echo 3000 >"$UC_DELAY" || { echo "cannot set $UC_DELAY"; return 1; }
	before=$(seq_counters sent_pkts rcvd_pkts)
	# shellcheck disable=SC2046
	step uc1 tcp:18714 ib_write_lat -d "$dev" -x "$g" -F -p 18714 -c UC -n 1500 -- \
		ib_write_lat -d "$dev" -x "$g" -F -p 18714 -c UC -n 1500 $(srv)
	rc=$?
	echo 0 >"$UC_DELAY" || rc=1
	# perftest prints nothing of a run it does not finish: the packets
	# say how far it got.
	echo "# $((SECONDS - t0)) s; before: $before; after: $(seq_counters sent_pkts rcvd_pkts)"
	{ pair_signal uc1-done && pair_wait uc1-done 150 >/dev/null; } || { echo "the other guest did not finish"; rc=1; }
	return $rc
}
check "$me: UC rrxe <-> rrxe, 1500 WRITE round trips through a widened receive race, none lost (test_rx_inline_delay_us, which refuses 10001)" uc_pingpong
check "$me: NVMe-oF, nvme-rdma host on rrxe (b) to nvmet-rdma target on rrxe (a), 64 MiB verified" \
	nvme_step nvme1 1

# Guest b swaps its rrxe device for an rdma_rxe one; a keeps rrxe.
swap() {
	if [ "$me" = b ]; then
		modprobe -r nvme-rdma 2>/dev/null
		link_del "$dev" && unload_rrxe && modprobe rdma_rxe && up rxe || return 1
		pair_signal swapped
	else
		pair_wait swapped 120 >/dev/null
	fi
}
check "$me: guest b's device is now rdma_rxe" swap
g=$(gid_index "$dev" "ffff:$addr")
# shellcheck disable=SC2046
check "$me: RC rrxe (a) <-> rdma_rxe (b), 200 x 4 KiB validated" \
	step rc2 tcp:18515 ibv_rc_pingpong -d "$dev" -g "$g" -c -s 4096 -n 200 -- \
	ibv_rc_pingpong -d "$dev" -g "$g" -c -s 4096 -n 200 $(srv)
# shellcheck disable=SC2046
check "$me: RC READs rdma_rxe (b) from rrxe (a), 200 x 64 KiB" \
	step rd2 tcp:18712 ib_read_bw -d "$dev" -x "$g" -F -p 18712 -s 65536 -n 200 -- \
	ib_read_bw -d "$dev" -x "$g" -F -p 18712 -s 65536 -n 200 $(srv)
check "$me: NVMe-oF, nvme-rdma host on rdma_rxe (b) to nvmet-rdma target on rrxe (a), 64 MiB verified" \
	nvme_step nvme2 0
[ -f /tmp/rrxe-pair-note ] && cat /tmp/rrxe-pair-note

done_both() {
	local rc=0
	{ pair_signal finished && pair_wait finished 300 >/dev/null; } || { echo "the other guest did not finish"; rc=1; }
	no_user_objects "$dev" || rc=1
	modprobe -r nvme-rdma nvmet-rdma 2>/dev/null
	link_del "$dev" || rc=1
	no_kernel_report "$mark" || rc=1
	return $rc
}
check "$me: both guests finished, nothing left, no kernel report" done_both
