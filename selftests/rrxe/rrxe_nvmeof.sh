#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# NVMe over Fabrics (RDMA) on one device: the kernel's NVMe-oF target
# (nvmet-rdma, set up through configfs) and host (nvme-rdma, driven by
# nvme-cli) talk through the same device, on a dummy netdev with
# 10.80.0.1/24 in init_net (nvme-rdma and nvmet-rdma create their rdma_cm
# IDs there). The same cases run first on rdma_rxe, the baseline, then on
# rrxe:
#
#   1. a subsystem with a file-backed namespace (a file on a tmpfs), a
#      port (rdma, ipv4, 10.80.0.1, 4420), `nvme connect -t rdma`: the
#      block device appears, with the file's size;
#   2. fio random writes, 4k to 64k blocks, iodepth 16, libaio, direct,
#      256 MiB in all, crc32c-verified;
#   3. a second subsystem, its namespace a memory-backed null_blk device
#      (512-byte blocks), connects and serves verified I/O;
#   4. odd sizes and offsets on it: fio with 512 to 7680-byte blocks at any
#      sector, then direct I/O from buffers at 4-byte offsets in their
#      pages (the first SGE's offset), across page boundaries, and from two
#      iovecs, each read back and the whole region compared; then it
#      disconnects and its subsystem goes;
#   5. `nvme reset` during verified fio I/O: fio ends without a verify
#      error, the controller is live again, verified I/O passes after;
#   6. 20 connect and disconnect cycles, after which the device holds as
#      many objects (rdma res) as before them;
#   7. the subsystem unlinked from the port (the port goes down) during
#      verified I/O: the host reconnects (every second, for up to 30 s);
#      linked again, the controller is live again and verified I/O passes;
#   8. `rdma link delete` of the device with a controller connected and
#      I/O running: the controller goes, nothing hangs (each step is
#      bounded), the target and the modules unload;
#   9. at the end no RDMA object is left (rdma res) and the kernel logged
#      no report (WARN, BUG, KASAN, lockdep, hung task) during the phase.
#
# A case also fails if the kernel logged a report while it ran. Each case
# is one KTAP test for rrxe (which must pass it); rdma_rxe's results are
# notes: a case rdma_rxe fails is reported, not failed. One more test
# checks that rrxe passed every case rdma_rxe passed. Logs (fio's output
# among them) go to $RRXE_OUT/nvmeof. RRXE_NVMEOF_DRIVERS (default
# "rdma_rxe rrxe") picks the drivers and RRXE_NVMEOF_CASES (default all)
# the cases; without rdma_rxe that last test is skipped.
#
# On the debug kernel ($RRXE_DEBUG=1, where the hardening harness runs it
# last but one) the defaults are smaller: rrxe alone, cases 1, 7, 8 and 9,
# 4 MiB after case 7's event, 12 s of I/O in case 8 (and 16 MiB in case 2
# when chosen): KASAN and lockdep under TCG make the I/O many times slower.
#
# nvmet's known report: a connect command that reaches the target before
# the target's rdma_cm has seen the RTU is run by nvmet from its rdma_cm
# handler, and case 7's unlink then makes lockdep report a circular
# dependency between nvmet_config_sem and rdma_cm's handler_mutex. The
# order is legal and rdma_rxe reaches it too (rrxe_nvmeof_rtu.sh makes it
# certain; on the debug kernel, over 10 connects with one I/O queue to a
# target on the same device, nvmet ran 2 of 20 connect commands from its
# rdma_cm handler on rrxe and 5 of 20 on rdma_rxe).
# tools/kreport-filter knows that report: the checks here leave it out,
# with a line saying so, and fail on any other. Lockdep is off after it.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

if [ "${RRXE_DEBUG:-0}" = 1 ]; then
	DRIVERS=${RRXE_NVMEOF_DRIVERS:-rrxe}
	CASES=${RRXE_NVMEOF_CASES:-1 7 8 9}
	C2_SIZE=16M C7_AFTER=4M C8_SECS=12
else
	DRIVERS=${RRXE_NVMEOF_DRIVERS:-rdma_rxe rrxe}
	CASES=${RRXE_NVMEOF_CASES:-1 2 3 4 5 6 7 8 9}
	C2_SIZE=256M C7_AFTER=32M C8_SECS=30
fi

ktap_print_header
ktap_set_plan $(($(wc -w <<<"$CASES") + 1))

ADDR=10.80.0.1
PORT=4420
DEV=rrxtnv
NETDEV=rrxtnd
NQN1=nqn.2026-11.org.rrxe:rrxt-file
NQN2=nqn.2026-11.org.rrxe:rrxt-nullb
CFS=/sys/kernel/config/nvmet
uuid=$(cat /proc/sys/kernel/random/uuid)
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$uuid
HOSTID=$uuid

if [ -n "${RRXE_OUT:-}" ]; then logdir=$RRXE_OUT/nvmeof; mkdir -p "$logdir"; else logdir=$(mktemp -d); fi
rm -f "$logdir"/*.log "$logdir"/*.fio
# The namespace file lives on a tmpfs of its own: the guest's /tmp is the
# host's directory, where nvmet's file backend finds no block size.
mnt=$(mktemp -d)

mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config ||
	ktap_exit_fail_msg "cannot mount configfs"

# --- helpers -----------------------------------------------------------------

# bounded SECS CMD...: CMD (a command under timeout, or a function of
# this script); one still running SECS + 10 s later (stuck in the kernel,
# where signals do not reach) is left behind and fails.
bounded() {
	local s=$1 pid out t; shift
	out=$(mktemp)
	if [ "$(type -t "$1")" = function ]; then
		"$@" >"$out" 2>&1 &
	else
		timeout -k 5 "$s" "$@" >"$out" 2>&1 &
	fi
	pid=$!
	t=$(( (s + 10) * 10 ))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$t" -le 0 ]; then
			cat "$out"
			echo "hung: '$*' still runs after $((s + 10)) s"
			return 124
		fi
		sleep 0.1
		t=$((t - 1))
	done
	wait "$pid"
	t=$?
	cat "$out"
	rm -f "$out"
	return "$t"
}

# The controller (nvmeN) connected to subsystem NQN over RDMA, if any.
ctrl_of() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] || continue
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$1" ] &&
			[ "$(cat "$c/transport" 2>/dev/null)" = rdma ] && { basename "$c"; return 0; }
	done
	return 1
}
no_ctrl_of() { ! ctrl_of "$1" >/dev/null; }
ctrl_state() { cat "/sys/class/nvme/$1/state" 2>/dev/null; }
ctrl_live() { [ "$(ctrl_state "$1")" = live ]; }
ctrl_not_live() { [ "$(ctrl_state "$1")" != live ]; }

# The block device (/dev/nvmeNnM) of subsystem NQN's namespace.
bdev_of() {
	local c b
	c=$(ctrl_of "$1") || return 1
	for b in /sys/class/nvme/"$c"/"$c"n*; do
		[ -b "/dev/${b##*/}" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

# connect NQN: nvme connect over RDMA (reconnecting every second for up
# to 30 s after a loss) and the namespace's block device appears.
connect() {
	timeout 60 nvme connect -t rdma -a "$ADDR" -s "$PORT" -n "$1" \
		--hostnqn="$HOSTNQN" --hostid="$HOSTID" \
		--reconnect-delay=1 --ctrl-loss-tmo=30 || { echo "nvme connect $1 failed"; return 1; }
	wait_for 30 bdev_of "$1" >/dev/null || { echo "no block device for $1"; return 1; }
}

# disconnect NQN: its controllers go.
disconnect() {
	bounded 60 nvme disconnect -n "$1" >/dev/null || { echo "nvme disconnect $1 failed"; return 1; }
	wait_for 30 no_ctrl_of "$1" || { echo "a controller of $1 is still there"; return 1; }
}

# The target's port 1, rdma on $ADDR:$PORT.
port_add() {
	mkdir -p "$CFS/ports/1" &&
	echo rdma >"$CFS/ports/1/addr_trtype" &&
	echo ipv4 >"$CFS/ports/1/addr_adrfam" &&
	echo "$ADDR" >"$CFS/ports/1/addr_traddr" &&
	echo "$PORT" >"$CFS/ports/1/addr_trsvcid"
}
port_link() { ln -s "$CFS/subsystems/$1" "$CFS/ports/1/subsystems/$1"; }
port_unlink() { rm "$CFS/ports/1/subsystems/$1"; }

# subsys_add NQN PATH: subsystem NQN open to any host, namespace 1 on PATH
# (a file or a block device), enabled.
subsys_add() {
	local s=$CFS/subsystems/$1
	mkdir -p "$s/namespaces/1" &&
	echo 1 >"$s/attr_allow_any_host" &&
	echo "$2" >"$s/namespaces/1/device_path" &&
	echo 1 >"$s/namespaces/1/enable"
}
subsys_del() {
	local s=$CFS/subsystems/$1
	[ -d "$s" ] || return 0
	echo 0 >"$s/namespaces/1/enable" 2>/dev/null
	rmdir "$s/namespaces/1" 2>/dev/null
	rmdir "$s"
}

# Removes whatever of the target is left: links, port, subsystems.
target_down() {
	local l s
	for l in "$CFS"/ports/*/subsystems/*; do [ -L "$l" ] && rm "$l"; done
	for s in "$CFS"/ports/*; do [ -d "$s" ] && rmdir "$s"; done
	for s in "$CFS"/subsystems/*; do [ -d "$s" ] && subsys_del "${s##*/}"; done
	[ -z "$(ls -A "$CFS/subsystems" 2>/dev/null)" ] && [ -z "$(ls -A "$CFS/ports" 2>/dev/null)" ]
}

# fio_v NAME DEV SIZE [ARGS...]: fio random writes of 4k to 64k blocks
# (ARGS change that), iodepth 16, libaio, direct, crc32c-verified; fails on
# a non-zero exit or any verify error. The output goes to NAME's log.
FIO_VERIFY_ERR='verify failed|bad magic|bad header|verify: bad|crc32c: bad'
fio_v() {
	local name=$1 dev=$2 size=$3 log=$logdir/$drv.$1.fio rc; shift 3
	timeout 600 fio --name="$name" --filename="$dev" --ioengine=libaio --direct=1 \
		--iodepth=16 --rw=randwrite --bsrange=4k-64k --size="$size" \
		--verify=crc32c --verify_state_save=0 --verify_fatal=1 "$@" >"$log" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || grep -qE "$FIO_VERIFY_ERR" "$log"; then
		echo "fio $name on $dev: exit $rc"
		tail -n 25 "$log"
		return 1
	fi
	fio_summary "$log"
}
# The bandwidth lines of a fio log, to show.
fio_summary() { grep -E '^ +(READ|WRITE): ' "$1" | sed 's/^ */fio: /'; }

# fio_bg NAME DEV SECONDS [ARGS...]: verified random writes for SECONDS,
# each block read back after every 64 writes (ARGS change that), in the
# background ($fio_pid).
fio_bg() {
	local name=$1 dev=$2 s=$3; shift 3
	timeout $((s + 300)) fio --name="$name" --filename="$dev" --ioengine=libaio --direct=1 \
		--iodepth=16 --rw=randwrite --bsrange=4k-64k --size=64M \
		--time_based --runtime="$s" --verify=crc32c --verify_backlog=64 \
		--verify_state_save=0 --verify_fatal=1 "$@" >"$logdir/$drv.$name.fio" 2>&1 &
	fio_pid=$!
}
# fio_bg_end NAME: waits for the background fio (up to 300 s more); it may
# have failed with I/O errors, but not with a verify error.
fio_bg_end() {
	local log=$logdir/$drv.$1.fio t=3000 rc
	while kill -0 "$fio_pid" 2>/dev/null; do
		[ $t -le 0 ] && { echo "fio $1 hangs"; return 1; }
		sleep 0.1
		t=$((t - 1))
	done
	wait "$fio_pid"
	rc=$?
	if grep -qE "$FIO_VERIFY_ERR" "$log"; then
		echo "fio $1: verify errors (exit $rc)"
		tail -n 25 "$log"
		return 1
	fi
	echo "fio $1 during the event: exit $rc"
	[ $rc -eq 0 ] || grep -E 'err=|error' "$log" | head -n 5
	fio_summary "$log"
	return 0
}

# The summary line of `rdma res show` for DEV (objects of each type).
res_line() { rdma res show 2>/dev/null | grep " $1: "; }

# --- the cases -----------------------------------------------------------------

DESC=(""
	"file-backed namespace on a tmpfs: nvme connect -t rdma, the block device appears"
	"fio random writes 4k-64k, iodepth 16, ${C2_SIZE%M} MiB, crc32c-verified"
	"a null_blk namespace (512-byte blocks) connects and serves verified I/O"
	"odd sizes and offsets: 512 to 7680-byte blocks, buffers at 4-byte offsets, two iovecs"
	"nvme reset during verified I/O: the controller comes back live, verified I/O after"
	"20 connect and disconnect cycles, as many objects left as before"
	"the port goes and comes back under verified I/O: the host reconnects"
	"rdma link delete with a controller connected and I/O running: all tears down"
	"nothing left (rdma res), no kernel report in the phase")

case1() {
	mk_dummy $NETDEV && ip addr add "$ADDR/24" dev $NETDEV || return 1
	if [ "$drv" = rdma_rxe ]; then
		modprobe rdma_rxe && rdma link add $DEV type rxe netdev $NETDEV || return 1
	else
		load_rrxe && link_add $DEV $NETDEV || return 1
	fi
	wait_gid $DEV "ffff:$ADDR" || { echo "no IPv4 GID on $DEV"; return 1; }
	modprobe nvmet_rdma && modprobe nvme_rdma || return 1
	mount -t tmpfs -o size=400M rrxt-nvme "$mnt" || return 1
	truncate -s 320M "$mnt/ns1.img" || return 1
	subsys_add $NQN1 "$mnt/ns1.img" && port_add && port_link $NQN1 || { echo "target setup failed"; return 1; }
	connect $NQN1 || return 1
	local b size
	b=$(bdev_of $NQN1)
	size=$(blockdev --getsize64 "$b")
	echo "$NQN1 on $(ctrl_of $NQN1) ($b, $size bytes, $(blockdev --getss "$b")-byte blocks)"
	[ "$size" = $((320 << 20)) ] || { echo "$b has $size bytes, not 320 MiB"; return 1; }
}

case2() {
	local b
	b=$(bdev_of $NQN1) || { echo "no block device"; return 1; }
	fio_v c2 "$b" "$C2_SIZE"
}

case3() {
	local b
	modprobe null_blk nr_devices=1 memory_backed=1 gb=1 bs=512 || return 1
	wait_for 10 test -b /dev/nullb0 || return 1
	subsys_add $NQN2 /dev/nullb0 && port_link $NQN2 || { echo "target setup failed"; return 1; }
	connect $NQN2 || return 1
	b=$(bdev_of $NQN2)
	echo "$NQN2 on $(ctrl_of $NQN2) ($b, $(blockdev --getss "$b")-byte blocks)"
	[ "$(blockdev --getss "$b")" = 512 ] || { echo "$b: not 512-byte blocks"; return 1; }
	fio_v c3 "$b" 32M --rw=randrw
}

# Direct I/O at odd sectors from buffers at 4-byte offsets in their pages
# (nvme's DMA alignment), each read back into a buffer at another offset;
# then the whole region is read and compared with what was written.
odd_io() {
	python3 - "$1" <<'EOF'
import mmap, os, sys

SEC = 512
fd = os.open(sys.argv[1], os.O_RDWR | os.O_DIRECT)
wbuf = mmap.mmap(-1, 1 << 20)
rbuf = mmap.mmap(-1, 1 << 20)
region = 512 * SEC


def read(moff, n, sec):
    mv = memoryview(rbuf)[moff:moff + n]
    got = os.preadv(fd, [mv], sec * SEC)
    if got != n:
        sys.exit(f"read {got} of {n} bytes at sector {sec}")
    return bytes(mv)


image = bytearray(read(0, region, 0))
# (write buffer offset, bytes, sector, read buffer offset): inline writes
# (up to 4 KiB) and registered ones, reads crossing page boundaries.
cases = [(4, 512, 1, 8), (2052, 1536, 7, 4092), (3076, 4608, 13, 1028),
         (0x804, 8704, 33, 0xffc), (4092, 512, 99, 4092),
         (100, 65536 + 512, 129, 2044), (4, 3 * 4096, 301, 4)]
for woff, n, sec, roff in cases:
    data = os.urandom(n)
    wbuf[woff:woff + n] = data
    got = os.pwritev(fd, [memoryview(wbuf)[woff:woff + n]], sec * SEC)
    if got != n:
        sys.exit(f"wrote {got} of {n} bytes at sector {sec}")
    image[sec * SEC:sec * SEC + n] = data
    if read(roff, n, sec) != data:
        sys.exit(f"{n} bytes at sector {sec} (buffers at {woff}, {roff}) read back wrong")
# Two iovecs: the first ends at a page's end, the second starts a page.
a, b = os.urandom(1020), os.urandom(1028)
wbuf[3076:4096] = a
wbuf[8192:9220] = b
mv = memoryview(wbuf)
got = os.pwritev(fd, [mv[3076:4096], mv[8192:9220]], 451 * SEC)
if got != 2048:
    sys.exit(f"two iovecs: wrote {got} of 2048 bytes")
image[451 * SEC:451 * SEC + 2048] = a + b
ra, rb = memoryview(rbuf)[3076:4096], memoryview(rbuf)[12288:13316]
if os.preadv(fd, [ra, rb], 451 * SEC) != 2048 or bytes(ra) + bytes(rb) != a + b:
    sys.exit("two iovecs: read back wrong")
final = read(0, region, 0)
if final != bytes(image):
    bad = next(i for i in range(region) if final[i] != image[i])
    sys.exit(f"region differs from what was written, first at byte {bad}")
print(f"{len(cases) + 1} odd transfers verified, region of {region} bytes intact")
EOF
}

case4() {
	local b
	b=$(bdev_of $NQN2) || { echo "no block device"; return 1; }
	fio_v c4 "$b" 16M --bsrange=512-7680 || return 1
	odd_io "$b" || return 1
	disconnect $NQN2 && port_unlink $NQN2 && subsys_del $NQN2 || return 1
	modprobe -r null_blk
}

case5() {
	local c b
	c=$(ctrl_of $NQN1) && b=$(bdev_of $NQN1) || { echo "no controller"; return 1; }
	fio_bg c5 "$b" 20
	sleep 5
	kill -0 "$fio_pid" 2>/dev/null || echo "(fio ended before the reset)"
	bounded 120 nvme reset "/dev/$c" || { echo "nvme reset /dev/$c failed"; fio_bg_end c5; return 1; }
	wait_for 60 ctrl_live "$c" || { echo "$c: state $(ctrl_state "$c") after the reset"; fio_bg_end c5; return 1; }
	fio_bg_end c5 || return 1
	wait_for 30 bdev_of $NQN1 >/dev/null && fio_v c5-after "$(bdev_of $NQN1)" 32M
}

case6() {
	local before i
	disconnect $NQN1 || return 1
	wait_for 15 bash -c "rdma res show | grep -q ' $DEV: '"
	before=$(res_line $DEV)
	for ((i = 1; i <= 20; i++)); do
		connect $NQN1 || { echo "cycle $i: connect failed"; return 1; }
		ctrl_live "$(ctrl_of $NQN1)" || { echo "cycle $i: not live"; return 1; }
		disconnect $NQN1 || { echo "cycle $i: disconnect failed"; return 1; }
	done
	# The target releases its queues from a work item: give it a moment.
	# shellcheck disable=SC2317
	_same() { [ "$(res_line "$DEV")" = "$before" ]; }
	wait_for 15 _same || { echo "before: $before"; echo "after:  $(res_line $DEV)"; return 1; }
	echo "after 20 cycles: $before"
	connect $NQN1
}

case7() {
	local c b t0
	c=$(ctrl_of $NQN1) && b=$(bdev_of $NQN1) || { echo "no controller"; return 1; }
	fio_bg c7 "$b" 25
	sleep 4
	port_unlink $NQN1 || { fio_bg_end c7; return 1; }
	t0=$SECONDS
	wait_for 30 ctrl_not_live "$c" || { echo "$c stayed live with the port gone"; port_link $NQN1; fio_bg_end c7; return 1; }
	echo "$c: $(ctrl_state "$c") $((SECONDS - t0)) s after the port went"
	sleep 3
	echo "$c: $(ctrl_state "$c") before the port comes back"
	port_link $NQN1 || { fio_bg_end c7; return 1; }
	t0=$SECONDS
	wait_for 30 ctrl_live "$c" || { echo "$c: state $(ctrl_state "$c") 30 s after the port came back"; fio_bg_end c7; return 1; }
	echo "$c: live again $((SECONDS - t0)) s after the port came back"
	fio_bg_end c7 || return 1
	fio_v c7-after "$(bdev_of $NQN1)" "$C7_AFTER"
}

case8() {
	local c b rc=0
	c=$(ctrl_of $NQN1) && b=$(bdev_of $NQN1) && ctrl_live "$c" || { echo "no live controller"; rc=1; }
	# Unverified I/O: once the namespace goes, its capacity is 0, where
	# direct reads return 0 bytes (end of device) and fio would check
	# buffers that no read filled.
	[ -n "$b" ] && fio_bg c8 "$b" "$C8_SECS" --rw=randrw --verify=0 && sleep 3
	bounded 120 rdma link delete $DEV || { echo "rdma link delete $DEV failed"; rc=1; }
	wait_for 60 no_ctrl_of $NQN1 || { echo "the controller stays after the device went"; rc=1; }
	dev_gone $DEV || { echo "$DEV is still there"; rc=1; }
	[ -n "$b" ] && { fio_bg_end c8 || rc=1; }
	bounded 60 nvme disconnect -n $NQN1 >/dev/null
	bounded 60 target_down || { echo "the target does not go"; rc=1; }
	umount "$mnt" || rc=1
	bounded 60 modprobe -r nvme_rdma nvmet_rdma || { echo "nvme_rdma or nvmet_rdma does not unload"; rc=1; }
	bounded 60 modprobe -r nvmet nvme_fabrics || rc=1
	bounded 60 modprobe -r "$drv" || { echo "$drv does not unload"; rc=1; }
	return $rc
}

case9() {
	local out
	out=$(rdma res show 2>&1; for t in qp cq mr pd cm_id srq ctx; do rdma res show "$t" 2>&1; done)
	if [ -n "$out" ]; then
		echo "rdma res show lists:"
		printf '%s\n' "$out"
		return 1
	fi
	no_kernel_report "$phase_mark"
}

# run_case N: case N on $drv; its verdict goes to res[$drv.N] and, for
# rrxe, to a KTAP line (rdma_rxe's are notes).
declare -A res
run_case() {
	local n=$1 t0=$SECONDS rc mark log=$logdir/$drv.case$1.log
	mark=$(kmsg_mark)
	"case$n" >"$log" 2>&1
	rc=$?
	no_kernel_report "$mark" >>"$log" || rc=1
	res[$drv.$n]=$rc
	local d=$((SECONDS - t0)) base
	if [ "$drv" = rdma_rxe ]; then
		if [ $rc = 0 ]; then
			echo "# rdma_rxe: case $n ok in $d s: ${DESC[$n]}"
		else
			echo "# rdma_rxe: case $n FAILED in $d s (a note, not a failure): ${DESC[$n]}"
			tail -n 30 "$log" | sed 's/^/#   /'
		fi
		return
	fi
	base=ok
	[ "${res[rdma_rxe.$n]:-}" = 0 ] || base=failed
	[ -n "${res[rdma_rxe.$n]:-}" ] || base="not run"
	if [ $rc = 0 ]; then
		ktap_test_pass "rrxe: case $n: ${DESC[$n]} ($d s; rdma_rxe: $base)"
		grep -E '^fio: |^after 20|live again|odd transfers' "$log" | sed 's/^/#   /'
	else
		ktap_test_fail "rrxe: case $n: ${DESC[$n]} ($d s; rdma_rxe: $base)"
		tail -n 40 "$log" | sed 's/^/# /'
	fi
}

# A clean start: no test netdev, no NVMe-oF module, neither driver.
clean_start() {
	cleanup_net
	target_down >/dev/null 2>&1
	modprobe -r nvme_rdma nvmet_rdma nvmet nvme_fabrics null_blk 2>/dev/null
	mountpoint -q "$mnt" && umount "$mnt"
	unload_rrxe
	modprobe -r rdma_rxe 2>/dev/null
}

for drv in $DRIVERS; do
	clean_start
	t_phase=$SECONDS
	phase_mark=$(kmsg_mark)
	for n in $CASES; do
		run_case "$n"
	done
	echo "# $drv: the phase took $((SECONDS - t_phase)) s"
done

lost=
for n in $CASES; do
	[ "${res[rdma_rxe.$n]:-}" = 0 ] && [ "${res[rrxe.$n]:-}" != 0 ] && lost+=" $n"
done
if [[ " $DRIVERS " != *" rdma_rxe "* ]] || [[ " $DRIVERS " != *" rrxe "* ]]; then
	ktap_test_skip "rrxe passes every case rdma_rxe passes (not both drivers ran: $DRIVERS)"
elif [ -z "$lost" ]; then
	ktap_test_pass "rrxe passes every case rdma_rxe passes"
else
	ktap_test_fail "rrxe passes every case rdma_rxe passes (lost:$lost)"
fi

clean_start
rmdir "$mnt" 2>/dev/null
echo "# logs: $logdir"
ktap_finished
