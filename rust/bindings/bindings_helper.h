/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel headers rrxe's bindings are generated from. Only declarations
 * from the RDMA headers (rrxe's own uapi header among them), helpers.h and
 * net_glue.h are emitted (see bindgen_parameters); everything else comes
 * from the kernel crate's own bindings.
 */
#include <linux/crc32.h>
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/vmalloc.h>
#include <net/addrconf.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/rdma_netlink.h>
#include <uapi/rdma/rdma_user_rxe.h>
#include <uapi/rdma/ib_user_verbs.h>
#include <uapi/rdma/rrxe-abi.h>

#include "helpers.h"
#include "net_glue.h"

/*
 * Constants only C can compute, seen from Rust under the kernel's names
 * (Kbuild strips the prefix, as the kernel's rust/Makefile does).
 */
const gfp_t RUST_CONST_HELPER___GFP_RETRY_MAYFAIL = __GFP_RETRY_MAYFAIL;
