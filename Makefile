# SPDX-License-Identifier: GPL-2.0
#
# make [KDIR=/path/to/linux-7.3-build]   build rrxe.ko against a 7.3 tree with
#                                         CONFIG_RUST=y (default: the cached
#                                         test kernel, built on demand)
# make run                                set up, build, boot a guest, show rrxe0
# make test                               set up, build, run every test
# make clean

RRXE_TOOLS_DIR := $(CURDIR)/tools
SHELL := /bin/bash

ifeq ($(KDIR),)
KDIR = $(shell $(RRXE_TOOLS_DIR)/build-kernel --print-dir)
endif

# Kernel-side toolchain: Debian's rustc (with rust-src) and our bindgen.
include_lib = source $(RRXE_TOOLS_DIR)/lib.sh
RUSTC ?= /usr/bin/rustc
KMAKE_ARGS = RUSTC=$(RUSTC) RUSTDOC=/usr/bin/rustdoc \
	BINDGEN=$$($(include_lib) && echo $$BINDGEN) \
	LIBCLANG_PATH=/usr/lib/llvm-19/lib \
	$$(grep -q '^CONFIG_CC_IS_CLANG=y' $(KDIR)/.config && echo LLVM=-19)

.PHONY: all modules setup run test clean kernel debug-kernel

all: modules

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KMAKE_ARGS) modules

setup:
	$(RRXE_TOOLS_DIR)/setup-host

kernel: setup
	$(RRXE_TOOLS_DIR)/build-kernel

debug-kernel: setup
	$(RRXE_TOOLS_DIR)/build-kernel --debug

run: setup
	$(RRXE_TOOLS_DIR)/run-demo

test: setup
	$(RRXE_TOOLS_DIR)/run-tests

clean:
	-[ -z "$(KDIR)" ] || $(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -f rust/bindings/bindings_generated.rs rust/bindings/.bindings_generated.rs.cmd
	rm -rf host/target
