/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One-line C wrappers for static inlines and macros that Rust cannot call.
 * No logic lives here.
 */
#ifndef RRXE_HELPERS_H
#define RRXE_HELPERS_H

#include <linux/irq_work.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>

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

/*
 * Port counters: rdma_rxe's, in its order, then the packets dropped, by
 * reason, and the completions lost to full CQs (names in helpers.c).
 */
enum rrxe_hw_counter {
	RRXE_CNT_SENT_PKTS,
	RRXE_CNT_RCVD_PKTS,
	RRXE_CNT_DUP_REQ,
	RRXE_CNT_OUT_OF_SEQ_REQ,
	RRXE_CNT_RCV_RNR,
	RRXE_CNT_SND_RNR,
	RRXE_CNT_RCV_SEQ_ERR,
	RRXE_CNT_SENDER_SCHED,
	RRXE_CNT_RETRY_EXCEEDED,
	RRXE_CNT_RNR_RETRY_EXCEEDED,
	RRXE_CNT_COMP_RETRY,
	RRXE_CNT_SEND_ERR,
	RRXE_CNT_LINK_DOWNED,
	RRXE_CNT_RDMA_SEND,
	RRXE_CNT_RDMA_RECV,
	RRXE_CNT_SENT_BYTES,
	RRXE_CNT_RCVD_BYTES,
	RRXE_CNT_RCVD_ICRC_ERR,
	RRXE_CNT_RCVD_HDR_ERR,
	RRXE_CNT_RCVD_UNKNOWN_QP,
	RRXE_CNT_RCVD_PKEY_ERR,
	RRXE_CNT_RCVD_QKEY_ERR,
	RRXE_CNT_RCVD_PSN_ERR,
	RRXE_CNT_RCVD_QUEUE_FULL,
	RRXE_CNT_OUT_OF_BUFFER,
	RRXE_CNT_SEND_NO_ROUTE,
	RRXE_CNT_ODP_FAULT_DEFERRED,
	RRXE_CNT_CQ_OVERFLOW,
	RRXE_NUM_COUNTERS,
};

struct rdma_hw_stats *rrxe_alloc_hw_port_stats(void);
/* The largest dm_size (the parameter's bound; logic::dm::MAX_DM_SIZE). */
#define RRXE_MAX_DM_SIZE (1UL << 30)
unsigned long rrxe_dm_size(void);
unsigned long rrxe_debug_mask(void);
void rrxe_ibdev_dbg(const struct ib_device *ibdev, const void *args);
void rrxe_ib_set_dm_uapi(struct ib_device *ibdev);
struct ib_ucontext *rrxe_udata_to_ucontext(struct ib_udata *udata);
int rrxe_uverbs_copy_to_u64(struct uverbs_attr_bundle *attrs, u16 id, u64 val);

struct ib_device *rrxe_ib_alloc_device(size_t size, struct net *net);
struct net_device *rrxe_netdev_notifier_info_to_dev(void *info);
bool rrxe_is_vlan_dev(struct net_device *ndev);
struct net *rrxe_dev_net(struct net_device *ndev);
void rrxe_dev_put(struct net_device *ndev);
unsigned int rrxe_num_possible_cpus(void);
void rrxe_cond_resched(void);
s64 rrxe_ktime_get_coarse(void);
s64 rrxe_ktime_get(void);
s64 rrxe_tick_nsec(void);
void rrxe_init_irq_work(struct irq_work *work, void (*func)(struct irq_work *));
bool rrxe_irq_work_is_busy(struct irq_work *work);
u64 rrxe_bit_ull(unsigned int nr);
struct ib_device *rrxe_ib_device_get_by_netdev(struct net_device *ndev);
bool rrxe_netif_is_up(struct net_device *ndev);
unsigned int rrxe_netdev_mtu(struct net_device *ndev);
const char *rrxe_netdev_name(struct net_device *ndev);
unsigned int rrxe_netdev_addr(struct net_device *ndev, u8 *buf, unsigned int len);
bool rrxe_netif_port_active(struct net_device *ndev);
void rrxe_dev_hold(struct net_device *ndev);
void rrxe_ib_set_parent(struct ib_device *ibdev, struct net_device *ndev);
const char *rrxe_ib_device_name(struct ib_device *ibdev);
void *rrxe_vzalloc_account(unsigned long size);
unsigned long rrxe_vma_start(struct vm_area_struct *vma);
unsigned long rrxe_vma_end(struct vm_area_struct *vma);
void rrxe_vma_set_dontexpand(struct vm_area_struct *vma);
void rrxe_vfree(void *addr);
struct mem_cgroup *rrxe_memcg_get(void);
void rrxe_memcg_put(struct mem_cgroup *memcg);
struct mem_cgroup *rrxe_memcg_enter(struct mem_cgroup *memcg);
void rrxe_memcg_leave(struct mem_cgroup *old);
/* In memcg.c. */
int rrxe_memcg_room(size_t bytes);
void rrxe_get_random_bytes(void *buf, size_t len);
int rrxe_printk_ratelimit(void);
const char *rrxe_link_type(void);
int rrxe_ib_no_udata_io(struct ib_udata *udata);
void rrxe_get_device(struct ib_device *ibdev);
void rrxe_put_device(struct ib_device *ibdev);

struct sg_page_iter;
struct page *rrxe_sg_page_iter_page(struct sg_page_iter *piter);
void *rrxe_kmap_local_page(struct page *page);
void rrxe_kunmap_local(void *addr);
unsigned int rrxe_umem_offset(struct ib_umem *umem);
struct scatterlist *rrxe_umem_sgl(struct ib_umem *umem);
unsigned int rrxe_umem_nents(struct ib_umem *umem);

long rrxe_copy_from_kernel(void *dst, u64 src, size_t len);
void rrxe_copy_to_kernel(u64 dst, const void *src, size_t len);

#endif
