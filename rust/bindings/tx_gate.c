// SPDX-License-Identifier: GPL-2.0
/*
 * Transmit gates: the C side of rust/net/gate.rs's TxGate. A gate counts the
 * packets a QP handed to the stack that the stack has not freed yet (each
 * packet of a burst), as rxe counts a QP's skb_out: a sender that
 * finds a high mark of them out waits until fewer than a low mark are, and
 * the gate wakes it (the marks are the sender's: see logic/gate.rs).
 * Without it, a requester with a full window of 128 packets hands all of
 * them to the NIC at once, and a NIC whose far end drains slowly (a
 * virtio-net link between two QEMUs) drops the tail of every burst.
 *
 * Each gated skb is owned (skb->sk) by the gate's kernel socket and has
 * rrxe_gate_skb_free as destructor; the stack calls it when it frees or
 * orphans the skb (a NIC's transmit completion, ip_rcv on a veth peer).
 * The socket never sends: it only gives the skbs an owner the stack
 * accepts, as rxe gives each QP a socket. rxe's socket is an AF_INET one
 * for IPv6 packets too, and so is this one.
 *
 * Lifetimes: a gate holds one reference for its owner and one per skb
 * out, and is freed with the last. Its owner (a QP) opens it and closes it
 * before it goes; the wake callback runs under the gate's lock, and
 * rrxe_gate_close takes that lock, so no wake runs after close returns.
 * The socket is released at the first close (that may sleep; a QP closes
 * its gate when destroyed, in process context), and its struct sock stays
 * until the gate is freed, which may happen in any context. Module exit waits until every gate is freed,
 * and destructors run inside an RCU read-side section, which module
 * unloading waits out before the code goes.
 */
#include <linux/atomic.h>
#include <linux/net.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait_bit.h>
#include <net/sock.h>

#include "net_glue.h"

struct rrxe_gate {
	struct socket *sock;	/* released at close */
	struct sock *sk;	/* held until the gate is freed */
	atomic_t out;		/* skbs sent and not yet freed */
	atomic_t waiting;	/* a sender waits for out < low */
	unsigned int low;	/* the waiting sender's low mark */
	refcount_t ref;		/* 1 for the owner, 1 per skb out */
	spinlock_t lock;	/* guards owner and wake */
	const void *owner;
	void (*wake)(const void *owner);
};

/* Gates not yet freed: module exit waits for none. */
static atomic_t rrxe_gates_live = ATOMIC_INIT(0);

static void rrxe_gate_put(struct rrxe_gate *g)
{
	if (!refcount_dec_and_test(&g->ref))
		return;
	sock_put(g->sk);
	kfree(g);
	if (atomic_dec_and_test(&rrxe_gates_live))
		wake_up_var(&rrxe_gates_live);
}

/*
 * A gate with no owner, or NULL. Process context. With @account, the gate
 * is charged to the caller's memory cgroup; the socket is, either way
 * (its struct sock and inode come from SLAB_ACCOUNT caches), unless the
 * caller is a kernel thread.
 */
struct rrxe_gate *rrxe_gate_create(bool account)
{
	struct rrxe_gate *g = kzalloc(sizeof(*g), account ? GFP_KERNEL_ACCOUNT : GFP_KERNEL);

	if (!g)
		return NULL;
	if (sock_create_kern(&init_net, AF_INET, SOCK_DGRAM, IPPROTO_UDP, &g->sock)) {
		kfree(g);
		return NULL;
	}
	g->sk = g->sock->sk;
	sock_hold(g->sk);
	rcu_assign_sk_user_data(g->sk, g);
	atomic_set(&g->out, 0);
	atomic_set(&g->waiting, 0);
	refcount_set(&g->ref, 1);
	spin_lock_init(&g->lock);
	atomic_inc(&rrxe_gates_live);
	return g;
}

/*
 * Gives the gate its owner and the callback that wakes it (or none, with
 * NULLs); returns the owner it had (NULL: none), which the caller
 * releases. No wake runs on the old owner once this returns.
 */
const void *rrxe_gate_open(struct rrxe_gate *g, void (*wake)(const void *owner),
			   const void *owner)
{
	const void *old;
	unsigned long flags;

	spin_lock_irqsave(&g->lock, flags);
	old = g->owner;
	g->owner = owner;
	g->wake = wake;
	spin_unlock_irqrestore(&g->lock, flags);
	return old;
}

/*
 * Takes the owner away (returned, for the caller to release): no wake runs
 * once this returns. The first close releases the socket, so it may sleep;
 * after it, the gate's owner may go from any context.
 */
const void *rrxe_gate_close(struct rrxe_gate *g)
{
	const void *old = rrxe_gate_open(g, NULL, NULL);
	struct socket *sock = xchg(&g->sock, NULL);

	if (sock)
		sock_release(sock);
	return old;
}

/*
 * Closes the gate (sleeping only if it was never closed) and drops the
 * owner's reference; packets still out keep the rest until freed.
 */
void rrxe_gate_destroy(struct rrxe_gate *g)
{
	if (!g)
		return;
	rrxe_gate_close(g);
	rrxe_gate_put(g);
}

/*
 * Whether a sender must wait: true when @high or more skbs are out, and
 * then the gate wakes the owner once fewer than @low are.
 */
bool rrxe_gate_must_wait(struct rrxe_gate *g, unsigned int high, unsigned int low)
{
	if (atomic_read(&g->out) < high)
		return false;
	WRITE_ONCE(g->low, low);
	atomic_set(&g->waiting, 1);
	/*
	 * Orders the flag before the second look at out; pairs with the full
	 * barrier of atomic_sub_return in the destructor, which decrements
	 * out before it looks at the flag.
	 */
	smp_mb();
	if (atomic_read(&g->out) < high) {
		atomic_set(&g->waiting, 0);
		return false;
	}
	return true;
}

/*
 * The packets @skb counts for: a burst's (rrxe_tx_burst_finish) are in its
 * tskey, which the stack keeps until it frees the skb.
 */
static unsigned int rrxe_gate_pkts(struct sk_buff *skb)
{
	return max_t(unsigned int, skb_shinfo(skb)->tskey, 1);
}

/* How many packets are out now. */
unsigned int rrxe_gate_out(struct rrxe_gate *g)
{
	return max(atomic_read(&g->out), 0);
}

static void rrxe_gate_skb_free(struct sk_buff *skb)
{
	struct rrxe_gate *g;
	unsigned long flags;

	rcu_read_lock();
	g = rcu_dereference_sk_user_data(skb->sk);
	if (!WARN_ON_ONCE(!g)) {
		if (atomic_sub_return(rrxe_gate_pkts(skb), &g->out) < (int)READ_ONCE(g->low) &&
		    atomic_xchg(&g->waiting, 0)) {
			spin_lock_irqsave(&g->lock, flags);
			if (g->wake)
				g->wake(g->owner);
			spin_unlock_irqrestore(&g->lock, flags);
		}
		rrxe_gate_put(g);
	}
	rcu_read_unlock();
}

/* Sends a packet built by rrxe_tx_skb through @g (consumes it). */
int rrxe_tx_send_gated(struct sk_buff *skb, bool ipv6, struct rrxe_gate *g)
{
	refcount_inc(&g->ref);
	atomic_add(rrxe_gate_pkts(skb), &g->out);
	skb->sk = g->sk;
	skb->destructor = rrxe_gate_skb_free;
	return rrxe_tx_send(skb, ipv6);
}

/* Module exit: waits until the stack has freed every gated skb. */
void rrxe_gates_wait(void)
{
	wait_var_event(&rrxe_gates_live, !atomic_read(&rrxe_gates_live));
	synchronize_rcu();
}
