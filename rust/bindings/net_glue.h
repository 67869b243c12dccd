/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCEv2 sockets and packets (net_glue.c): the per-namespace UDP tunnel
 * sockets, the receive queue and workqueue, skb transmission, and the
 * transmit gates (tx_gate.c).
 */
#ifndef RRXE_NET_GLUE_H
#define RRXE_NET_GLUE_H

#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

struct rrxe_rxq;
int rrxe_net_init(void (*handler)(struct ib_device *ibdev, const u8 *data, unsigned int len),
		  bool (*accept)(struct ib_device *ibdev, const u8 *data, unsigned int len),
		  struct rrxe_rxq *(*rxq_of)(struct ib_device *ibdev),
		  void (*full)(struct ib_device *ibdev));
struct rrxe_rxq *rrxe_rxq_create(struct ib_device *ibdev);
void rrxe_rxq_destroy(struct rrxe_rxq *rq);
bool rrxe_rx_inline_begin(void);
void rrxe_rx_inline_end(void);
void rrxe_rx_inline_flush(void);
void rrxe_net_fini(void);
int rrxe_net_get(struct net *net, u64 *ticket);
void rrxe_net_put(u64 ticket);
struct workqueue_struct *rrxe_workqueue(void);
void rrxe_flush_workqueue(void);
struct rrxe_route;
struct rrxe_route *rrxe_route_alloc(bool account);
void rrxe_route_free(struct rrxe_route *route);
void rrxe_route_reset(struct rrxe_route *route);
struct sk_buff *rrxe_tx_skb(struct net_device *ndev, struct rrxe_route *route, bool ipv6,
			    const u8 *saddr, const u8 *daddr, u8 tos, unsigned int len,
			    u8 **data);
void rrxe_tx_ip4_ident(struct sk_buff *skb, unsigned int segs);
struct sk_buff *rrxe_tx_burst_add(struct sk_buff *head, struct sk_buff *tail,
				  unsigned int len, u8 **data);
void rrxe_tx_burst_finish(struct sk_buff *head, unsigned int seg, unsigned int segs);
int rrxe_tx_send(struct sk_buff *skb, bool ipv6);
void rrxe_kfree_skb(struct sk_buff *skb);

/* Transmit gates (tx_gate.c). */
struct rrxe_gate;
struct rrxe_gate *rrxe_gate_create(bool account);
const void *rrxe_gate_open(struct rrxe_gate *g, void (*wake)(const void *owner),
			   const void *owner);
const void *rrxe_gate_close(struct rrxe_gate *g);
void rrxe_gate_destroy(struct rrxe_gate *g);
bool rrxe_gate_must_wait(struct rrxe_gate *g, unsigned int high, unsigned int low);
unsigned int rrxe_gate_out(struct rrxe_gate *g);
int rrxe_tx_send_gated(struct sk_buff *skb, bool ipv6, struct rrxe_gate *g);
void rrxe_gates_wait(void);

/*
 * Hooks of the test build (test_hooks.c, built with RRXE_TEST_HOOKS=1
 * only): the module that users build calls none of them.
 */
enum rrxe_test_site {
	RRXE_TEST_SITE_NONE = 0,
	/* An MW rkey's resolution, between its lookup and its use. */
	RRXE_TEST_SITE_MW_RESOLVE = 1,
	/* A copy by key, between finding the MR and copying its memory. */
	RRXE_TEST_SITE_MR_COPY = 2,
	/* The receive path's entry in process context, for each packet. */
	RRXE_TEST_SITE_RX = 3,
	/* A UD or UC WQE failed: its error completion is posted, the call
	 * that sent it has not returned. */
	RRXE_TEST_SITE_SEND_FAILED = 4,
	RRXE_TEST_SITES,
};
void rrxe_test_hold(unsigned int site);
#ifdef RRXE_TEST_HOOKS
void rrxe_test_rx_inline_wait(void);
#else
static inline void rrxe_test_rx_inline_wait(void) { }
#endif

#endif
