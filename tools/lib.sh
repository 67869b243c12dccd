# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Common paths for rrxe's tools. Sourced, not run.
# Everything built or installed lives in $RRXE_CACHE, outside the repo.

RRXE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${RRXE_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/rrxe}"
RRXE_TOOLS=$RRXE_CACHE/tools
: "${LIBCLANG_PATH:=/usr/lib/llvm-19/lib}"
: "${RUSTC:=/usr/bin/rustc}"
: "${RUSTDOC:=/usr/bin/rustdoc}"
: "${BINDGEN:=$RRXE_TOOLS/bin/bindgen}"
# Debian's rustfmt and clippy match the kernel's rustc (rustfmt-web,
# rust-web-clippy); rustup's on PATH would not.
: "${RUSTFMT:=/usr/bin/rustfmt}"
: "${CLIPPY_DRIVER:=/usr/bin/clippy-driver}"
VNG=$RRXE_TOOLS/venv/bin/vng
# vng runs virtme-run and friends from PATH. cargo (for bindgen and the
# host crate) may live in rustup's directory without being on PATH.
PATH=$RRXE_TOOLS/venv/bin:$PATH
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
	PATH=$PATH:$HOME/.cargo/bin
fi
KSRC=$RRXE_CACHE/src/linux-source-7.3
export PATH RRXE_ROOT RRXE_CACHE RRXE_TOOLS LIBCLANG_PATH RUSTC RUSTDOC BINDGEN RUSTFMT CLIPPY_DRIVER VNG KSRC
