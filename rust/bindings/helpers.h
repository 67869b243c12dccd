/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One-line C wrappers for static inlines and macros that Rust cannot call.
 * No logic lives here.
 */
#ifndef RRXE_HELPERS_H
#define RRXE_HELPERS_H

#include <linux/irq_work.h>
#include <linux/mm_types.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>

struct mem_cgroup;
struct vm_area_struct;
struct uverbs_attr_bundle;

/*
 * The start of every DM the driver allocates (the Rust `Dm` asserts this
 * layout): the core's object, then the mmap offset DM_ALLOC returned.
 */
struct rrxe_dm_head {
	struct ib_dm ib;
	u64 mmap_offset;
};

/* The largest dm_size (the parameter's bound; logic::dm::MAX_DM_SIZE). */
#define RRXE_MAX_DM_SIZE (1UL << 30)
unsigned long rrxe_dm_size(void);
unsigned long rrxe_debug_mask(void);
void rrxe_ibdev_dbg(const struct ib_device *ibdev, const void *args);
const struct uapi_definition *rrxe_driver_def(void);

/*
 * One-line wrappers of static inlines and macros, each named after what it
 * wraps: rust_helper_<name> here, bindings::<name> in Rust (Kbuild's sed, as
 * in the kernel's rust/Makefile). Same arguments and result as the kernel's,
 * but for cond_resched(), whose result no caller wants.
 */
struct net_device *rust_helper_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info);
bool rust_helper_is_vlan_dev(const struct net_device *dev);
struct net *rust_helper_dev_net(const struct net_device *dev);
void rust_helper_dev_hold(struct net_device *dev);
void rust_helper_dev_put(struct net_device *dev);
const char *rust_helper_netdev_name(const struct net_device *dev);
bool rust_helper_netif_running(const struct net_device *dev);
bool rust_helper_netif_carrier_ok(const struct net_device *dev);
unsigned int rust_helper_num_possible_cpus(void);
void rust_helper_cond_resched(void);
ktime_t rust_helper_ktime_get_coarse(void);
void rust_helper_init_irq_work(struct irq_work *work, void (*func)(struct irq_work *));
bool rust_helper_irq_work_is_busy(struct irq_work *work);
int rust_helper_printk_ratelimit(void);
void *rust_helper___vmalloc(unsigned long size, gfp_t gfp_mask);
void rust_helper_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags);
bool rust_helper_mem_cgroup_is_root(struct mem_cgroup *memcg);
void rust_helper_mem_cgroup_put(struct mem_cgroup *memcg);
struct mem_cgroup *rust_helper_set_active_memcg(struct mem_cgroup *memcg);
int rust_helper_ib_no_udata_io(struct ib_udata *udata);
bool rust_helper_ib_device_try_get(struct ib_device *dev);
struct sg_page_iter;
struct page *rust_helper_sg_page_iter_page(struct sg_page_iter *piter);
int rust_helper_ib_umem_offset(struct ib_umem *umem);

/*
 * Fields of struct net_device, which the kernel crate's bindings leave
 * opaque (for rust/net/netdev.rs).
 */
unsigned int rrxe_netdev_mtu(struct net_device *ndev);
unsigned int rrxe_netdev_addr(struct net_device *ndev, u8 *buf, unsigned int len);
bool rrxe_netif_is_up(struct net_device *ndev);
struct device *rrxe_netdev_parent(struct net_device *ndev);

const char *rrxe_link_type(void);

#endif
