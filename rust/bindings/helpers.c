// SPDX-License-Identifier: GPL-2.0
/*
 * One-line C wrappers for static inlines and macros that Rust cannot call,
 * plus what only C macros can declare: the string module parameter (and
 * dm_size beside it) and the uverbs methods and attributes of rrxe-abi.h.
 * The network glue (UDP tunnel sockets, receive queue, skb transmission)
 * lives in net_glue.c.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/if_vlan.h>
#include <net/addrconf.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_addr.h>
#include <rdma/uverbs_ioctl.h>
#define UVERBS_MODULE_NAME rrxe
#include <rdma/uverbs_named_ioctl.h>
#include <rdma/uverbs_std_types.h>
#include <rdma/ib_umem.h>
#include <uapi/rdma/rrxe-abi.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <linux/vmalloc.h>
#include <linux/random.h>
#include <linux/mm.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>

#include "helpers.h"

static char link_type[16] = "rrxe";
module_param_string(link_type, link_type, sizeof(link_type), 0444);
MODULE_PARM_DESC(link_type, "rdma link type to register (default rrxe; rxe for drop-in use)");

const char *rrxe_link_type(void) { return link_type; }

/*
 * Read when a device is created. Refused when set (at load or through
 * sysfs) unless whole pages up to RRXE_MAX_DM_SIZE; checked again at
 * creation.
 */
static unsigned long dm_size = 1UL << 20;

static int rrxe_dm_size_set(const char *s, const struct kernel_param *kp)
{
	unsigned long v;
	int err = kstrtoul(s, 0, &v);

	if (err)
		return err;
	if (v > RRXE_MAX_DM_SIZE || !PAGE_ALIGNED(v)) {
		pr_err_ratelimited("rrxe: dm_size must be a multiple of %lu up to %lu\n",
				   PAGE_SIZE, RRXE_MAX_DM_SIZE);
		return -EINVAL;
	}
	WRITE_ONCE(*(unsigned long *)kp->arg, v);
	return 0;
}

static const struct kernel_param_ops rrxe_dm_size_ops = {
	.set = rrxe_dm_size_set,
	.get = param_get_ulong,
};
module_param_cb(dm_size, &rrxe_dm_size_ops, &dm_size, 0644);
MODULE_PARM_DESC(dm_size, "device memory of each new device, in bytes, whole pages up to 1 GiB (default 1 MiB; 0: none)");

unsigned long rrxe_dm_size(void) { return READ_ONCE(dm_size); }

/* Debug lines, one bit a site (rust/rrxe/debug.rs names the bits). */
static unsigned long rrxe_debug;
module_param_named(debug, rrxe_debug, ulong, 0644);
MODULE_PARM_DESC(debug, "debug lines to print, one bit a site (see the admin guide; default 0: none)");

unsigned long rrxe_debug_mask(void) { return READ_ONCE(rrxe_debug); }

/* No ibdev printer at KERN_DEBUG is exported: this one is ibdev_info's. */
void rrxe_ibdev_dbg(const struct ib_device *ibdev, const void *args)
{ printk(KERN_DEBUG "rrxe %s: %pA", dev_name(&ibdev->dev), args); }

/*
 * The driver-namespace ids of rrxe-abi.h fit the room the core's radix keys
 * leave the driver (uapi_key_ioctl_method(), uapi_key_attr()): a method or
 * attribute id past it would make the uapi tree fail to build at device
 * registration instead of here.
 */
static_assert(RRXE_IB_DRIVER_NS_METHODS == UVERBS_API_METHOD_KEY_NUM_DRIVER);
static_assert(RRXE_IB_DRIVER_NS_ATTRS == (1 << (UVERBS_API_ATTR_KEY_BITS - 1)) - 1);
#define RRXE_IS_DRIVER_METHOD(id) ((u32)(id) >= UVERBS_ID_DRIVER_NS && \
	(u32)(id) < UVERBS_ID_DRIVER_NS + RRXE_IB_DRIVER_NS_METHODS)
#define RRXE_IS_DRIVER_ATTR(id) ((u32)(id) >= UVERBS_ID_DRIVER_NS && \
	(u32)(id) < UVERBS_ID_DRIVER_NS + RRXE_IB_DRIVER_NS_ATTRS)
static_assert(RRXE_IS_DRIVER_METHOD(RRXE_IB_METHOD_DM_QUERY));
static_assert(RRXE_IS_DRIVER_METHOD(RRXE_IB_METHOD_PD_QUERY));
static_assert(RRXE_IS_DRIVER_ATTR(RRXE_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET));
static_assert(RRXE_IS_DRIVER_ATTR(RRXE_IB_ATTR_QUERY_DM_REQ_HANDLE));
static_assert(RRXE_IS_DRIVER_ATTR(RRXE_IB_ATTR_QUERY_DM_RESP_MMAP_OFFSET));
static_assert(RRXE_IS_DRIVER_ATTR(RRXE_IB_ATTR_QUERY_DM_RESP_LENGTH));
static_assert(RRXE_IS_DRIVER_ATTR(RRXE_IB_ATTR_QUERY_PD_HANDLE));
/* The out values are __aligned_u64s: UVERBS_ATTR_TYPE(u64) takes 8 bytes. */
static_assert(sizeof_field(struct rrxe_dm_head, mmap_offset) == sizeof(__u64));

/*
 * DM_ALLOC also returns the page offset at which the allocating process
 * maps the new device memory.
 */
ADD_UVERBS_ATTRIBUTES_SIMPLE(
	rrxe_dm_alloc_attrs, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
	UVERBS_ATTR_PTR_OUT(RRXE_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET,
			    UVERBS_ATTR_TYPE(u64), UA_MANDATORY));

/*
 * DM_QUERY: the mmap offset and length of a DM handle, so that a context
 * imported from a duplicate of the command fd (ibv_import_dm) can map
 * memory another context of the same file allocated.
 */
static int UVERBS_HANDLER(RRXE_IB_METHOD_DM_QUERY)(struct uverbs_attr_bundle *attrs)
{
	struct ib_dm *ibdm = uverbs_attr_get_obj(attrs, RRXE_IB_ATTR_QUERY_DM_REQ_HANDLE);
	struct rrxe_dm_head *dm = container_of(ibdm, struct rrxe_dm_head, ib);
	u64 length = ibdm->length;
	int ret;

	ret = uverbs_copy_to(attrs, RRXE_IB_ATTR_QUERY_DM_RESP_MMAP_OFFSET,
			     &dm->mmap_offset, sizeof(dm->mmap_offset));
	if (ret)
		return ret;
	return uverbs_copy_to(attrs, RRXE_IB_ATTR_QUERY_DM_RESP_LENGTH, &length,
			      sizeof(length));
}

DECLARE_UVERBS_NAMED_METHOD(
	RRXE_IB_METHOD_DM_QUERY,
	UVERBS_ATTR_IDR(RRXE_IB_ATTR_QUERY_DM_REQ_HANDLE, UVERBS_OBJECT_DM,
			UVERBS_ACCESS_READ, UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(RRXE_IB_ATTR_QUERY_DM_RESP_MMAP_OFFSET,
			    UVERBS_ATTR_TYPE(u64), UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(RRXE_IB_ATTR_QUERY_DM_RESP_LENGTH,
			    UVERBS_ATTR_TYPE(u64), UA_MANDATORY));

DECLARE_UVERBS_GLOBAL_METHODS(UVERBS_OBJECT_DM,
			      &UVERBS_METHOD(RRXE_IB_METHOD_DM_QUERY));

/*
 * PD_QUERY: nothing to report (rxe's PDs carry no driver data), but the
 * core has checked that the handle names a PD of this file, so that
 * ibv_import_pd() refuses anything else at once.
 */
static int UVERBS_HANDLER(RRXE_IB_METHOD_PD_QUERY)(struct uverbs_attr_bundle *attrs)
{
	return 0;
}

DECLARE_UVERBS_NAMED_METHOD(
	RRXE_IB_METHOD_PD_QUERY,
	UVERBS_ATTR_IDR(RRXE_IB_ATTR_QUERY_PD_HANDLE, UVERBS_OBJECT_PD,
			UVERBS_ACCESS_READ, UA_MANDATORY));

DECLARE_UVERBS_GLOBAL_METHODS(UVERBS_OBJECT_PD,
			      &UVERBS_METHOD(RRXE_IB_METHOD_PD_QUERY));

static const struct uapi_definition rrxe_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &rrxe_dm_alloc_attrs),
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(UVERBS_OBJECT_DM),
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(UVERBS_OBJECT_PD),
	{},
};

const struct uapi_definition *rrxe_driver_def(void) { return rrxe_uapi_defs; }

/*
 * One-line wrappers of static inlines and macros (helpers.h), named after
 * what they wrap.
 */
struct net_device *rust_helper_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info)
{ return netdev_notifier_info_to_dev(info); }

bool rust_helper_is_vlan_dev(const struct net_device *dev) { return is_vlan_dev(dev); }

struct net *rust_helper_dev_net(const struct net_device *dev) { return dev_net(dev); }

void rust_helper_dev_hold(struct net_device *dev) { dev_hold(dev); }

void rust_helper_dev_put(struct net_device *dev) { dev_put(dev); }

const char *rust_helper_netdev_name(const struct net_device *dev) { return netdev_name(dev); }

bool rust_helper_netif_running(const struct net_device *dev) { return netif_running(dev); }

bool rust_helper_netif_carrier_ok(const struct net_device *dev) { return netif_carrier_ok(dev); }

unsigned int rust_helper_num_possible_cpus(void) { return num_possible_cpus(); }

void rust_helper_cond_resched(void) { cond_resched(); }

ktime_t rust_helper_ktime_get_coarse(void) { return ktime_get_coarse(); }

void rust_helper_init_irq_work(struct irq_work *work, void (*func)(struct irq_work *))
{ init_irq_work(work, func); }

bool rust_helper_irq_work_is_busy(struct irq_work *work) { return irq_work_is_busy(work); }

int rust_helper_printk_ratelimit(void) { return printk_ratelimit(); }

void *rust_helper___vmalloc(unsigned long size, gfp_t gfp_mask) { return __vmalloc(size, gfp_mask); }

void rust_helper_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{ vm_flags_set(vma, flags); }

bool rust_helper_mem_cgroup_is_root(struct mem_cgroup *memcg) { return mem_cgroup_is_root(memcg); }

void rust_helper_mem_cgroup_put(struct mem_cgroup *memcg) { mem_cgroup_put(memcg); }

struct mem_cgroup *rust_helper_set_active_memcg(struct mem_cgroup *memcg)
{ return set_active_memcg(memcg); }

int rust_helper_ib_no_udata_io(struct ib_udata *udata) { return ib_no_udata_io(udata); }

bool rust_helper_ib_device_try_get(struct ib_device *dev) { return ib_device_try_get(dev); }

struct page *rust_helper_sg_page_iter_page(struct sg_page_iter *piter)
{ return sg_page_iter_page(piter); }

int rust_helper_ib_umem_offset(struct ib_umem *umem) { return ib_umem_offset(umem); }

/*
 * Fields of struct net_device, which the kernel crate's bindings leave
 * opaque.
 */
unsigned int rrxe_netdev_mtu(struct net_device *ndev) { return READ_ONCE(ndev->mtu); }

unsigned int rrxe_netdev_addr(struct net_device *ndev, u8 *buf, unsigned int len)
{ len = min_t(unsigned int, len, ndev->addr_len); memcpy(buf, ndev->dev_addr, len); return len; }

bool rrxe_netif_is_up(struct net_device *ndev) { return READ_ONCE(ndev->flags) & IFF_UP; }

struct device *rrxe_netdev_parent(struct net_device *ndev) { return ndev->dev.parent; }
