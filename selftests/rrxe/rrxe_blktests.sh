#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A few of blktests' own tests, unmodified, on rrxe in drop-in mode
# (tools/blktests --guest, as `make blktests` runs them, with the one
# driver): over NVMe/RDMA a connect, verified I/O, a reset and reconnects
# under I/O, and one SRP test. Each blktests result is a test here: it
# must pass (a skip is a skip, with blktests' reason). Then drop-in mode
# must have held (rrxe answered `modprobe rdma_rxe`, rdma_rxe never came
# in), rrxe must unload, and the kernel must have logged no report.
# `make blktests` runs the whole of the nvme and srp groups on siw,
# rdma_rxe and rrxe. Needs the blktests kernel:
#   tools/guest --blktests -- selftests/rrxe/run.sh rrxe_blktests.sh
set -uo pipefail
. "$(dirname "$0")/lib.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
tests=(nvme/004 nvme/010 nvme/022 nvme/040 srp/001)

ktap_print_header
if [ -z "${RRXE_BLKTESTS:-}" ] || [ ! -x "$RRXE_BLKTESTS/check" ]; then
	ktap_skip_all "no blktests copy (tools/blktests --prepare; BLKTESTS_DIR names a clone)"
	exit "$KSFT_SKIP"
fi

cleanup_net
unload_rrxe
modprobe -r rdma_rxe siw 2>/dev/null
mark=$(kmsg_mark)
out=$(mktemp -d "$RRXE_OUT/blktests.XXXXXX")
# A smaller namespace than blktests' 1G: nvme/010 verifies the whole of it,
# which took 5 min a run under TCG at 1G.
export NVME_IMG_SIZE=${NVME_IMG_SIZE:-128m}
t0=$SECONDS
BLKTESTS_DRIVERS=rrxe BLKTESTS_PASS_TIMEOUT=${BLKTESTS_PASS_TIMEOUT:-1200} \
	"$root/tools/blktests" --guest "$RRXE_BLKTESTS" "$out" "${tests[@]}" >"$out/guest.log" 2>&1
ktap_print_msg "blktests on rrxe: $((SECONDS - t0)) s (log in $out)"
"$root/tools/blktests" --table "$out" >"$out/table.md" 2>&1
sed 's/^/# /' "$out/table.md"

# One line a result: the tests and blktests' conditions (tr=rdma, ...).
results=()
if [ -s "$out/results.tsv" ]; then
	mapfile -t results < <(awk -F '\t' '$1 == "rrxe"' "$out/results.tsv")
fi
ktap_set_plan $(( ${#results[@]} + 4 ))
seen=" "
for r in "${results[@]}"; do
	IFS=$'\t' read -r _ name st reason <<<"$r"
	seen+="${name%% *} "
	case $st in
	pass) ktap_test_pass "blktests $name" ;;
	skip) ktap_test_skip "blktests $name: $reason" ;;
	*)
		ktap_test_fail "blktests $name ($st)"
		grep -A 12 -F "$name" "$out/rrxe.log" | sed 's/^/# /' | head -n 30 ;;
	esac
done
missing=
for t in "${tests[@]}"; do
	# A group blktests skipped as a whole shows as GROUP/***.
	[[ $seen == *" $t "* || $seen == *" ${t%%/*}/*** "* ]] || missing+=" $t"
done
check "every test ran or was skipped with a reason (missing:${missing:- none})" test -z "$missing"
# Each file has a line per ./check run: "ok", or what went wrong.
all_ok() { [ -s "$1" ] && ! grep -vx ok "$1"; }
check "drop-in mode held in each run" all_ok "$out/rrxe.dropin"
check "rrxe unloaded after each run" all_ok "$out/rrxe.unload"
check "no kernel report" no_kernel_report "$mark"
cleanup_net
ktap_finished
