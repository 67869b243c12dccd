// SPDX-License-Identifier: GPL-2.0
/*
 * RoCEv2 sockets and packets: the C side of rrxe's net layer (Rust:
 * rust/net/), kept apart from the one-line wrappers of helpers.c.
 *
 * The UDP port 4791 tunnel sockets of a network namespace are shared by the
 * rrxe devices in it: the first device opens them, the last one closes
 * them, and a namespace going away closes them too (a device is freed later
 * than its namespace can be). Devices hold a ticket (a number never
 * reused), not a pointer to the namespace.
 *
 * Packets arrive in softirq: the encap callback resolves the RXE-driver
 * device of the ingress netdev (taking a reference) and hands the packet
 * to the driver's accept callback, which checks what can be checked there
 * without sleeping (headers, ICRC, destination GID). A packet it refuses
 * is dropped in the softirq, so the cost of a flood of bad packets lands
 * where the kernel accounts for the rest of the network's receive work
 * (the interrupted task, or ksoftirqd under load), as it does for
 * rdma_rxe. An accepted packet is queued on one of the two lanes of that
 * device's receive queue (RC responses, and the rest: see struct
 * rrxe_rxq) and the lane's worker is kicked (unless a context drains the
 * queue already: see rrxe_rxq_kick), which hands each packet to the Rust
 * receive path in process context, where the transports may sleep. Each
 * device has its own queue and worker (struct rrxe_rxq, made and freed by
 * the Rust side with the device), so that a flood at one device is not a
 * queue in front of the others' packets. A queue holds at most
 * rx_queue_kib KiB (skb truesize; 32 MiB by default): room for the
 * windows of 16 RC QPs (128 packets each) at a 4 KiB MTU in virtio-net's
 * 9 KiB receive buffers. Later packets are dropped and counted as a full
 * socket buffer drops and counts them: in the socket's drops and the
 * namespace's UDP RcvbufErrors and InErrors (see rrxe_rx_full), and in
 * the device's rcvd_queue_full. Its work
 * takes at most RRXE_RX_BATCH packets per run, then queues itself again,
 * so that a flood cannot keep one run going.
 *
 * The workers are kthreads at ordinary priority: work done for a remote
 * peer is scheduled like any other task's, so a peer cannot take a CPU
 * from local processes beyond their fair share.
 *
 * Packets leave through rrxe_tx_skb (route and skb) and rrxe_tx_send. A
 * connected QP keeps its route in a struct rrxe_route (a dst_cache), as rxe
 * keeps an RC QP's in its socket: a route lookup per packet is the most
 * expensive part of building one after the payload and its CRC.
 */
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>
#include <linux/kthread.h>
#include <linux/sysfs.h>
#include <linux/sched.h>
#include <rdma/ib_verbs.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>
#include <net/ip.h>
#include <net/route.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/dst_cache.h>

#include "net_glue.h"

#define RRXE_PORT 4791
/*
 * The smallest bound holds about a QP's largest burst (the transmit gate's
 * 64 packets, about 4 KiB of truesize each at a 1 KiB MTU): in a queue
 * that cannot, every retransmitted burst loses its tail again and RC
 * crawls on its timer (at 64 KiB, five 64 KiB WRITEs did not finish in
 * 40 s; at 256 KiB fifty took 4 s, their drops recovered by NAKs).
 */
#define RRXE_RXQ_KIB_MIN 256
#define RRXE_RXQ_KIB_MAX (1 << 20)
#define RRXE_RX_BATCH 256
/* Room for any RoCE packet: a 4096-byte payload, its headers over IPv6, the
 * pad and the ICRC. */
#define RRXE_RX_SCRATCH 8192

/* Where the softirq copies a packet in page fragments for the accept
 * callback: one per CPU, used with bottom halves off. */
struct rrxe_rx_scratch {
	u8 buf[RRXE_RX_SCRATCH];
};

static struct rrxe_rx_scratch __percpu *rrxe_accept_scratch;

struct rrxe_socks {
	struct list_head list;
	struct net *net;
	u64 ticket;
	unsigned int refs;
	struct sock *sk4, *sk6;
};

/* A writable unsigned module parameter, range-checked when set. */
struct rrxe_uint_param {
	unsigned int val;
	unsigned int min, max;
	const char *name;
};

static int rrxe_uint_param_set(const char *s, const struct kernel_param *kp)
{
	struct rrxe_uint_param *p = kp->arg;
	unsigned int v;
	int err = kstrtouint(s, 0, &v);

	if (err)
		return err;
	if (v < p->min || v > p->max) {
		pr_err_ratelimited("rrxe: %s must be %u to %u\n", p->name, p->min, p->max);
		return -EINVAL;
	}
	WRITE_ONCE(p->val, v);
	return 0;
}

static int rrxe_uint_param_get(char *buf, const struct kernel_param *kp)
{
	const struct rrxe_uint_param *p = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(p->val));
}

static const struct kernel_param_ops rrxe_uint_param_ops = {
	.set = rrxe_uint_param_set,
	.get = rrxe_uint_param_get,
};

/* Read for each packet. */
static struct rrxe_uint_param rrxe_rxq_kib = {
	.val = 32 << 10, .min = RRXE_RXQ_KIB_MIN, .max = RRXE_RXQ_KIB_MAX, .name = "rx_queue_kib",
};
module_param_cb(rx_queue_kib, &rrxe_uint_param_ops, &rrxe_rxq_kib, 0644);
MODULE_PARM_DESC(rx_queue_kib, "bound on each device's receive queue, in KiB of skb truesize, 256 to 1048576 (default 32768)");

static LIST_HEAD(rrxe_socks_list);
static DEFINE_MUTEX(rrxe_socks_lock);
static u64 rrxe_next_ticket = 1;

/*
 * A device's received packets, each holding a reference on the device, in
 * two lanes: RC responses (ACKs, read responses, atomic ACKs), which go to
 * the QPs' completers, and everything else. Each lane keeps its packets'
 * order and is drained by one context at a time, but the two are drained
 * apart: a QP's completer and its responder have locks of their own, and
 * in a ping-pong the ACK of one side's request and the other side's next
 * request reach the same device at once. In one queue the request waited
 * behind the ACK in the context draining it, which went on to send the
 * request's ACK and to complete it at the other side before its own
 * process could see the request's data. Nothing orders a QP's requests
 * against the responses it receives.
 */
#define RRXE_LANES 2
#define RRXE_LANE_RESP 1

struct rrxe_lane {
	struct sk_buff_head q;
	struct kthread_work work;
	/* 1 while a context drains the lane: the worker, or a sender
	 * receiving in place (one at a time, in order). */
	atomic_t busy;
	/* Its work for each CPU's spread worker (see rrxe_rx_spread). */
	struct rrxe_rxq_cpu_work __percpu *cpu_work;
	struct rrxe_rxq *rxq;
	/* A packet in page fragments is copied here for the driver, by the
	 * context that has the lane busy (see rrxe_rx_bytes). */
	u8 *scratch;
};

struct rrxe_rxq {
	struct rrxe_lane lane[RRXE_LANES];
	/* Runs both lanes' work. */
	struct kthread_worker *worker;
	struct ib_device *ibdev;
	/* The truesize queued in both lanes. */
	atomic_t bytes;
};

struct rrxe_rxq_cpu_work {
	struct kthread_work work;
	struct rrxe_lane *rq;
};

/*
 * Receiving in the sender's context. A doorbell that sends to a device of
 * this kernel (another namespace's, over a veth) runs that device's receive
 * softirq itself, nested in its own transmission (veth hands the packet to
 * the backlog of the sending CPU). Waking the receiving device's worker
 * for it costs a context switch, often on another CPU, each way: a
 * 64-byte WRITE and its ACK took two. So while a sleepable caller is
 * inside rrxe_rx_inline_begin/end on this CPU, a packet for a device whose
 * queue was empty and idle is queued without the wake, and its queue is
 * noted here; rrxe_rx_inline_end then drains the noted queues in the
 * caller's context, its replies included (the ACK a drained WRITE sends
 * comes back the same way), up to RRXE_INLINE_BUDGET packets, and leaves
 * the rest to the workers. A sender that has sent all it has for now
 * drains them earlier, with rrxe_rx_inline_flush, and goes on noting.
 * A busy queue (a stream) keeps its worker, and a noted queue holding
 * more than RRXE_INLINE_MAX_QUEUED packets goes to another CPU (see
 * rrxe_rx_spread), so the sender and the receiver still run on two CPUs.
 * siw receives in the softirq, which is why its latency over a veth was a
 * fifth of rrxe's.
 */
#define RRXE_INLINE_QUEUES 4
#define RRXE_INLINE_BUDGET 64
#define RRXE_INLINE_MAX_QUEUED 8

/*
 * A sender that finds more than RRXE_INLINE_MAX_QUEUED packets in a queue
 * it noted (a burst, or a window of a stream) does not drain it: it hands
 * it to the spread worker of another online CPU (a kthread bound to
 * that CPU, one per CPU online at load), so that the receiver's
 * ICRC and copies run beside the sender's instead of after them. The
 * device's own worker has no CPU of its own, and woken from the sender's
 * CPU it runs there, preempting the sender.
 */
static DEFINE_PER_CPU(struct kthread_worker *, rrxe_spread);

/*
 * @draining: the owner is inside rrxe_rx_inline_drain. What a drain runs
 * can send again (a WRITE's ACK, a READ's response),
 * and a flush from there would drain inside the drain, one level deeper
 * of the kernel stack per queue noted; it waits for the outer one.
 */
struct rrxe_inline {
	struct task_struct *owner;
	bool draining;
	unsigned int n;
	struct rrxe_lane *rq[RRXE_INLINE_QUEUES];
};

static DEFINE_PER_CPU(struct rrxe_inline, rrxe_inline);

static void (*rrxe_rx_handler)(struct ib_device *ibdev, const u8 *data, unsigned int len);
static bool (*rrxe_rx_accept)(struct ib_device *ibdev, const u8 *data, unsigned int len);
static struct rrxe_rxq *(*rrxe_rxq_of)(struct ib_device *ibdev);
static void (*rrxe_rx_full_cb)(struct ib_device *ibdev);
/*
 * Runs the QPs' send tasks; drained at module exit.
 * WQ_MEM_RECLAIM: storage ULPs (nvme-rdma, nvmet-rdma, NFS over RDMA) are
 * in the memory reclaim path and destroy QPs from their own WQ_MEM_RECLAIM
 * workqueues (nvme-reset-wq, say), and destroy_qp flushes this one; a
 * reclaim workqueue may flush only another reclaim workqueue (the kernel
 * WARNs in check_flush_dependency otherwise), and the rescuer keeps the
 * QPs' traffic moving when no worker can be created.
 */
static struct workqueue_struct *rrxe_wq;

struct workqueue_struct *rrxe_workqueue(void) { return rrxe_wq; }

void rrxe_flush_workqueue(void) { flush_workqueue(rrxe_wq); }

static bool rrxe_rx_defer(struct rrxe_lane *rq);

/*
 * Wakes @rq's worker for a packet just queued, unless a context drains @rq
 * now: that one looks at the queue again when it lets it go
 * (rrxe_rxq_release), so the packet is not left behind. The wake would
 * only wake a task for nothing (the worker finds the queue busy and
 * returns), often the very sender draining the queue: in a
 * ping-pong, each side's packets reach a queue the other side's doorbell
 * is draining.
 */
static void rrxe_rxq_kick(struct rrxe_lane *rq)
{
	/* Orders the queueing before the read of busy; pairs with the
	 * barrier in rrxe_rxq_release. */
	smp_mb();
	if (!atomic_read(&rq->busy))
		kthread_queue_work(rq->rxq->worker, &rq->work);
}

/* The lane of @skb, at its UDP header: RC responses go apart. */
static unsigned int rrxe_lane_of(struct sk_buff *skb)
{
	u8 buf, *op;

	op = skb_header_pointer(skb, skb_transport_offset(skb) + sizeof(struct udphdr),
				1, &buf);
	/* RC (transport 0), READ RESPONSE FIRST to ATOMIC ACKNOWLEDGE. */
	if (op && *op >= 0x0d && *op <= 0x12)
		return RRXE_LANE_RESP;
	return 0;
}

/*
 * Drops @skb, which found its device's receive queue full, and counts it
 * where UDP counts a datagram that found its socket's buffer full.
 */
static void rrxe_rx_full(struct sock *sk, struct sk_buff *skb)
{
	struct net *net = sock_net(sk);

	udp_drops_inc(sk);
#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6) {
		UDP6_INC_STATS(net, UDP_MIB_RCVBUFERRORS);
		UDP6_INC_STATS(net, UDP_MIB_INERRORS);
	} else
#endif
	{
		UDP_INC_STATS(net, UDP_MIB_RCVBUFERRORS);
		UDP_INC_STATS(net, UDP_MIB_INERRORS);
	}
	sk_skb_reason_drop(sk, skb, SKB_DROP_REASON_SOCKET_RCVBUFF);
}

/*
 * In softirq: whether the driver accepts @skb for @ibdev (see the top of
 * this file). A packet in page fragments is copied to this CPU's scratch
 * buffer for the look; one bigger than any RoCE packet is refused.
 */
static bool rrxe_rx_accepted(struct ib_device *ibdev, struct sk_buff *skb)
{
	unsigned int hdr = skb->data - skb_network_header(skb);
	unsigned int len = hdr + skb->len;
	u8 *buf;

	if (!skb_is_nonlinear(skb))
		return rrxe_rx_accept(ibdev, skb_network_header(skb), len);
	if (len > RRXE_RX_SCRATCH)
		return false;
	buf = this_cpu_ptr(rrxe_accept_scratch)->buf;
	memcpy(buf, skb_network_header(skb), hdr);
	if (skb_copy_bits(skb, 0, buf + hdr, skb->len))
		return false;
	return rrxe_rx_accept(ibdev, buf, len);
}

static int rrxe_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct ib_device *ibdev = skb->dev ? ib_device_get_by_netdev(skb->dev, RDMA_DRIVER_RXE) : NULL;
	struct rrxe_rxq *rxq = ibdev ? rrxe_rxq_of(ibdev) : NULL;
	unsigned int size = skb->truesize;
	struct rrxe_lane *rq;

	if (!rxq) {
		/* No RXE-driver device on the netdev: dropped, as rxe drops it. */
		if (ibdev)
			ib_device_put(ibdev);
		kfree_skb(skb);
		return 0;
	}
	if (!rrxe_rx_accepted(ibdev, skb)) {
		ib_device_put(ibdev);
		kfree_skb(skb);
		return 0;
	}
	if (atomic_add_return(size, &rxq->bytes) > READ_ONCE(rrxe_rxq_kib.val) << 10) {
		atomic_sub(size, &rxq->bytes);
		rrxe_rx_full_cb(ibdev);
		ib_device_put(ibdev);
		rrxe_rx_full(sk, skb);
		return 0;
	}
	rq = &rxq->lane[rrxe_lane_of(skb)];
	skb_queue_tail(&rq->q, skb);
	if (!rrxe_rx_defer(rq))
		rrxe_rxq_kick(rq);
	return 0;
}

/*
 * In softirq, for a packet just queued on @rq: true if the task this
 * softirq interrupted receives in place (see struct rrxe_inline) and has
 * noted @rq, with a reference on its device, to drain it itself.
 */
static bool rrxe_rx_defer(struct rrxe_lane *rq)
{
	struct rrxe_inline *in = this_cpu_ptr(&rrxe_inline);
	unsigned int i;

	if (in->owner != current || in_hardirq() || in_nmi())
		return false;
	for (i = 0; i < in->n; i++)
		if (in->rq[i] == rq)
			return true;
	/* Only an idle queue: a stream's packets go to its worker. */
	if (in->n == RRXE_INLINE_QUEUES || skb_queue_len(&rq->q) != 1 || atomic_read(&rq->busy))
		return false;
	/* The packet just queued holds a reference; this one outlives it. */
	if (!ib_device_try_get(rq->rxq->ibdev))
		return false;
	in->rq[in->n++] = rq;
	return true;
}

/*
 * The bytes of @skb from its network header to its end, in one piece: its
 * own when it is linear, otherwise (a device that receives into pages
 * builds such packets) copied into @rq's scratch buffer, or, for one bigger
 * than any RoCE packet, linearized. NULL when it cannot be had.
 */
static const u8 *rrxe_rx_bytes(struct rrxe_lane *rq, struct sk_buff *skb, unsigned int *len)
{
	unsigned int hdr = skb->data - skb_network_header(skb);

	*len = hdr + skb->len;
	if (!skb_is_nonlinear(skb))
		return skb_network_header(skb);
	if (*len <= RRXE_RX_SCRATCH) {
		memcpy(rq->scratch, skb_network_header(skb), hdr);
		if (skb_copy_bits(skb, 0, rq->scratch + hdr, skb->len))
			return NULL;
		return rq->scratch;
	}
	if (skb_linearize(skb))
		return NULL;
	return skb_network_header(skb);
}

/* Hands up to @budget packets of @rq to the driver; the caller has @rq busy. */
static unsigned int rrxe_rxq_drain(struct rrxe_lane *rq, unsigned int budget)
{
	struct ib_device *ibdev = rq->rxq->ibdev;
	struct sk_buff *skb;
	unsigned int n = 0;

	while (n < budget && (skb = skb_dequeue(&rq->q))) {
		const u8 *data;
		unsigned int len;

		atomic_sub(skb->truesize, &rq->rxq->bytes);
		data = rrxe_rx_bytes(rq, skb, &len);
		if (data)
			rrxe_rx_handler(ibdev, data, len);
		/* The device may go once its last packet is put: after this,
		 * only the queue (freed after this work is cancelled) is used. */
		ib_device_put(ibdev);
		consume_skb(skb);
		if (++n % 64 == 0)
			cond_resched();
	}
	return n;
}

/*
 * Lets @rq go after a drain; its worker takes over what is left (or came
 * in while a sender drained it and the worker found it busy).
 */
static void rrxe_rxq_release(struct rrxe_lane *rq)
{
	atomic_set(&rq->busy, 0);
	/* A full barrier (atomic_set is a plain store, which a later load
	 * may pass): pairs with the one in rrxe_rxq_kick, so a packet queued
	 * while the queue was busy is seen here, or its sender saw it idle. */
	smp_mb();
	if (!skb_queue_empty_lockless(&rq->q))
		kthread_queue_work(rq->rxq->worker, &rq->work);
}

/* A worker's run: a batch of @rq, unless another context drains it. */
static void rrxe_rxq_run(struct rrxe_lane *rq)
{
	/* A sender drains it in place; it wakes this work when it is done. */
	if (atomic_xchg(&rq->busy, 1))
		return;
	rrxe_rxq_drain(rq, RRXE_RX_BATCH);
	rrxe_rxq_release(rq);
}

static void rrxe_rxq_work_fn(struct kthread_work *work)
{
	rrxe_rxq_run(container_of(work, struct rrxe_lane, work));
}

static void rrxe_rxq_cpu_work_fn(struct kthread_work *work)
{
	rrxe_rxq_run(container_of(work, struct rrxe_rxq_cpu_work, work)->rq);
}

/*
 * Queues @rq's work on the spread worker of the next online CPU after this
 * one; false when there is none (one CPU, or a CPU brought up after load).
 */
static bool rrxe_rx_spread(struct rrxe_lane *rq)
{
	unsigned int cpu = cpumask_next_wrap(smp_processor_id(), cpu_online_mask);
	struct kthread_worker *w;

	if (cpu >= nr_cpu_ids || cpu == smp_processor_id())
		return false;
	w = per_cpu(rrxe_spread, cpu);
	if (!w)
		return false;
	kthread_queue_work(w, &per_cpu_ptr(rq->cpu_work, cpu)->work);
	return true;
}

/*
 * The caller (in process context, holding no lock the receive path takes)
 * will receive in place what its sends on this CPU bring to idle queues,
 * until rrxe_rx_inline_end(). Returns whether it does: false when another
 * task, asleep on this CPU inside its own begin/end, has the CPU's slot.
 */
bool rrxe_rx_inline_begin(void)
{
	struct rrxe_inline *in;

	might_sleep();
	migrate_disable();
	in = this_cpu_ptr(&rrxe_inline);
	/* Preemption off: a task preempted here must not see the slot half set. */
	preempt_disable();
	if (in->owner) {
		preempt_enable();
		migrate_enable();
		return false;
	}
	in->owner = current;
	preempt_enable();
	return true;
}

/*
 * Drains the queues @in noted, and what draining them brings, up to
 * RRXE_INLINE_BUDGET packets; the rest goes to the queues' workers. With
 * @end, the caller stops receiving in place: the slot is given up once
 * the budget is spent (later packets wake their workers) or the noted
 * queues are drained. Without it, the caller keeps the slot, and packets
 * that come later are noted for its next drain.
 */
static void rrxe_rx_inline_drain(struct rrxe_inline *in, bool end)
{
	unsigned int budget = RRXE_INLINE_BUDGET;
	struct rrxe_lane *rq;

	/*
	 * Bottom halves off, not just preemption, whenever the slot is read
	 * and changed here: the receive softirq adds to it (rrxe_rx_defer),
	 * and it runs at the end of any interrupt that preemption lets in.
	 * With preemption off only, a packet noted between the look at @n
	 * and the giving up of the slot was never drained nor its worker
	 * woken: it stayed queued, holding a reference on its device, until
	 * another packet came to that queue, if one ever did.
	 */
	local_bh_disable();
	in->draining = true;
	local_bh_enable();
	for (;;) {
		local_bh_disable();
		if (!in->n) {
			if (in->owner == current) {
				in->draining = false;
				if (end) {
					/* The test build can widen the window
					 * the comment above is about. */
					rrxe_test_rx_inline_wait();
					in->owner = NULL;
				}
			}
			local_bh_enable();
			break;
		}
		rq = in->rq[--in->n];
		/* Out of budget: later packets wake their workers. */
		if (!budget && end && in->owner == current) {
			in->draining = false;
			in->owner = NULL;
		}
		local_bh_enable();
		if (budget && skb_queue_len(&rq->q) > RRXE_INLINE_MAX_QUEUED &&
		    rrxe_rx_spread(rq)) {
			/* Handed to another CPU. */
		} else if (budget && !atomic_xchg(&rq->busy, 1)) {
			budget -= rrxe_rxq_drain(rq, budget);
			rrxe_rxq_release(rq);
		} else {
			kthread_queue_work(rq->rxq->worker, &rq->work);
		}
		ib_device_put(rq->rxq->ibdev);
	}
}

/*
 * Ends what rrxe_rx_inline_begin() began (when it returned true): drains
 * the queues noted since (see rrxe_rx_inline_drain).
 */
void rrxe_rx_inline_end(void)
{
	rrxe_rx_inline_drain(this_cpu_ptr(&rrxe_inline), true);
	migrate_enable();
}

/*
 * Drains now what the caller's receiving in place noted so far, and goes
 * on receiving in place; nothing when the caller does not receive in
 * place on this CPU (it never called rrxe_rx_inline_begin, or that
 * returned false). For a sender that has just sent the last packet of its
 * run: the packet's receiver need not wait for the sender to finish its
 * own bookkeeping. Nothing either inside a drain (see struct
 * rrxe_inline). Process context, holding no lock the receive path
 * takes.
 */
void rrxe_rx_inline_flush(void)
{
	struct rrxe_inline *in;
	bool mine;

	might_sleep();
	/* The owner is pinned to its CPU (begin); anyone else just looks. */
	preempt_disable();
	in = this_cpu_ptr(&rrxe_inline);
	mine = in->owner == current && !in->draining;
	preempt_enable();
	if (mine)
		rrxe_rx_inline_drain(in, false);
}

/* Frees @rq's lanes' per-CPU works (none of them queued). */
static void rrxe_rxq_free(struct rrxe_rxq *rq)
{
	unsigned int l;

	for (l = 0; l < RRXE_LANES; l++) {
		free_percpu(rq->lane[l].cpu_work);
		kfree(rq->lane[l].scratch);
	}
	kfree(rq);
}

/* A receive queue for @ibdev, before it is registered. */
struct rrxe_rxq *rrxe_rxq_create(struct ib_device *ibdev)
{
	struct rrxe_rxq *rq = kzalloc(sizeof(*rq), GFP_KERNEL);
	unsigned int cpu, l;

	if (!rq)
		return NULL;
	for (l = 0; l < RRXE_LANES; l++) {
		struct rrxe_lane *lane = &rq->lane[l];

		lane->cpu_work = alloc_percpu(struct rrxe_rxq_cpu_work);
		lane->scratch = kmalloc(RRXE_RX_SCRATCH, GFP_KERNEL);
		if (!lane->cpu_work || !lane->scratch) {
			rrxe_rxq_free(rq);
			return NULL;
		}
		for_each_possible_cpu(cpu) {
			kthread_init_work(&per_cpu_ptr(lane->cpu_work, cpu)->work,
					  rrxe_rxq_cpu_work_fn);
			per_cpu_ptr(lane->cpu_work, cpu)->rq = lane;
		}
		skb_queue_head_init(&lane->q);
		kthread_init_work(&lane->work, rrxe_rxq_work_fn);
		atomic_set(&lane->busy, 0);
		lane->rxq = rq;
	}
	rq->worker = kthread_run_worker(0, "rrxe-rx");
	if (IS_ERR(rq->worker)) {
		rrxe_rxq_free(rq);
		return NULL;
	}
	rq->ibdev = ibdev;
	atomic_set(&rq->bytes, 0);
	return rq;
}

/*
 * Frees a receive queue once its device is unregistered (no packet can be
 * queued any more): stops its worker and drops what is left.
 */
void rrxe_rxq_destroy(struct rrxe_rxq *rq)
{
	struct sk_buff *skb;
	unsigned int cpu, l;

	for (l = 0; l < RRXE_LANES; l++) {
		for_each_possible_cpu(cpu)
			kthread_cancel_work_sync(&per_cpu_ptr(rq->lane[l].cpu_work, cpu)->work);
		kthread_cancel_work_sync(&rq->lane[l].work);
	}
	kthread_destroy_worker(rq->worker);
	for (l = 0; l < RRXE_LANES; l++) {
		while ((skb = skb_dequeue(&rq->lane[l].q))) {
			ib_device_put(rq->ibdev);
			kfree_skb(skb);
		}
	}
	rrxe_rxq_free(rq);
}

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

/*
 * The spread workers, one per CPU online now, when more than one is. A CPU
 * without one (a single CPU, one brought up later, no memory) is not
 * handed queues: its senders drain what they bring in place.
 */
static void rrxe_spread_start(void)
{
	struct kthread_worker *w;
	unsigned int cpu;

	cpus_read_lock();
	if (num_online_cpus() > 1) {
		for_each_online_cpu(cpu) {
			w = kthread_run_worker_on_cpu(cpu, 0, "rrxe-spread/%u");
			if (IS_ERR(w))
				continue;
			per_cpu(rrxe_spread, cpu) = w;
		}
	}
	cpus_read_unlock();
}

/* Every receive queue is gone (and with it every spread work). */
static void rrxe_spread_stop(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		if (per_cpu(rrxe_spread, cpu))
			kthread_destroy_worker(per_cpu(rrxe_spread, cpu));
		per_cpu(rrxe_spread, cpu) = NULL;
	}
}

int rrxe_net_init(void (*handler)(struct ib_device *ibdev, const u8 *data, unsigned int len),
		  bool (*accept)(struct ib_device *ibdev, const u8 *data, unsigned int len),
		  struct rrxe_rxq *(*rxq_of)(struct ib_device *ibdev),
		  void (*full)(struct ib_device *ibdev))
{
	int err;

	rrxe_rx_handler = handler;
	rrxe_rx_accept = accept;
	rrxe_rxq_of = rxq_of;
	rrxe_rx_full_cb = full;
	rrxe_accept_scratch = alloc_percpu(struct rrxe_rx_scratch);
	if (!rrxe_accept_scratch)
		return -ENOMEM;
	rrxe_wq = alloc_workqueue("rrxe", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!rrxe_wq) {
		free_percpu(rrxe_accept_scratch);
		return -ENOMEM;
	}
	rrxe_spread_start();
	err = register_pernet_subsys(&rrxe_net_ops);
	if (err) {
		rrxe_spread_stop();
		destroy_workqueue(rrxe_wq);
		free_percpu(rrxe_accept_scratch);
	}
	return err;
}

/*
 * Every device (and with it its receive queue) is gone already; the stack
 * may still hold skbs of their QPs' gates, which are waited for.
 */
void rrxe_net_fini(void)
{
	rrxe_gates_wait();
	unregister_pernet_subsys(&rrxe_net_ops);
	synchronize_net();
	rrxe_spread_stop();
	destroy_workqueue(rrxe_wq);
	free_percpu(rrxe_accept_scratch);
}

/*
 * A connected QP's route. Its flow (destination, source and TOS: the QP's
 * address vector, and the device's netdev) is fixed between two
 * modify_qp calls that set the address vector, and those reset it. The
 * dst_cache drops a route the stack has invalidated (a routing change, the
 * netdev going away) on the next lookup; a lookup also checks that the
 * cached route was made for the same source address. The cache is per CPU
 * and its users disable BH, so packets of one QP may be built on several
 * CPUs at once. Without CONFIG_DST_CACHE every packet is routed anew.
 */
struct rrxe_route {
#if IS_ENABLED(CONFIG_DST_CACHE)
	struct dst_cache cache;
#else
	u8 unused; /* not an empty struct */
#endif
};

/* With @account, charged (per-CPU part too) to the caller's memory cgroup. */
struct rrxe_route *rrxe_route_alloc(bool account)
{
	gfp_t gfp = account ? GFP_KERNEL_ACCOUNT : GFP_KERNEL;
	struct rrxe_route *r = kzalloc(sizeof(*r), gfp);

	if (!r)
		return NULL;
#if IS_ENABLED(CONFIG_DST_CACHE)
	if (dst_cache_init(&r->cache, gfp)) {
		kfree(r);
		return NULL;
	}
#endif
	return r;
}

/* Frees a route made by rrxe_route_alloc, which nobody uses any more. */
void rrxe_route_free(struct rrxe_route *r)
{
	if (!r)
		return;
#if IS_ENABLED(CONFIG_DST_CACHE)
	dst_cache_destroy(&r->cache);
#endif
	kfree(r);
}

/* Forgets the cached route: the flow changed. Any context. */
void rrxe_route_reset(struct rrxe_route *r)
{
#if IS_ENABLED(CONFIG_DST_CACHE)
	dst_cache_reset(&r->cache);
#endif
}

/* The IPv4 route of @fl, from @route when it has one (NULL: none cached). */
static struct rtable *rrxe_route4(struct net *net, struct rrxe_route *route,
				  struct flowi4 *fl)
{
	struct rtable *rt = NULL;

#if IS_ENABLED(CONFIG_DST_CACHE)
	if (route) {
		__be32 saddr;

		local_bh_disable();
		rt = dst_cache_get_ip4(&route->cache, &saddr);
		local_bh_enable();
		if (rt && saddr == fl->saddr)
			return rt;
		if (rt)
			ip_rt_put(rt);
	}
#endif
	rt = ip_route_output_key(net, fl);
#if IS_ENABLED(CONFIG_DST_CACHE)
	if (route && !IS_ERR(rt)) {
		local_bh_disable();
		dst_cache_set_ip4(&route->cache, &rt->dst, fl->saddr);
		local_bh_enable();
	}
#endif
	return rt;
}

#if IS_ENABLED(CONFIG_IPV6)
/* The IPv6 route of @fl, from @route when it has one; never an error dst. */
static struct dst_entry *rrxe_route6(struct net *net, struct rrxe_route *route,
				     struct flowi6 *fl)
{
	struct dst_entry *dst;

#if IS_ENABLED(CONFIG_DST_CACHE)
	if (route) {
		struct in6_addr saddr;

		local_bh_disable();
		dst = dst_cache_get_ip6(&route->cache, &saddr);
		local_bh_enable();
		if (dst && ipv6_addr_equal(&saddr, &fl->saddr))
			return dst;
		if (dst)
			dst_release(dst);
	}
#endif
	dst = ip6_dst_lookup_flow(net, NULL, fl, NULL);
	if (IS_ERR(dst))
		return dst;
	if (dst->error) {
		int err = dst->error;

		dst_release(dst);
		return ERR_PTR(err);
	}
#if IS_ENABLED(CONFIG_DST_CACHE)
	if (route) {
		local_bh_disable();
		dst_cache_set_ip6(&route->cache, dst, &fl->saddr);
		local_bh_enable();
	}
#endif
	return dst;
}
#endif

/*
 * An skb for one IP packet of @len bytes leaving through @ndev's namespace
 * towards @daddr, routed with @saddr as source (through @route's cache when
 * @route is not NULL): the route is attached, and *data points at the
 * (uninitialised) network header the caller fills.
 */
struct sk_buff *rrxe_tx_skb(struct net_device *ndev, struct rrxe_route *route, bool ipv6,
			    const u8 *saddr, const u8 *daddr, u8 tos, unsigned int len,
			    u8 **data)
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
		rt = rrxe_route4(net, route, &fl);
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
		dst = rrxe_route6(net, route, &fl);
		if (IS_ERR(dst))
			return ERR_CAST(dst);
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

/*
 * Gives an IPv4 packet built by rrxe_tx_skb the stack's identification,
 * reserving @segs of them: a UDP GSO packet's segments take the one given
 * and the next @segs - 1 (as the stack numbers them when it splits it).
 */
void rrxe_tx_ip4_ident(struct sk_buff *skb, unsigned int segs)
{
	__ip_select_ident(dev_net(skb_dst(skb)->dev), ip_hdr(skb), segs);
}

/*
 * Bursts (rust/rrxe/gso.rs): an IPv4 packet built by rrxe_tx_skb, the
 * head, with its headers and its first packet's UDP payload, and more
 * packets chained on its frag_list, each a linear skb holding its own IP
 * and UDP headers in front of its data (its UDP payload), as UDP GRO's
 * fraglist mode chains the datagrams it receives. The stack splits it
 * (skb_segment_list) by unchaining the packets, without copying them: in
 * the receiving namespace when a veth passes it whole, or before a device
 * that cannot take it. Each packet keeps its own UDP header (its length,
 * checksum 0); the stack sets each IPv4 header's length and checksum and
 * numbers their identifications on from the head's.
 *
 * rrxe_tx_burst_add appends a packet of @len bytes (IP header to the end
 * of the UDP payload) after @tail (NULL: the first after the head) and
 * points *data at its IP header; NULL if it cannot be allocated. The head
 * owns it from then on.
 */
struct sk_buff *rrxe_tx_burst_add(struct sk_buff *head, struct sk_buff *tail,
				  unsigned int len, u8 **data)
{
	struct net_device *dev = skb_dst(head)->dev;
	unsigned int hdrs = sizeof(struct iphdr) + sizeof(struct udphdr);
	struct sk_buff *skb;

	if (len < hdrs)
		return NULL;
	skb = alloc_skb(len + LL_RESERVED_SPACE(dev) + dev->needed_tailroom, GFP_KERNEL);
	if (!skb)
		return NULL;
	skb_reserve(skb, LL_RESERVED_SPACE(dev));
	skb->protocol = htons(ETH_P_IP);
	skb_reset_network_header(skb);
	skb_set_transport_header(skb, sizeof(struct iphdr));
	*data = skb_put(skb, len);
	__skb_pull(skb, hdrs);
	if (tail)
		tail->next = skb;
	else
		skb_shinfo(head)->frag_list = skb;
	head->len += skb->len;
	head->data_len += skb->len;
	head->truesize += skb->truesize;
	return skb;
}

/*
 * Makes @head, with the packets rrxe_tx_burst_add chained to it, a UDP
 * GSO packet of @segs segments, the head's UDP payload @seg bytes (the
 * largest). Its UDP length covers them all (the stack trims a packet to
 * it), and the transmit gate counts @segs packets for it (tskey, which
 * only send timestamps use, and rrxe's packets have none, keeps the count
 * where segmentation, which resets gso_segs, leaves it).
 */
void rrxe_tx_burst_finish(struct sk_buff *head, unsigned int seg, unsigned int segs)
{
	struct udphdr *uh = udp_hdr(head);

	skb_shinfo(head)->gso_size = seg;
	skb_shinfo(head)->gso_segs = segs;
	skb_shinfo(head)->gso_type = SKB_GSO_UDP_L4 | SKB_GSO_FRAGLIST;
	skb_shinfo(head)->tskey = segs;
	head->ip_summed = CHECKSUM_UNNECESSARY;
	uh->len = htons(head->len - skb_transport_offset(head));
	uh->check = 0;
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
