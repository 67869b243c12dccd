// SPDX-License-Identifier: GPL-2.0
/*
 * One-line C wrappers for static inlines and macros that Rust cannot call,
 * plus the one module parameter the Rust side cannot declare (a string).
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
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <linux/vmalloc.h>
#include <linux/random.h>
#include <linux/mm.h>
#include <linux/uaccess.h>

#include "helpers.h"

static char link_type[16] = "rrxe";
module_param_string(link_type, link_type, sizeof(link_type), 0444);
MODULE_PARM_DESC(link_type, "rdma link type to register (default rrxe; rxe for drop-in use)");

const char *rrxe_link_type(void) { return link_type; }

/* Read when a device is created; range-checked there. */
static unsigned long dm_size;
module_param(dm_size, ulong, 0644);
MODULE_PARM_DESC(dm_size, "device memory of each new device, in bytes (default 0: off, since stock librxe has no DM verbs)");

unsigned long rrxe_dm_size(void) { return READ_ONCE(dm_size); }

/*
 * Driver-specific uverbs attributes. DM_ALLOC returns the page offset at
 * which the allocating process maps the new device memory.
 */
ADD_UVERBS_ATTRIBUTES_SIMPLE(
	rrxe_dm_alloc_attrs, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
	UVERBS_ATTR_PTR_OUT(RRXE_ATTR_ALLOC_DM_RESP_MMAP_OFFSET,
			    UVERBS_ATTR_TYPE(u64), UA_MANDATORY));

static const struct uapi_definition rrxe_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &rrxe_dm_alloc_attrs),
	{},
};

void rrxe_ib_set_dm_uapi(struct ib_device *ibdev) { ibdev->driver_def = rrxe_uapi_defs; }

/*
 * The port's hardware counters, under rdma_rxe's names and in its order
 * (rrxe_hw_counter in helpers.h indexes them).
 */
static const struct rdma_stat_desc rrxe_counter_descs[] = {
	[RRXE_CNT_SENT_PKTS].name = "sent_pkts",
	[RRXE_CNT_RCVD_PKTS].name = "rcvd_pkts",
	[RRXE_CNT_DUP_REQ].name = "duplicate_request",
	[RRXE_CNT_OUT_OF_SEQ_REQ].name = "out_of_seq_request",
	[RRXE_CNT_RCV_RNR].name = "rcvd_rnr_err",
	[RRXE_CNT_SND_RNR].name = "send_rnr_err",
	[RRXE_CNT_RCV_SEQ_ERR].name = "rcvd_seq_err",
	[RRXE_CNT_SENDER_SCHED].name = "ack_deferred",
	[RRXE_CNT_RETRY_EXCEEDED].name = "retry_exceeded_err",
	[RRXE_CNT_RNR_RETRY_EXCEEDED].name = "retry_rnr_exceeded_err",
	[RRXE_CNT_COMP_RETRY].name = "completer_retry_err",
	[RRXE_CNT_SEND_ERR].name = "send_err",
	[RRXE_CNT_LINK_DOWNED].name = "link_downed",
	[RRXE_CNT_RDMA_SEND].name = "rdma_sends",
	[RRXE_CNT_RDMA_RECV].name = "rdma_recvs",
	[RRXE_CNT_SENT_BYTES].name = "sent_bytes",
	[RRXE_CNT_RCVD_BYTES].name = "rcvd_bytes",
};
static_assert(ARRAY_SIZE(rrxe_counter_descs) == RRXE_NUM_COUNTERS);

struct rdma_hw_stats *rrxe_alloc_hw_port_stats(void)
{ return rdma_alloc_hw_stats_struct(rrxe_counter_descs, RRXE_NUM_COUNTERS, RDMA_HW_STATS_DEFAULT_LIFESPAN); }

struct ib_ucontext *rrxe_udata_to_ucontext(struct ib_udata *udata)
{ return container_of(udata, struct uverbs_attr_bundle, driver_udata)->context; }

int rrxe_uverbs_copy_to_u64(struct uverbs_attr_bundle *attrs, u16 id, u64 val)
{ return uverbs_copy_to(attrs, id, &val, sizeof(val)); }

struct ib_device *rrxe_ib_alloc_device(size_t size, struct net *net)
{ return _ib_alloc_device(size, net); }

struct net_device *rrxe_netdev_notifier_info_to_dev(void *info)
{ return netdev_notifier_info_to_dev(info); }

bool rrxe_is_vlan_dev(struct net_device *ndev) { return is_vlan_dev(ndev); }

struct net *rrxe_dev_net(struct net_device *ndev) { return dev_net(ndev); }

void rrxe_dev_put(struct net_device *ndev) { dev_put(ndev); }

unsigned int rrxe_num_possible_cpus(void) { return num_possible_cpus(); }

u64 rrxe_bit_ull(unsigned int nr) { return BIT_ULL(nr); }

struct ib_device *rrxe_ib_device_get_by_netdev(struct net_device *ndev)
{ return ib_device_get_by_netdev(ndev, RDMA_DRIVER_RXE); }

bool rrxe_netif_is_up(struct net_device *ndev) { return READ_ONCE(ndev->flags) & IFF_UP; }

unsigned int rrxe_netdev_mtu(struct net_device *ndev) { return READ_ONCE(ndev->mtu); }

const char *rrxe_netdev_name(struct net_device *ndev) { return netdev_name(ndev); }

unsigned int rrxe_netdev_addr(struct net_device *ndev, u8 *buf, unsigned int len)
{ len = min_t(unsigned int, len, ndev->addr_len); memcpy(buf, ndev->dev_addr, len); return len; }

void rrxe_get_device(struct ib_device *ibdev) { get_device(&ibdev->dev); }

void rrxe_put_device(struct ib_device *ibdev) { put_device(&ibdev->dev); }

bool rrxe_netif_port_active(struct net_device *ndev)
{ return ib_get_curr_port_state(ndev) == IB_PORT_ACTIVE; }

void rrxe_dev_hold(struct net_device *ndev) { dev_hold(ndev); }

void rrxe_ib_set_parent(struct ib_device *ibdev, struct net_device *ndev) { ibdev->dev.parent = ndev->dev.parent; }

const char *rrxe_ib_device_name(struct ib_device *ibdev) { return dev_name(&ibdev->dev); }

void *rrxe_vmalloc_user(unsigned long size) { return vmalloc_user(size); }

void rrxe_vfree(void *addr) { vfree(addr); }

int rrxe_remap_vmalloc_range(struct vm_area_struct *vma, void *addr)
{ return remap_vmalloc_range(vma, addr, 0); }

void rrxe_get_random_bytes(void *buf, size_t len) { get_random_bytes(buf, len); }

int rrxe_ib_no_udata_io(struct ib_udata *udata) { return ib_no_udata_io(udata); }

int rrxe_printk_ratelimit(void) { return printk_ratelimit(); }

struct page *rrxe_sg_page_iter_page(struct sg_page_iter *piter) { return sg_page_iter_page(piter); }

void *rrxe_kmap_local_page(struct page *page) { return kmap_local_page(page); }

void rrxe_kunmap_local(void *addr) { kunmap_local(addr); }

unsigned int rrxe_umem_offset(struct ib_umem *umem) { return ib_umem_offset(umem); }

struct scatterlist *rrxe_umem_sgl(struct ib_umem *umem) { return umem->sgt_append.sgt.sgl; }

unsigned int rrxe_umem_nents(struct ib_umem *umem) { return umem->sgt_append.sgt.orig_nents; }

bool rrxe_is_err(const void *ptr) { return IS_ERR(ptr); }

long rrxe_ptr_err(const void *ptr) { return PTR_ERR(ptr); }

void *rrxe_err_ptr(long err) { return ERR_PTR(err); }

/*
 * RoCEv2 sockets and packets. The UDP port 4791 tunnel sockets of a network
 * namespace are shared by the rrxe devices in it: the first device opens
 * them, the last one closes them, and a namespace going away closes them
 * too (a device is freed later than its namespace can be). Devices hold a
 * ticket (a number never reused), not a pointer to the namespace.
 *
 * Packets arrive in softirq: the encap callback resolves the RXE-driver
 * device of the ingress netdev (taking a reference), queues the skb and
 * kicks one work item, which hands each packet to the Rust receive path in
 * process context.
 */
#include <net/udp_tunnel.h>
#include <net/ip.h>
#include <net/route.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <linux/workqueue.h>

#define RRXE_PORT 4791
#define RRXE_RXQ_MAX 8192

struct rrxe_socks {
	struct list_head list;
	struct net *net;
	u64 ticket;
	unsigned int refs;
	struct sock *sk4, *sk6;
};

static LIST_HEAD(rrxe_socks_list);
static DEFINE_MUTEX(rrxe_socks_lock);
static u64 rrxe_next_ticket = 1;

struct rrxe_skb_cb {
	struct ib_device *ibdev;
};

static struct sk_buff_head rrxe_rxq;
static void (*rrxe_rx_handler)(struct ib_device *ibdev, struct sk_buff *skb);
static void rrxe_rx_work_fn(struct work_struct *work);
static DECLARE_WORK(rrxe_rx_work, rrxe_rx_work_fn);
static atomic64_t rrxe_rx_dropped = ATOMIC64_INIT(0);
/* Runs the receive work and the QPs' send tasks; drained at module exit. */
static struct workqueue_struct *rrxe_wq;

struct workqueue_struct *rrxe_workqueue(void) { return rrxe_wq; }

void rrxe_flush_workqueue(void) { flush_workqueue(rrxe_wq); }

static struct rrxe_skb_cb *rrxe_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct rrxe_skb_cb) > sizeof(skb->cb));
	return (struct rrxe_skb_cb *)skb->cb;
}

static int rrxe_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct ib_device *ibdev = skb->dev ? ib_device_get_by_netdev(skb->dev, RDMA_DRIVER_RXE) : NULL;

	if (!ibdev || skb_queue_len(&rrxe_rxq) >= RRXE_RXQ_MAX) {
		if (ibdev)
			ib_device_put(ibdev);
		atomic64_inc(&rrxe_rx_dropped);
		kfree_skb(skb);
		return 0;
	}
	rrxe_cb(skb)->ibdev = ibdev;
	skb_queue_tail(&rrxe_rxq, skb);
	queue_work(rrxe_wq, &rrxe_rx_work);
	return 0;
}

static void rrxe_rx_work_fn(struct work_struct *work)
{
	struct sk_buff *skb;
	unsigned int n = 0;

	while ((skb = skb_dequeue(&rrxe_rxq))) {
		struct ib_device *ibdev = rrxe_cb(skb)->ibdev;

		if (!skb_linearize(skb))
			rrxe_rx_handler(ibdev, skb);
		ib_device_put(ibdev);
		consume_skb(skb);
		if (++n % 64 == 0)
			cond_resched();
	}
}

u64 rrxe_rx_dropped_count(void) { return atomic64_read(&rrxe_rx_dropped); }

static struct sock *rrxe_open_sock(struct net *net, bool ipv6)
{
	struct udp_port_cfg cfg = { .local_udp_port = htons(RRXE_PORT) };
	struct udp_tunnel_sock_cfg tcfg = { .encap_type = 1, .encap_rcv = rrxe_encap_rcv };
	struct socket *sock;
	int err;

	if (ipv6) {
		cfg.family = AF_INET6;
		cfg.ipv6_v6only = 1;
	} else {
		cfg.family = AF_INET;
	}
	err = udp_sock_create(net, &cfg, &sock);
	if (err)
		return ERR_PTR(err);
	setup_udp_tunnel_sock(net, sock->sk, &tcfg);
	return sock->sk;
}

static void rrxe_close_socks(struct rrxe_socks *s)
{
	if (s->sk6)
		udp_tunnel_sock_release(s->sk6);
	if (s->sk4)
		udp_tunnel_sock_release(s->sk4);
	list_del(&s->list);
	kfree(s);
}

/* Takes a reference on @net's sockets, opening them if needed. */
int rrxe_net_get(struct net *net, u64 *ticket)
{
	struct rrxe_socks *s;
	struct sock *sk;
	int err = 0;

	mutex_lock(&rrxe_socks_lock);
	list_for_each_entry(s, &rrxe_socks_list, list) {
		if (s->net == net) {
			s->refs++;
			*ticket = s->ticket;
			goto out;
		}
	}
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s) {
		err = -ENOMEM;
		goto out;
	}
	s->net = net;
	s->refs = 1;
	s->ticket = rrxe_next_ticket++;
	INIT_LIST_HEAD(&s->list);
	list_add(&s->list, &rrxe_socks_list);
	sk = rrxe_open_sock(net, false);
	if (IS_ERR(sk)) {
		err = PTR_ERR(sk);
		pr_err_ratelimited("rrxe: cannot bind UDP port %d: %d\n", RRXE_PORT, err);
		rrxe_close_socks(s);
		goto out;
	}
	s->sk4 = sk;
	if (IS_ENABLED(CONFIG_IPV6) && ipv6_mod_enabled()) {
		sk = rrxe_open_sock(net, true);
		if (IS_ERR(sk)) {
			err = PTR_ERR(sk);
			pr_err_ratelimited("rrxe: cannot bind UDP port %d over IPv6: %d\n", RRXE_PORT, err);
			rrxe_close_socks(s);
			goto out;
		}
		s->sk6 = sk;
	}
	*ticket = s->ticket;
out:
	mutex_unlock(&rrxe_socks_lock);
	return err;
}

/* Drops a reference taken by rrxe_net_get (a no-op once the namespace is gone). */
void rrxe_net_put(u64 ticket)
{
	struct rrxe_socks *s;

	mutex_lock(&rrxe_socks_lock);
	list_for_each_entry(s, &rrxe_socks_list, list) {
		if (s->ticket == ticket) {
			if (--s->refs == 0)
				rrxe_close_socks(s);
			break;
		}
	}
	mutex_unlock(&rrxe_socks_lock);
}

static void __net_exit rrxe_net_exit(struct net *net)
{
	struct rrxe_socks *s, *tmp;

	mutex_lock(&rrxe_socks_lock);
	list_for_each_entry_safe(s, tmp, &rrxe_socks_list, list)
		if (s->net == net)
			rrxe_close_socks(s);
	mutex_unlock(&rrxe_socks_lock);
}

static struct pernet_operations rrxe_net_ops = {
	.exit = rrxe_net_exit,
};

int rrxe_net_init(void (*handler)(struct ib_device *ibdev, struct sk_buff *skb))
{
	int err;

	skb_queue_head_init(&rrxe_rxq);
	rrxe_rx_handler = handler;
	rrxe_wq = alloc_workqueue("rrxe", WQ_UNBOUND, 0);
	if (!rrxe_wq)
		return -ENOMEM;
	err = register_pernet_subsys(&rrxe_net_ops);
	if (err)
		destroy_workqueue(rrxe_wq);
	return err;
}

void rrxe_net_fini(void)
{
	struct sk_buff *skb;

	unregister_pernet_subsys(&rrxe_net_ops);
	synchronize_net();
	cancel_work_sync(&rrxe_rx_work);
	while ((skb = skb_dequeue(&rrxe_rxq))) {
		ib_device_put(rrxe_cb(skb)->ibdev);
		kfree_skb(skb);
	}
	destroy_workqueue(rrxe_wq);
}

/*
 * An skb for one IP packet of @len bytes leaving through @ndev's namespace
 * towards @daddr, routed with @saddr as source: the route is attached, and
 * *data points at the (uninitialised) network header the caller fills.
 */
struct sk_buff *rrxe_tx_skb(struct net_device *ndev, bool ipv6, const u8 *saddr,
			    const u8 *daddr, u8 tos, unsigned int len, u8 **data)
{
	struct net *net = dev_net(ndev);
	struct dst_entry *dst;
	struct sk_buff *skb;

	if (!ipv6) {
		struct flowi4 fl = {
			.flowi4_oif = ndev->ifindex,
			.flowi4_proto = IPPROTO_UDP,
			.flowi4_dscp = inet_dsfield_to_dscp(tos),
		};
		struct rtable *rt;

		memcpy(&fl.saddr, saddr, 4);
		memcpy(&fl.daddr, daddr, 4);
		rt = ip_route_output_key(net, &fl);
		if (IS_ERR(rt))
			return ERR_CAST(rt);
		dst = &rt->dst;
	} else {
#if IS_ENABLED(CONFIG_IPV6)
		struct flowi6 fl = {
			.flowi6_oif = ndev->ifindex,
			.flowi6_proto = IPPROTO_UDP,
		};

		memcpy(&fl.saddr, saddr, 16);
		memcpy(&fl.daddr, daddr, 16);
		dst = ip6_dst_lookup_flow(net, NULL, &fl, NULL);
		if (IS_ERR(dst))
			return ERR_CAST(dst);
		if (dst->error) {
			int err = dst->error;

			dst_release(dst);
			return ERR_PTR(err);
		}
#else
		return ERR_PTR(-EAFNOSUPPORT);
#endif
	}
	skb = alloc_skb(len + LL_RESERVED_SPACE(dst->dev) + dst->dev->needed_tailroom, GFP_KERNEL);
	if (!skb) {
		dst_release(dst);
		return ERR_PTR(-ENOMEM);
	}
	skb_reserve(skb, LL_RESERVED_SPACE(dst->dev));
	skb_dst_set(skb, dst);
	skb->dev = dst->dev;
	skb->protocol = ipv6 ? htons(ETH_P_IPV6) : htons(ETH_P_IP);
	skb_reset_network_header(skb);
	skb_set_transport_header(skb, ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr));
	*data = skb_put(skb, len);
	return skb;
}

/* Gives an IPv4 packet built by rrxe_tx_skb the stack's identification. */
void rrxe_tx_ip4_ident(struct sk_buff *skb)
{
	__ip_select_ident(dev_net(skb_dst(skb)->dev), ip_hdr(skb), 1);
}

/* Sends a packet built by rrxe_tx_skb (consumes it). */
int rrxe_tx_send(struct sk_buff *skb, bool ipv6)
{
	struct net *net = dev_net(skb_dst(skb)->dev);
	int err;

	memset(IPCB(skb), 0, sizeof(struct inet_skb_parm));
	if (ipv6) {
#if IS_ENABLED(CONFIG_IPV6)
		err = ip6_local_out(net, NULL, skb);
#else
		kfree_skb(skb);
		err = -EAFNOSUPPORT;
#endif
	} else {
		err = ip_local_out(net, NULL, skb);
	}
	return net_xmit_eval(err);
}

void rrxe_kfree_skb(struct sk_buff *skb) { kfree_skb(skb); }

/* The received packet from its network header to its end (linear). */
const u8 *rrxe_rx_data(struct sk_buff *skb, unsigned int *len)
{
	*len = skb_tail_pointer(skb) - skb_network_header(skb);
	return skb_network_header(skb);
}

/* Copies for DMA MRs: with virtual DMA, "DMA addresses" are kernel virtual ones. */
long rrxe_copy_from_kernel(void *dst, u64 src, size_t len)
{ return copy_from_kernel_nofault(dst, (const void *)(uintptr_t)src, len); }

void rrxe_copy_to_kernel(u64 dst, const void *src, size_t len)
{ memcpy((void *)(uintptr_t)dst, src, len); }
