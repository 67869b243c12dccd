#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Lifecycle chaos: 100 cycles, each under traffic (two streams of random
# type, RC, UC, UD or XRC, between processes: one on a device over a dummy
# netdev, through its own GID, one between two devices over a veth pair
# whose ends are in two namespaces; XRC through librxe's XRC verbs, from
# rdma-core 59 with the tools/rdma-core/ series; the second stream of the
# first four cycles takes each type once), each with one disruption chosen
# at random (the first eleven cycles take each kind once, the critical
# trigger first; later ones take it one time in six):
#
#   peer_exit   a third stream on the dummy's device, through its own GID:
#               one UC SEND of 256 MiB, or 32 RC WRITEs or READs of 8 MiB,
#               path MTU 256, 1024 or 4096, to or from a QP of another
#               process that is SIGKILLed 0 to 299 ms after the post; the
#               streamer's last completion comes (within 60 s) with a
#               status that fits (UC succeeds; RC succeeds or gives up on
#               the peer), a READ that succeeded brought the right bytes
#   kill9       SIGKILL to a sender or a receiver
#   close       a process closes its context mid-stream
#   destroy_qp  a process destroys its QP (then exits)
#   destroy_cq  ... its QP, then its CQ
#   destroy_srq ... its QP, then its SRQ (receivers from an SRQ), its CQ
#   linkdel     rdma link delete of a device
#   downup      a netdev down, then up
#   unreg       a netdev deleted (the dummy, or the veth pair)
#   netns       a namespace holding a device deleted
#   rmmod       rmmod rrxe with every device and stream up: it succeeds
#               (rrxe disassociates the contexts; the streams get errors)
#
# After each cycle: every traffic process is gone within 10 s of SIGTERM
# (none hangs), no message completed with wrong data, the devices are
# (re)created and each carries a verified RC, UC and UD transfer, and the
# kernel logged no report. At the end the peer of the critical trigger was
# killed mid-stream at least once, nothing of a process is left on any
# device and rmmod succeeds. The choices come from a seed it prints;
# RRXE_CHAOS_SEED=N repeats them. RRXE_CHAOS_CYCLES changes the count
# (default 100; 12 on the debug kernel, RRXE_DEBUG=1, which is 4 to 15
# times slower); RRXE_CHAOS_LOG=FILE gets each cycle's line as it ends.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

if [ "${RRXE_DEBUG:-0}" = 1 ]; then CYCLES=${RRXE_CHAOS_CYCLES:-12}; else CYCLES=${RRXE_CHAOS_CYCLES:-100}; fi
seed=${RRXE_CHAOS_SEED:-$(( ($(date +%s%N) / 1000) % 1000000 ))}
RANDOM=$seed
# The first cycles take each kind once, in this order; later ones draw
# from KINDS, where the critical trigger counts twice.
ONCE=(peer_exit kill9 close destroy_qp destroy_cq destroy_srq linkdel downup unreg netns rmmod)
KINDS=("${ONCE[@]}" peer_exit)

ktap_print_header
ktap_set_plan 6
# Whatever ends the script during a cycle, the cycle's log is shown.
exec 8>&1
in_cycle=0
on_exit() {
	[ "$in_cycle" = 1 ] && { echo "# the script ended during cycle $i:"; sed 's/^/# /' "$wd/fail" "$wd/d"; } >&8
}
trap on_exit EXIT
trap 'echo "# rrxe_chaos.sh: SIGTERM" >&8; exit 1' TERM
trap 'echo "# rrxe_chaos.sh: SIGHUP" >&8; exit 1' HUP
echo "# seed $seed (RRXE_CHAOS_SEED=$seed repeats the choices)"

cleanup_net
load_rrxe || ktap_exit_fail_msg "modprobe rrxe failed"
wd=$(mktemp -d)
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(prog rrxe_chaos_test) || ktap_exit_fail_msg "cannot build rrxe_chaos_test"

# The topology: rrxc0 on the dummy rrxtcd0 (10.81.0.1); rrxc1 on rrxtca in
# namespace rrxtna (10.81.1.1), rrxc2 on its veth peer rrxtcb in rrxtnb
# (10.81.1.2). Whatever a cycle took away comes back.
# ready DEV GID: DEV is ACTIVE and has the GID (sysfs, as "...:ffff:0a51:0001").
# Builtins only: a process start is slow in the guest.
ready() {
	local d=/sys/class/infiniband/$1/ports/1 st g i
	read -r _ st 2>/dev/null <"$d/state" && [ "$st" = ACTIVE ] || return 1
	for i in {0..15}; do
		read -r g 2>/dev/null <"$d/gids/$i" && [[ $g == *"$2" ]] && return 0
	done
	return 1
}

all_ready() { ready rrxc0 ffff:0a51:0001 && ready rrxc1 ffff:0a51:0101 && ready rrxc2 ffff:0a51:0102; }

# The netdevs are looked at first: a device whose netdev is going (its
# namespace deleted, which the kernel cleans up later) still looks ready
# until the cleanup runs, and the verify after a netns cycle once found
# it gone ("verify: cannot open rrxc1", on the debug kernel).
nets_up() {
	[ -e /sys/class/net/rrxtcd0 ] && ip -n rrxtna link show rrxtca >/dev/null 2>&1 &&
		ip -n rrxtnb link show rrxtcb >/dev/null 2>&1
}

ensure_up() {
	nets_up && all_ready && return 0
	load_rrxe || return 1
	# A device whose netdev went unregisters asynchronously (a
	# namespace's cleanup took 30 s in a busy debug guest, and the
	# debug kernel ran twice as slow in one cold CI run as in another).
	ip link show rrxtcd0 >/dev/null 2>&1 || wait_for 120 dev_gone rrxc0 || return 1
	if ! ip -n rrxtna link show rrxtca >/dev/null 2>&1 || ! ip -n rrxtnb link show rrxtcb >/dev/null 2>&1; then
		wait_for 120 dev_gone rrxc1 && wait_for 120 dev_gone rrxc2 || return 1
	fi
	if ! ip link show rrxtcd0 >/dev/null 2>&1; then
		mk_dummy rrxtcd0 && ip addr add 10.81.0.1/24 dev rrxtcd0 || return 1
	fi
	ip link set rrxtcd0 up || return 1
	dev_exists rrxc0 || link_add rrxc0 rrxtcd0 || return 1
	if ! ip -n rrxtna link show rrxtca >/dev/null 2>&1 || ! ip -n rrxtnb link show rrxtcb >/dev/null 2>&1; then
		local ns
		for ns in rrxtna rrxtnb; do
			[ -e "/run/netns/$ns" ] || ip netns add "$ns" || return 1
			ip -n "$ns" link del rrxtca 2>/dev/null
			ip -n "$ns" link del rrxtcb 2>/dev/null
		done
		ip link add rrxtca netns rrxtna type veth peer name rrxtcb netns rrxtnb &&
			ip -n rrxtna addr add 10.81.1.1/24 dev rrxtca &&
			ip -n rrxtnb addr add 10.81.1.2/24 dev rrxtcb || return 1
	fi
	ip -n rrxtna link set rrxtca up && ip -n rrxtnb link set rrxtcb up || return 1
	# nsenter: rdma needs only the namespace's netlink, not the
	# remounted /sys of ip netns exec (slow in the guest).
	dev_exists rrxc1 || nsenter --net=/run/netns/rrxtna rdma link add rrxc1 type "$RRXE_LINK_TYPE" netdev rrxtca || return 1
	dev_exists rrxc2 || nsenter --net=/run/netns/rrxtnb rdma link add rrxc2 type "$RRXE_LINK_TYPE" netdev rrxtcb || return 1
	wait_for 30 all_ready
}

# A process that has not exited (a zombie has).
alive() {
	local st
	read -r _ _ st _ 2>/dev/null <"/proc/$1/stat" || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

# start_stream N DEV_S DEV_R [TYPE]: a stream of TYPE (else random) and of
# random size, logged in $wd/s$N; its sender is the shell's child
# ${spid[N]}. ${typed[TYPE]} counts the streams of each type.
TYPES=(rc uc ud xrc)
declare -a spid streams
declare -A typed
start_stream() {
	local n=$1 t size srq=
	t=${4:-${TYPES[RANDOM % ${#TYPES[@]}]}}
	typed[$t]=$((${typed[$t]:-0} + 1))
	if [ "$t" = ud ]; then size=$((64 + RANDOM % 961)); else size=$((256 + RANDOM * 2 % 65280)); fi
	((RANDOM % 2)) && srq=srq
	echo "stream $n: $t $2 -> $3, $size bytes $srq" >"$wd/desc$n"
	# Emptied here: the background job opens its log only when it runs,
	# and the last cycle's pids must not be read meanwhile.
	: >"$wd/s$n"
	if [ "$t" = xrc ]; then
		# librxe's XRC verbs (rdma-core 59 with the series); the
		# receiver has an XRC SRQ always.
		# shellcheck source=tools/rdma-user-env
		(. "$root/tools/rdma-user-env" && exec "$bin" stream xrc "$2" "$3" "$size") \
			>"$wd/s$n" 2>&1 &
	else
		"$bin" stream "$t" "$2" "$3" "$size" $srq >"$wd/s$n" 2>&1 &
	fi
	spid[n]=$!
}

# start_long: stream 2, the critical trigger: a 256 MiB UC SEND, or RC
# WRITEs or READs, between two processes on rrxc0 through its own GID,
# the receiving process SIGKILLed 0 to 299 ms after the post (by the
# program, which knows when it posted).
start_long() {
	local modes=(uc rc_write rc_read) mtus=(256 1024 4096) m mtu k
	m=${modes[RANDOM % 3]}
	mtu=${mtus[RANDOM % 3]}
	k=$((RANDOM % 300))
	echo "stream 2: $m of 256 MiB on rrxc0, path MTU $mtu, the peer killed after $k ms" >"$wd/desc2"
	: >"$wd/s2"
	"$bin" long "$m" rrxc0 "$mtu" "$k" >"$wd/s2" 2>&1 &
	spid[2]=$!
}

# The pids (sender, receiver) of stream N, once it streams (builtins only:
# this runs often, and a process start is slow in the guest). Only pids
# of processes other than this shell are believed.
stream_pids() {
	local w a b
	while read -r w a b; do
		[ "$w" = pids ] || continue
		[[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ && $a -gt 1 && $b -gt 1 && $a != "$$" && $b != "$$" ]] || return 1
		echo "$a $b"
		return 0
	done <"$wd/s$1"
	return 1
}

# Stops every traffic process (SIGTERM) and waits at most 10 s for them;
# fails, with their kernel stacks, for any still there.
stop_traffic() {
	local n p all=() t hung=0
	for n in "${streams[@]}"; do
		all+=("${spid[n]}")
		# shellcheck disable=SC2207
		all+=($(stream_pids "$n"))
	done
	kill -TERM "${all[@]}" 2>/dev/null
	for ((t = 0; t < 200; t++)); do
		hung=0
		for p in "${all[@]}"; do alive "$p" && hung=1; done
		[ $hung = 0 ] && break
		sleep 0.05
	done
	for p in "${all[@]}"; do
		alive "$p" || continue
		echo "process $p ($(cat "/proc/$p/comm" 2>/dev/null)) hangs, state $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null):"
		sed 's/^/  /' "/proc/$p/stack" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	for n in "${streams[@]}"; do wait "${spid[n]}" 2>/dev/null; echo $? >"$wd/rc$n"; done
	return $hung
}

# disrupt KIND N SIDE I PAUSE: one disruption of stream N's sender (SIDE
# 0) or receiver (1), or of device, netdev or namespace I (0..2).
disrupt() {
	local n=$2 pids p devs=(rrxc0 rrxc1 rrxc2) nets=("" rrxtna rrxtnb) i=$4
	# shellcheck disable=SC2207
	pids=($(stream_pids "$n"))
	p=${pids[$3]:-}
	case $1 in
	kill9 | close | destroy_*)
		[ -n "$p" ] || { echo "stream $n has no pids: $(cat "$wd/s$n")"; return 1; }
		;;&
	kill9) echo "SIGKILL to $p (stream $n)"; kill -KILL "$p" ;;
	peer_exit)
		# The program kills the peer; its last completion comes
		# within 60 s (it fails itself otherwise).
		local t=$SECONDS
		while ((SECONDS - t < 70)) && alive "${spid[2]}"; do
			grep -q '^done ' "$wd/s2" && break
			sleep 0.1
		done
		cat "$wd/desc2"
		grep '^done ' "$wd/s2" || { echo "no last completion: $(cat "$wd/s2")"; return 1; }
		;;
	close) echo "close in $p (stream $n)"; kill -s RTMIN+1 "$p" ;;
	destroy_qp) echo "destroy QP in $p (stream $n)"; kill -s RTMIN+2 "$p" ;;
	destroy_cq) echo "destroy QP, CQ in $p (stream $n)"; kill -s RTMIN+3 "$p" ;;
	destroy_srq) echo "destroy QP, SRQ, CQ in $p (stream $n)"; kill -s RTMIN+4 "$p" ;;
	linkdel)
		echo "rdma link delete ${devs[i]}"
		timeout 30 rdma link delete "${devs[i]}" || { echo "rdma link delete ${devs[i]} failed"; return 1; }
		dev_gone "${devs[i]}" || { echo "${devs[i]} is still there"; return 1; }
		;;
	downup)
		local nd=(rrxtcd0 rrxtca rrxtcb) pre=()
		[ -n "${nets[i]}" ] && pre=(-n "${nets[i]}")
		echo "${nd[i]} down, up"
		ip "${pre[@]}" link set "${nd[i]}" down && sleep "0.$5" &&
			ip "${pre[@]}" link set "${nd[i]}" up || return 1
		;;
	unreg)
		if ((i == 0)); then
			echo "rrxtcd0 deleted"; ip link del rrxtcd0 || return 1
		else
			echo "the veth pair deleted"; ip -n rrxtna link del rrxtca || return 1
		fi
		;;
	netns)
		echo "namespace ${nets[1 + i % 2]} deleted"
		ip netns del "${nets[1 + i % 2]}" || return 1
		;;
	rmmod)
		# Today's rrxe: the module goes with every device, the
		# streams' contexts disassociated under them.
		echo "rmmod rrxe"
		timeout 60 modprobe -r rrxe || { echo "rmmod rrxe under traffic failed"; return 1; }
		! lsmod | grep -q '^rrxe ' || { echo "rrxe is still loaded"; return 1; }
		! compgen -G '/sys/class/infiniband/rrxc*' >/dev/null || { echo "devices are left"; return 1; }
		;;
	esac
}

# lap [NAME]: the time since the last lap goes into $laps under NAME.
lap() {
	local t=${EPOCHREALTIME/./}
	[ $# -gt 0 ] && laps+=" $1 $(((t - lap_t) / 1000)) ms"
	[ $# -gt 0 ] || laps=""
	lap_t=$t
}

# cycle N: traffic, one disruption, the checks. Fails (printing why) on
# the first thing wrong.
declare -A count
cycle() {
	local c=$1 kind mark t n rc
	kind=${KINDS[RANDOM % ${#KINDS[@]}]}
	((c <= ${#ONCE[@]})) && kind=${ONCE[c - 1]}
	streams=(0 1)
	count[$kind]=$((${count[$kind]:-0} + 1))
	mark=$(kmsg_mark)
	lap
	start_stream 0 rrxc0 rrxc0
	# The first cycles' second stream takes each type once.
	start_stream 1 rrxc1 rrxc2 "${TYPES[c - 1]:-}"
	[ "$kind" = peer_exit ] && { start_long; streams+=(2); }
	# A process start takes seconds in a busy guest: 30 s.
	t=$SECONDS
	while ((SECONDS - t < 30)); do
		stream_pids 0 >/dev/null && stream_pids 1 >/dev/null &&
			{ [ ${#streams[@]} = 2 ] || stream_pids 2 >/dev/null; } && break
		sleep 0.1
	done
	for n in "${streams[@]}"; do
		stream_pids "$n" >/dev/null && continue
		echo "cycle $c: the traffic did not start: $(cat "$wd/desc$n")"
		cat "$wd/s$n"
		stop_traffic
		return 1
	done
	lap started
	sleep 0.$((RANDOM % 4))
	disrupt "$kind" $((RANDOM % 2)) $((RANDOM % 2)) $((RANDOM % 3)) $((RANDOM % 3)) >"$wd/d" 2>&1
	rc=$?
	lap disrupted
	grep -q 'killed mid-stream: yes' "$wd/d" && mid=$((mid + 1))
	echo "# cycle $c: $kind: $(tr '\n' ' ' <"$wd/d")" >>"$wd/cycles"
	[ -n "${RRXE_CHAOS_LOG:-}" ] && tail -n 1 "$wd/cycles" >>"$RRXE_CHAOS_LOG"
	if [ $rc != 0 ]; then
		tail -n 1 "$wd/cycles"
		stop_traffic
		return 1
	fi
	sleep 0.2
	if ! stop_traffic; then
		echo "cycle $c ($kind): a process hangs"
		return 1
	fi
	lap stopped
	for n in "${streams[@]}"; do
		if grep -q CORRUPT "$wd/s$n" || [ "$(cat "$wd/rc$n")" = 1 ]; then
			echo "cycle $c ($kind): $(cat "$wd/desc$n") failed (sender exit $(cat "$wd/rc$n")):"
			cat "$wd/s$n"
			return 1
		fi
	done
	if ! ensure_up; then
		echo "cycle $c ($kind): the devices did not come back"
		return 1
	fi
	lap up
	timeout 60 "$bin" verify rrxc0 rrxc1 rrxc2 || { echo "cycle $c ($kind): no verified transfer"; return 1; }
	lap verified
	echo "#   $laps" >>"$wd/cycles"
	[ -n "${RRXE_CHAOS_LOG:-}" ] && tail -n 1 "$wd/cycles" >>"$RRXE_CHAOS_LOG"
	no_kernel_report "$mark" || { echo "cycle $c ($kind)"; return 1; }
}

ensure_up || ktap_exit_fail_msg "setup failed"
t0=$SECONDS
mid=0
done_cycles=0
ok=1
for ((i = 1; i <= CYCLES; i++)); do
	in_cycle=1
	if ! cycle "$i" >"$wd/fail" 2>&1; then
		in_cycle=0
		ok=0
		break
	fi
	in_cycle=0
	done_cycles=$i
done
tail -n "${RRXE_CHAOS_SHOW:-6}" "$wd/cycles" 2>/dev/null
for k in "${ONCE[@]}"; do printf '# %s: %d\n' "$k" "${count[$k]:-0}"; done
echo "# chaos cycles: $done_cycles in $((SECONDS - t0)) s"
echo "# streams: $(for t in "${TYPES[@]}"; do printf '%s %d ' "$t" "${typed[$t]:-0}"; done)"
every_type() {
	local t
	for t in "${TYPES[@]}"; do [ "${typed[$t]:-0}" -ge 1 ] || return 1; done
}
failed_cycle() { [ $ok = 1 ] && return 0; cat "$wd/fail"; return 1; }
check "$CYCLES cycles of traffic and a disruption: no process hangs, no wrong data, devices back with verified RC, UC, UD transfers, no kernel report" \
	failed_cycle
enough() { [ "$done_cycles" -ge "$CYCLES" ] && { [ "$CYCLES" -ge 100 ] || [ "${RRXE_DEBUG:-0}" = 1 ]; }; }
check "$done_cycles of $CYCLES cycles ran (100 on the test kernel)" enough
check "the critical trigger: ${count[peer_exit]:-0} cycles, the peer SIGKILLed mid-stream in $mid (at least one)" \
	test "$mid" -ge 1
no_leftovers() {
	local d
	for d in rrxc0 rrxc1 rrxc2; do
		dev_exists "$d" || continue
		no_user_objects "$d" || return 1
	done
	! rdma res show | grep -v ' ctx 0 ' | grep ' ctx '
}
check "nothing of the traffic processes is left on any device (rdma res)" no_leftovers
check "every stream type ran (XRC in ${typed[xrc]:-0} streams)" every_type
check "rmmod rrxe succeeds at the end and takes every device" \
	bash -c "modprobe -r rrxe && ! ls /sys/class/infiniband/ | grep -q '^rrxc'"

rm -rf "$wd"
cleanup_net
ktap_finished
