# SPDX-License-Identifier: GPL-2.0
#
# make [KDIR=/path/to/linux-7.3-build]   build rrxe.ko in this directory
#                                         against a 7.3 tree with CONFIG_RUST=y
#                                         (default: the cached test kernel,
#                                         built on first use); a wrong tree
#                                         (not 7.3, no Rust, headers only,
#                                         another rustc) is refused at once,
#                                         with the reason (tools/check-kdir)
# make install                            build, then install rrxe.ko into
#                                         KDIR's kernel's module tree,
#                                         lib/modules/<its release>/updates,
#                                         and run depmod for that release;
#                                         INSTALL_MOD_PATH=/root/of/staging
#                                         installs under another root,
#                                         INSTALL_MOD_DIR into another
#                                         directory (extra)
# make install-dropin                     install, plus etc/modprobe.d/
#                                         rrxe-as-rdma_rxe.conf (under
#                                         INSTALL_MOD_PATH): rrxe answers for
#                                         rdma_rxe
# make uninstall                          remove what both installed (same
#                                         KDIR, INSTALL_MOD_PATH and
#                                         INSTALL_MOD_DIR), then depmod
# make run                                set up, build, boot a guest, show rrxe0
# make lint                               rustfmt, clippy (module and host crate)
#                                         and shellcheck; the first step of make test
# make test                               set up, lint, build, run the host crate's
#                                         tests, the selftests on the test kernel
#                                         and the hardening harness on the debug
#                                         kernel (KASAN, lockdep, kmemleak), which
#                                         it counts as skipped until the debug
#                                         kernel is built (make debug-kernel),
#                                         and a blktests subset once the
#                                         blktests kernel is (make
#                                         blktests-kernel)
# make test-debug                         all the selftests on the debug kernel
#                                         (about 80 min)
# make test-all                           both, and make blktests
# make blktests                           blktests' nvme group (over
#                                         NVMe/RDMA) and srp group,
#                                         unmodified, on siw, rdma_rxe and
#                                         rrxe in drop-in mode, in one
#                                         guest; prints a table of each
#                                         test on each driver
#                                         (tools/blktests; BLKTESTS_DIR
#                                         names a blktests clone)
# make bench                              the loopback bench (tools/bench), then
#                                         the wire bench (tools/bench --wire:
#                                         two namespaces over a veth, 5 reps
#                                         and a warm-up, two MTUs; about 4 h
#                                         on this 2-core host with other
#                                         guests running, estimated from a
#                                         --quick run: 540 perftest runs of
#                                         ~25 s), results and a PNG in
#                                         bench-out/; BENCH_* variables
#                                         (tools/bench-wire) pass through to
#                                         the guest, e.g. BENCH_REPS=3;
#                                         then the same grid between two
#                                         guests (tools/bench --pair): the
#                                         latency cells over a dgram link,
#                                         the bandwidth cells over the
#                                         lossless stream link, in
#                                         bench-out/pair-lat and pair-bw
# make kernel / make debug-kernel /       build (or reuse) a test kernel: the
#   make blktests-kernel                  test, debug or blktests kernel
# make clean

TOOLS := $(CURDIR)/tools
SHELL := /bin/bash

.PHONY: all modules install install-dropin uninstall setup lint run test test-debug test-all \
	clean kernel debug-kernel blktests-kernel bench blktests

all: modules

# Recipe openings. kdir_pick sets $kdir: KDIR, or the cached test kernel
# (built on first use); kdir_rel sets $rel, its kernelrelease (not the
# running kernel's). kbuild_setup checks the tree first (tools/check-kdir)
# and sets $kbuild, the arguments of a kbuild run against it.
kdir_pick = set -e; source $(TOOLS)/lib.sh; \
	kdir="$(KDIR)"; [ -n "$$kdir" ] || kdir=$$($(TOOLS)/build-kernel --print-dir)
kdir_rel = rel=$$($(MAKE) -s --no-print-directory -C "$$kdir" kernelrelease)
kbuild_setup = $(kdir_pick); $(TOOLS)/check-kdir "$$kdir"; \
	llvm=(); grep -q '^CONFIG_CC_IS_CLANG=y' "$$kdir/.config" && llvm=(LLVM=-19); \
	kbuild=(-C "$$kdir" M=$(CURDIR) "$${llvm[@]}" RUSTC="$$RUSTC" RUSTDOC="$$RUSTDOC" \
		BINDGEN="$$BINDGEN" LIBCLANG_PATH="$$LIBCLANG_PATH")

# Kbuild installs under INSTALL_MOD_PATH from KDIR's directory: make it
# absolute. depmod lives in /sbin, which a user's PATH may lack.
INSTALL_MOD_DIR ?= updates
mod_root = $(if $(INSTALL_MOD_PATH),$(abspath $(INSTALL_MOD_PATH)))
depmod = PATH="$$PATH:/usr/sbin:/sbin" depmod -a $(if $(mod_root),-b "$(mod_root)") "$$rel"
dropin = $(TOOLS)/modprobe/rrxe-as-rdma_rxe.conf

modules:
	@$(kbuild_setup); $(MAKE) "$${kbuild[@]}" modules

install: modules
	@$(kbuild_setup); $(kdir_rel); \
	$(MAKE) "$${kbuild[@]}" INSTALL_MOD_PATH="$(mod_root)" INSTALL_MOD_DIR="$(INSTALL_MOD_DIR)" \
		modules_install; \
	$(depmod); \
	echo "rrxe: installed in $(mod_root)/lib/modules/$$rel/$(INSTALL_MOD_DIR)"

install-dropin: install
	install -D -m 0644 $(dropin) "$(mod_root)/etc/modprobe.d/$(notdir $(dropin))"

uninstall:
	@$(kdir_pick); $(kdir_rel); dir="$(mod_root)/lib/modules/$$rel"; \
	rm -fv "$$dir/$(INSTALL_MOD_DIR)"/rrxe.ko{,.gz,.xz,.zst} \
		"$(mod_root)/etc/modprobe.d/$(notdir $(dropin))"; \
	rmdir --ignore-fail-on-non-empty "$$dir/$(INSTALL_MOD_DIR)" 2>/dev/null || true; \
	if [ -d "$$dir" ]; then $(depmod); fi

setup:
	$(TOOLS)/setup-host

kernel: setup
	$(TOOLS)/build-kernel

debug-kernel: setup
	$(TOOLS)/build-kernel --debug

blktests-kernel: setup
	$(TOOLS)/build-kernel --blktests

lint: setup
	$(TOOLS)/lint

run: setup
	$(TOOLS)/run-demo

# tools/run-tests builds rdma-core 59 itself, beside the test kernel (its
# ninja at nice 10 takes the core the kernel's single-threaded rustc runs
# leave idle), so setup-host leaves it out there.
test test-debug test-all: export RRXE_RDMA_CORE_LATER := 1

test: setup
	$(TOOLS)/run-tests

test-debug: setup
	$(TOOLS)/run-tests --debug

test-all: setup
	$(TOOLS)/run-tests --all

blktests: setup
	$(TOOLS)/blktests

# The wire bench's guest gets BENCH_TIMEOUT seconds (default 6 hours).
# The bench measures the module users build, without the selftests' hooks.
bench: export RRXE_TEST_HOOKS := 0
bench: setup
	@set -uo pipefail; out=$(CURDIR)/bench-out rc=0; mkdir -p "$$out/loopback" "$$out/wire"; \
	vars=(); while IFS= read -r v; do vars+=("$$v"); done < <(env | grep -E '^(BENCH_|RRXE_LINK_TYPE=)' | grep -v '^BENCH_TIMEOUT='); \
	{ printf 'date\t%s\n' "$$(date -u +%F)"; \
	  printf 'host_cpu\t"%s", %s cores\n' "$$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)" "$$(nproc)"; \
	  printf 'commit\t%s\n' "$$(git describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)"; \
	  printf 'command\t%s\n' "$${vars[*]}$${vars:+ }make bench"; } >"$$out/meta.txt"; \
	RRXE_OUT="$$out/loopback" $(TOOLS)/guest -- tools/bench | tee "$$out/loopback/bench.txt" || rc=1; \
	RRXE_OUT="$$out/wire" RRXE_GUEST_TIMEOUT=$${BENCH_TIMEOUT:-21600} \
		$(TOOLS)/guest -- env "$${vars[@]}" BENCH_OUT="$$out/wire" tools/bench --wire | \
		tee "$$out/wire/bench-wire.txt" || rc=1; \
	/usr/bin/python3 $(TOOLS)/bench-report "$$out/wire" --png >/dev/null || rc=1; \
	for g in lat:dgram bw:stream; do \
		RRXE_OUT="$$out/pair-guests-$${g%%:*}" RRXE_PAIR_LINK=$${g#*:} RRXE_GUEST_TIMEOUT=$${BENCH_TIMEOUT:-21600} \
			$(TOOLS)/guest --pair -- env "$${vars[@]}" BENCH_GRID=$${g%%:*} BENCH_OUT="$$out/pair-$${g%%:*}" \
			tools/bench --pair | tee "$$out/bench-pair-$${g%%:*}.txt" || rc=1; \
		/usr/bin/python3 $(TOOLS)/bench-report "$$out/pair-$${g%%:*}" --png >/dev/null || rc=1; \
	done; \
	/usr/bin/python3 $(TOOLS)/bench-doc "$$out" || rc=1; \
	echo "bench: tables in $$out/loopback/bench.txt, $$out/wire/bench-wire.txt, $$out/bench-pair-lat.txt and $$out/bench-pair-bw.txt"; \
	echo "bench: Documentation/bench/results.md's tables rewritten (git diff shows them)"; \
	echo "bench: plots in $$out/wire/, $$out/pair-lat/ and $$out/pair-bw/ (bench-wire.png)"; \
	exit $$rc

clean:
	find . -path ./host/target -prune -o \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' \
		-o -name '*.mod' -o -name '*.mod.c' -o -name '*.d' \) -type f -print0 | xargs -0 rm -f
	rm -f modules.order Module.symvers rust/bindings/bindings_generated.rs
	rm -rf host/target
