/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * The user ABI rrxe adds to rdma_rxe's (rdma_user_rxe.h, unchanged): the
 * driver-namespace ioctl methods and attributes behind device memory and
 * the import verbs, and the word of a send WQE that names an XRC SRQ.
 * rrxe registers as an rxe device and is driven by the rxe provider, so
 * these ids share rdma_rxe's driver namespace.
 *
 * Ids. An id with UVERBS_ID_DRIVER_NS set belongs to the driver; the core
 * hashes the rest into a radix key of bounded width, so an object has at
 * most 8 driver methods (UVERBS_ID_DRIVER_NS + 0..7, the core's
 * UVERBS_API_METHOD_KEY_NUM_DRIVER) and a method at most 31 driver
 * attributes (UVERBS_ID_DRIVER_NS + 0..30, what uapi_key_attr() accepts).
 * Drivers number both from the bottom, as mlx5_user_ioctl_cmds.h does
 * (and from UVERBS_ID_DRIVER_NS_WITH_UHW on methods that carry udata).
 * rdma_rxe has none today; one it adds would be UVERBS_ID_DRIVER_NS on the
 * object or core method it extends. rrxe therefore takes the top of each
 * range wherever its ids share a table with rdma_rxe's: its methods on the
 * core's DM and PD objects, and its attribute on the core's DM_ALLOC. A
 * provider that asks one driver for the other's method then fails with
 * EPROTONOSUPPORT instead of running something else. The attributes of
 * rrxe's own methods are in a table of their own and start at the bottom.
 *
 * Every value is one attribute: handles as idr attributes, results as
 * __aligned_u64 out pointers of exactly that size. No structure is
 * exchanged. The ids are written (1U << UVERBS_ID_NS_SHIFT) + n, the
 * kernel's UVERBS_ID_DRIVER_NS + n, as mlx5_user_ioctl_cmds.h writes its
 * own: older copies of ib_user_ioctl_cmds.h lack UVERBS_ID_DRIVER_NS.
 */

#ifndef RRXE_ABI_USER_H
#define RRXE_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

/* How many driver ids the core has room for, per object and per method */
enum {
	RRXE_IB_DRIVER_NS_METHODS = 8,
	RRXE_IB_DRIVER_NS_ATTRS = 31,
};

/*
 * On UVERBS_METHOD_DM_ALLOC: the offset at which the allocating process
 * maps the new device memory (whole pages) on the command fd
 * (__aligned_u64, out, mandatory).
 */
enum rrxe_ib_alloc_dm_attrs {
	RRXE_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET =
		(1U << UVERBS_ID_NS_SHIFT) + RRXE_IB_DRIVER_NS_ATTRS - 1,
};

/*
 * On UVERBS_OBJECT_DM: where a DM handle of this command file maps, so
 * that a context imported from a duplicate of the fd (ibv_import_dm())
 * maps memory another context allocated.
 */
enum rrxe_ib_dm_methods {
	RRXE_IB_METHOD_DM_QUERY =
		(1U << UVERBS_ID_NS_SHIFT) + RRXE_IB_DRIVER_NS_METHODS - 1,
};

enum rrxe_ib_query_dm_attrs {
	RRXE_IB_ATTR_QUERY_DM_REQ_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	RRXE_IB_ATTR_QUERY_DM_RESP_MMAP_OFFSET,	/* __aligned_u64 */
	RRXE_IB_ATTR_QUERY_DM_RESP_LENGTH,	/* __aligned_u64, bytes */
};

/*
 * On UVERBS_OBJECT_PD: succeeds if the handle names a PD of this command
 * file, so that ibv_import_pd() refuses anything else at once. rxe's PDs
 * carry no driver data: nothing is returned.
 */
enum rrxe_ib_pd_methods {
	RRXE_IB_METHOD_PD_QUERY =
		(1U << UVERBS_ID_NS_SHIFT) + RRXE_IB_DRIVER_NS_METHODS - 1,
};

enum rrxe_ib_query_pd_attrs {
	RRXE_IB_ATTR_QUERY_PD_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
};

/*
 * XRC. The send WQE of an XRC initiator QP (struct rxe_send_wqe) names the
 * XRC SRQ its message is for in wr.reserved, the word after wr_id: the
 * SRQ number in its low 24 bits, the rest ignored. rdma_user_rxe.h has no
 * field for it and is left as it is; rrxe reads the word on XRC initiator
 * QPs only (stock librxe writes it zero and makes no XRC QP).
 */
enum {
	RRXE_XRC_SRQN_WQE_OFFSET = 8,	/* bytes into struct rxe_send_wr */
	RRXE_XRC_SRQN_MASK = 0xffffff,
};

#endif /* RRXE_ABI_USER_H */
