// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel consumers in every context, as storage and network ULPs are:
 *
 *  1. RC SENDs whose receive completions are processed in softirq
 *     (IB_POLL_SOFTIRQ, as nvme-rdma, iSER and SRP poll) and whose send
 *     completions are processed in a workqueue (IB_POLL_WORKQUEUE). The
 *     receive callbacks re-post their buffers from softirq; SENDs are
 *     posted from an hrtimer (hard irq; threaded on PREEMPT_RT, as
 *     interrupt handlers are), from a timer (softirq) and from the send
 *     callbacks (workqueue), as RDS posts from tasklets. Every
 *     message is checked byte for byte and counted exactly once.
 *  2. A CQ whose completion handler polls it, re-arms it and posts to the
 *     QPs on it from inside the handler, through traffic and through the
 *     flush of a QP moved to ERR. A provider that calls the handler with a
 *     lock held that polling or posting takes deadlocks here.
 *  3. Fast-registration MRs mapped with ib_map_mr_sg from an hrtimer (hard
 *     irq), a timer (softirq) and process context. The verb does not sleep
 *     (rxe and mlx5 take no lock in it), so a ULP may map where it posts.
 *     A lock the provider takes there with interrupts on and also in an
 *     interrupt is an inconsistent lock state, which lockdep reports.
 *
 * On the debug kernel, lockdep sees every lock the provider takes in each
 * of these contexts.
 */
#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/unaligned.h>
#include <rdma/ib_cache.h>

#include "kverbs.h"

#define CTX_MSGS 1024	/* messages in part 1, each with its own send buffer */
#define CTX_RECVS 32	/* receive buffers (and credits) in part 1 */
#define CTX_SLOTS 64	/* send completion contexts (and SQ depth) in part 1 */
#define CTX_BUF 256	/* bytes per buffer */

enum source { SRC_HARDIRQ, SRC_SOFTIRQ, SRC_WORKQUEUE, SRC_PROCESS, SRC_N };
static const char *const src_name[SRC_N] = { "hardirq", "softirq", "workqueue", "process" };

struct ctx_slot {
	struct ib_cqe cqe;
	struct ctx_test *t;
	int idx;
};

struct ctx_test {
	struct ib_qp *a, *b;
	struct ib_pd *pd;
	u8 *sbuf, *rbuf;
	u64 sdma, rdma;
	struct ctx_slot tx[CTX_SLOTS], rx[CTX_RECVS];
	atomic_t credits, next_seq, received, sent_ok, errors;
	atomic_t posted[SRC_N];
	atomic_t wrong_ctx;	/* a source that ran outside its context */
	unsigned long *seen;
	struct completion done;
	struct hrtimer hard;
	struct timer_list soft;
	bool stop;
	char why[96];
};

static u32 msg_len(u32 seq)
{
	return 16 + (seq * 37) % (CTX_BUF - 16);
}

static void ctx_fail(struct ctx_test *t, const char *why, u32 a, u32 b)
{
	if (atomic_inc_return(&t->errors) == 1)
		snprintf(t->why, sizeof(t->why), "%s (%u, %u)", why, a, b);
	complete(&t->done);
}

/*
 * Whether `src` leaves the next message to a timer that is behind: each
 * timer must post at least one message in CTX_SHARE, or the faster
 * sources (the 100 us hrtimer, the send completions) would take every
 * credit and a context would go untested. The softirq timer never waits,
 * the hrtimer waits only for it, the others for both: none waits on a
 * source that waits on it.
 */
#define CTX_SHARE 32
static bool ctx_yields(struct ctx_test *t, enum source src)
{
	int owed = atomic_read(&t->next_seq) / CTX_SHARE;

	if (src == SRC_SOFTIRQ)
		return false;
	if (atomic_read(&t->posted[SRC_SOFTIRQ]) < owed)
		return true;
	return src != SRC_HARDIRQ && atomic_read(&t->posted[SRC_HARDIRQ]) < owed;
}

/* Posts the next message, if a receive buffer is free for it. */
static bool ctx_post(struct ctx_test *t, enum source src)
{
	const struct ib_send_wr *bad;
	struct ib_send_wr wr = {};
	struct ib_sge sge;
	u32 seq, slot, i, len;
	u8 *p;
	int r;

	if (ctx_yields(t, src))
		return false;
	if (atomic_dec_if_positive(&t->credits) < 0)
		return false;
	seq = atomic_inc_return(&t->next_seq) - 1;
	if (seq >= CTX_MSGS) {
		atomic_inc(&t->credits);
		return false;
	}
	/* A send buffer is the provider's until its SEND completes: none is
	 * reused (posts from several contexts finish out of order). */
	slot = seq % CTX_SLOTS;
	len = msg_len(seq);
	p = t->sbuf + seq * CTX_BUF;
	put_unaligned_le32(seq, p);
	put_unaligned_le32(src, p + 4);
	for (i = 8; i < len; i++)
		p[i] = (u8)(seq * 7 + i);
	ib_dma_sync_single_for_device(t->a->device, t->sdma + seq * CTX_BUF, len, DMA_TO_DEVICE);
	sge = (struct ib_sge){ .addr = t->sdma + seq * CTX_BUF, .length = len,
			       .lkey = t->pd->local_dma_lkey };
	wr.wr_cqe = &t->tx[slot].cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	r = ib_post_send(t->a, &wr, &bad);
	if (r) {
		ctx_fail(t, "ib_post_send failed (source, errno)", src, -r);
		return false;
	}
	atomic_inc(&t->posted[src]);
	return true;
}

static int ctx_post_recv(struct ctx_test *t, int idx)
{
	struct ib_sge sge = { .addr = t->rdma + idx * CTX_BUF, .length = CTX_BUF,
			      .lkey = t->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_cqe = &t->rx[idx].cqe, .sg_list = &sge, .num_sge = 1 };
	const struct ib_recv_wr *bad;

	return ib_post_recv(t->b, &wr, &bad);
}

/* A receive completion, in softirq (IB_POLL_SOFTIRQ). */
static void ctx_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ctx_slot *s = container_of(wc->wr_cqe, struct ctx_slot, cqe);
	struct ctx_test *t = s->t;
	u8 *p = t->rbuf + s->idx * CTX_BUF;
	u32 seq, i, len;

	if (!in_serving_softirq())
		atomic_inc(&t->wrong_ctx);
	if (wc->status != IB_WC_SUCCESS) {
		if (!t->stop)
			ctx_fail(t, "receive completion status (status, vendor)", wc->status, wc->vendor_err);
		return;
	}
	ib_dma_sync_single_for_cpu(cq->device, t->rdma + s->idx * CTX_BUF, CTX_BUF, DMA_FROM_DEVICE);
	seq = get_unaligned_le32(p);
	len = seq < CTX_MSGS ? msg_len(seq) : 0;
	if (seq >= CTX_MSGS || wc->byte_len != len || get_unaligned_le32(p + 4) >= SRC_N)
		return ctx_fail(t, "message header or length wrong (seq, byte_len)", seq, wc->byte_len);
	for (i = 8; i < len; i++)
		if (p[i] != (u8)(seq * 7 + i))
			return ctx_fail(t, "message data wrong (seq, offset)", seq, i);
	if (test_and_set_bit(seq, t->seen))
		return ctx_fail(t, "message received twice (seq, 0)", seq, 0);
	if (ctx_post_recv(t, s->idx))
		return ctx_fail(t, "ib_post_recv from softirq failed (slot, 0)", s->idx, 0);
	atomic_inc(&t->credits);
	if (atomic_inc_return(&t->received) == CTX_MSGS)
		complete(&t->done);
}

/* A send completion, in a workqueue (IB_POLL_WORKQUEUE): posts the next. */
static void ctx_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ctx_slot *s = container_of(wc->wr_cqe, struct ctx_slot, cqe);
	struct ctx_test *t = s->t;

	if (in_interrupt())
		atomic_inc(&t->wrong_ctx);
	if (wc->status != IB_WC_SUCCESS) {
		ctx_fail(t, "send completion status (status, vendor)", wc->status, wc->vendor_err);
		return;
	}
	atomic_inc(&t->sent_ok);
	if (!READ_ONCE(t->stop))
		ctx_post(t, SRC_WORKQUEUE);
}

static enum hrtimer_restart ctx_hard(struct hrtimer *h)
{
	struct ctx_test *t = container_of(h, struct ctx_test, hard);

	if (!in_hardirq())
		atomic_inc(&t->wrong_ctx);
	ctx_post(t, SRC_HARDIRQ);
	if (READ_ONCE(t->stop))
		return HRTIMER_NORESTART;
	hrtimer_forward_now(h, us_to_ktime(100));
	return HRTIMER_RESTART;
}

static void ctx_soft(struct timer_list *tl)
{
	struct ctx_test *t = timer_container_of(t, tl, soft);

	if (!in_serving_softirq())
		atomic_inc(&t->wrong_ctx);
	ctx_post(t, SRC_SOFTIRQ);
	if (!READ_ONCE(t->stop))
		mod_timer(&t->soft, jiffies + 1);
}

static int ctx_traffic(struct ib_device *dev, struct ib_pd *pd, union ib_gid *gid)
{
	struct ib_cq *cqa = NULL, *cqb = NULL;
	struct ctx_test *t;
	int ret = -EINVAL, i;
	long left;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->pd = pd;
	t->seen = bitmap_zalloc(CTX_MSGS, GFP_KERNEL);
	t->sbuf = kvmalloc(CTX_MSGS * CTX_BUF, GFP_KERNEL);
	t->rbuf = kzalloc(CTX_RECVS * CTX_BUF, GFP_KERNEL);
	init_completion(&t->done);
	atomic_set(&t->credits, CTX_RECVS);
	for (i = 0; i < CTX_SLOTS; i++)
		t->tx[i] = (struct ctx_slot){ .cqe.done = ctx_send_done, .t = t, .idx = i };
	for (i = 0; i < CTX_RECVS; i++)
		t->rx[i] = (struct ctx_slot){ .cqe.done = ctx_recv_done, .t = t, .idx = i };
	cqa = ib_alloc_cq(dev, NULL, 256, 0, IB_POLL_WORKQUEUE);
	cqb = ib_alloc_cq(dev, NULL, 256, 0, IB_POLL_SOFTIRQ);
	if (!t->seen || !t->sbuf || !t->rbuf || IS_ERR(cqa) || IS_ERR(cqb)) {
		pr_err("rrxe_kverbs_test: FAIL contexts: buffers or CQs (%ld, %ld)\n",
		       PTR_ERR(cqa), PTR_ERR(cqb));
		goto out_free;
	}
	t->sdma = ib_dma_map_single(dev, t->sbuf, CTX_MSGS * CTX_BUF, DMA_TO_DEVICE);
	t->rdma = ib_dma_map_single(dev, t->rbuf, CTX_RECVS * CTX_BUF, DMA_FROM_DEVICE);
	t->a = kverbs_rc_qp(pd, cqa, CTX_SLOTS);
	t->b = IS_ERR(t->a) ? NULL : kverbs_rc_qp(pd, cqb, CTX_SLOTS);
	if (IS_ERR_OR_NULL(t->a) || IS_ERR_OR_NULL(t->b)) {
		pr_err("rrxe_kverbs_test: FAIL contexts: RC QPs %ld %ld\n", PTR_ERR(t->a), PTR_ERR(t->b));
		goto out;
	}
	ret = kverbs_rc_connect(t->a, t->b, gid) ?: kverbs_rc_connect(t->b, t->a, gid);
	for (i = 0; !ret && i < CTX_RECVS; i++)
		ret = ctx_post_recv(t, i);
	if (ret) {
		pr_err("rrxe_kverbs_test: FAIL contexts: connect or receives: %d\n", ret);
		ret = -EINVAL;
		goto out;
	}
	ret = -EINVAL;

	hrtimer_setup(&t->hard, ctx_hard, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	timer_setup(&t->soft, ctx_soft, 0);
	hrtimer_start(&t->hard, us_to_ktime(100), HRTIMER_MODE_REL);
	mod_timer(&t->soft, jiffies + 1);
	for (i = 0; i < 4; i++)
		ctx_post(t, SRC_PROCESS);
	left = wait_for_completion_timeout(&t->done, 120 * HZ);
	WRITE_ONCE(t->stop, true);
	hrtimer_cancel(&t->hard);
	timer_delete_sync(&t->soft);
	/* The last send completions may still be on their way. */
	for (i = 0; i < 500 && atomic_read(&t->sent_ok) < atomic_read(&t->received); i++)
		msleep(10);

	if (atomic_read(&t->errors)) {
		pr_err("rrxe_kverbs_test: FAIL contexts: %s\n", t->why);
	} else if (!left || atomic_read(&t->received) != CTX_MSGS) {
		pr_err("rrxe_kverbs_test: FAIL contexts: %d of %d messages received in 120 s\n",
		       atomic_read(&t->received), CTX_MSGS);
	} else if (atomic_read(&t->sent_ok) != CTX_MSGS) {
		pr_err("rrxe_kverbs_test: FAIL contexts: %d of %d send completions\n",
		       atomic_read(&t->sent_ok), CTX_MSGS);
	} else if (atomic_read(&t->wrong_ctx)) {
		pr_err("rrxe_kverbs_test: FAIL contexts: %d callbacks outside their context\n",
		       atomic_read(&t->wrong_ctx));
	} else if (!atomic_read(&t->posted[SRC_HARDIRQ]) || !atomic_read(&t->posted[SRC_SOFTIRQ])) {
		pr_err("rrxe_kverbs_test: FAIL contexts: no SEND posted from hardirq (%d) or softirq (%d)\n",
		       atomic_read(&t->posted[SRC_HARDIRQ]), atomic_read(&t->posted[SRC_SOFTIRQ]));
	} else {
		ret = 0;
		pr_info("rrxe_kverbs_test: ok kernel consumers in every context: %d RC SENDs checked byte for byte, receives in softirq (IB_POLL_SOFTIRQ) re-posted there, sends completed in a workqueue (IB_POLL_WORKQUEUE); posted from %s %d, %s %d, %s %d, %s %d\n",
			CTX_MSGS, src_name[0], atomic_read(&t->posted[0]), src_name[1],
			atomic_read(&t->posted[1]), src_name[2], atomic_read(&t->posted[2]),
			src_name[3], atomic_read(&t->posted[3]));
	}
out:
	WRITE_ONCE(t->stop, true);
	if (!IS_ERR_OR_NULL(t->b))
		ib_destroy_qp(t->b);
	if (!IS_ERR_OR_NULL(t->a))
		ib_destroy_qp(t->a);
	ib_dma_unmap_single(dev, t->sdma, CTX_MSGS * CTX_BUF, DMA_TO_DEVICE);
	ib_dma_unmap_single(dev, t->rdma, CTX_RECVS * CTX_BUF, DMA_FROM_DEVICE);
out_free:
	if (!IS_ERR_OR_NULL(cqa))
		ib_free_cq(cqa);
	if (!IS_ERR_OR_NULL(cqb))
		ib_free_cq(cqb);
	kvfree(t->sbuf);
	kfree(t->rbuf);
	bitmap_free(t->seen);
	kfree(t);
	return ret;
}

/* Part 2: a completion handler that polls, re-arms and posts. */

#define H_MSGS 50
#define H_RECVS 8

struct handler_test {
	struct ib_qp *c, *d;
	struct ib_pd *pd;
	u8 *buf;
	u64 dma;
	int recvs, sends, flushed, extra, bad;
	bool flushing;
	spinlock_t lock;	/* the handler's state */
	struct completion done;
};

static int h_post_recv(struct handler_test *h, u64 id)
{
	struct ib_sge sge = { .addr = h->dma + CTX_BUF, .length = CTX_BUF,
			      .lkey = h->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	const struct ib_recv_wr *bad;

	return ib_post_recv(h->d, &wr, &bad);
}

static int h_post_send(struct handler_test *h)
{
	struct ib_sge sge = { .addr = h->dma, .length = 100, .lkey = h->pd->local_dma_lkey };
	struct ib_send_wr wr = { .wr_id = 1000 + h->sends, .sg_list = &sge, .num_sge = 1,
				 .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	const struct ib_send_wr *bad;

	h->sends++;
	return ib_post_send(h->c, &wr, &bad);
}

/*
 * The handler: drains the CQ, posting as it goes, and re-arms it. It may
 * run on two CPUs at once (a completion after the re-arm), hence the lock.
 */
static void h_handler(struct ib_cq *cq, void *ctx)
{
	struct handler_test *h = ctx;
	unsigned long flags;
	struct ib_wc wc;
	bool done = false;

	spin_lock_irqsave(&h->lock, flags);
	do {
		while (ib_poll_cq(cq, 1, &wc) == 1) {
			if (wc.qp == h->d && wc.status == IB_WC_WR_FLUSH_ERR && h->flushing) {
				/* A receive posted from here is flushed at once. */
				if (++h->flushed == 1 && h_post_recv(h, 99))
					h->bad++;
				if (wc.wr_id == 99)
					h->extra++;
				done |= h->flushed == H_RECVS + 1;
			} else if (wc.status != IB_WC_SUCCESS) {
				h->bad++;
			} else if (wc.qp == h->d && wc.opcode == IB_WC_RECV) {
				if (wc.byte_len != 100 || h_post_recv(h, wc.wr_id))
					h->bad++;
				if (++h->recvs < H_MSGS && h_post_send(h))
					h->bad++;
				done |= h->recvs == H_MSGS;
			} else if (wc.qp != h->c || wc.opcode != IB_WC_SEND) {
				h->bad++;
			}
		}
	} while (ib_req_notify_cq(cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS) > 0);
	done |= h->bad != 0;
	spin_unlock_irqrestore(&h->lock, flags);
	if (done)
		complete(&h->done);
}

static int ctx_handler(struct ib_device *dev, struct ib_pd *pd, union ib_gid *gid)
{
	struct ib_cq_init_attr ca = { .cqe = 128 };
	struct ib_qp_attr err = { .qp_state = IB_QPS_ERR };
	struct handler_test *h;
	struct ib_cq *cq;
	int ret = -EINVAL, i;
	long left;

	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->pd = pd;
	spin_lock_init(&h->lock);
	init_completion(&h->done);
	h->buf = kzalloc(2 * CTX_BUF, GFP_KERNEL);
	cq = ib_create_cq(dev, h_handler, NULL, h, &ca);
	if (!h->buf || IS_ERR(cq)) {
		pr_err("rrxe_kverbs_test: FAIL handler: buffer or CQ (%ld)\n", PTR_ERR(cq));
		goto out_free;
	}
	h->dma = ib_dma_map_single(dev, h->buf, 2 * CTX_BUF, DMA_BIDIRECTIONAL);
	h->c = kverbs_rc_qp(pd, cq, 16);
	h->d = IS_ERR(h->c) ? NULL : kverbs_rc_qp(pd, cq, 16);
	if (IS_ERR_OR_NULL(h->c) || IS_ERR_OR_NULL(h->d)) {
		pr_err("rrxe_kverbs_test: FAIL handler: RC QPs %ld %ld\n", PTR_ERR(h->c), PTR_ERR(h->d));
		goto out;
	}
	ret = kverbs_rc_connect(h->c, h->d, gid) ?: kverbs_rc_connect(h->d, h->c, gid);
	for (i = 0; !ret && i < H_RECVS; i++)
		ret = h_post_recv(h, i);
	ret = ret ?: ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	/* The first SEND; the handler posts the rest. */
	ret = ret ?: h_post_send(h);
	if (ret) {
		pr_err("rrxe_kverbs_test: FAIL handler: setup: %d\n", ret);
		ret = -EINVAL;
		goto out;
	}
	ret = -EINVAL;
	left = wait_for_completion_timeout(&h->done, 60 * HZ);
	if (!left || h->bad || h->recvs != H_MSGS) {
		pr_err("rrxe_kverbs_test: FAIL handler: %d of %d messages, %d bad completions\n",
		       h->recvs, H_MSGS, h->bad);
		goto out;
	}
	/* Let the last send completion through, then flush the receiver. */
	msleep(100);
	spin_lock_irq(&h->lock);
	reinit_completion(&h->done);
	h->flushing = true;
	spin_unlock_irq(&h->lock);
	if (ib_modify_qp(h->d, &err, IB_QP_STATE)) {
		pr_err("rrxe_kverbs_test: FAIL handler: modify to ERR\n");
		goto out;
	}
	left = wait_for_completion_timeout(&h->done, 30 * HZ);
	if (!left || h->bad || h->flushed != H_RECVS + 1 || h->extra != 1) {
		pr_err("rrxe_kverbs_test: FAIL handler: %d flushed (want %d), %d extra, %d bad\n",
		       h->flushed, H_RECVS + 1, h->extra, h->bad);
		goto out;
	}
	ret = 0;
	pr_info("rrxe_kverbs_test: ok a CQ handler polls, re-arms and posts from inside the handler: %d SENDs and receives, then %d flushed receives (one posted by the handler in ERR)\n",
		H_MSGS, H_RECVS + 1);
out:
	if (!IS_ERR_OR_NULL(h->d))
		ib_destroy_qp(h->d);
	if (!IS_ERR_OR_NULL(h->c))
		ib_destroy_qp(h->c);
	ib_dma_unmap_single(dev, h->dma, 2 * CTX_BUF, DMA_BIDIRECTIONAL);
out_free:
	if (!IS_ERR_OR_NULL(cq))
		ib_destroy_cq(cq);
	kfree(h->buf);
	kfree(h);
	return ret;
}

#define MAP_PAGES 4

/* Part 3: one MR mapped from each of SRC_HARDIRQ, SRC_SOFTIRQ, SRC_PROCESS. */
struct map_test {
	struct ib_mr *mr[SRC_N];
	struct scatterlist sg[MAP_PAGES];
	int got[SRC_N];
	atomic_t wrong_ctx;
	struct completion done[SRC_N];
	struct hrtimer hard;
	struct timer_list soft;
};

static void map_from(struct map_test *m, enum source src)
{
	m->got[src] = ib_map_mr_sg(m->mr[src], m->sg, MAP_PAGES, NULL, PAGE_SIZE);
	complete(&m->done[src]);
}

static enum hrtimer_restart map_hard(struct hrtimer *h)
{
	struct map_test *m = container_of(h, struct map_test, hard);

	if (!in_hardirq())
		atomic_inc(&m->wrong_ctx);
	map_from(m, SRC_HARDIRQ);
	return HRTIMER_NORESTART;
}

static void map_soft(struct timer_list *tl)
{
	struct map_test *m = timer_container_of(m, tl, soft);

	if (!in_serving_softirq())
		atomic_inc(&m->wrong_ctx);
	map_from(m, SRC_SOFTIRQ);
}

static int ctx_map(struct ib_device *dev, struct ib_pd *pd)
{
	static const enum source srcs[] = { SRC_PROCESS, SRC_SOFTIRQ, SRC_HARDIRQ };
	struct page *pages[MAP_PAGES] = {};
	struct map_test *m;
	int i, n, ret = -ENOMEM;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	sg_init_table(m->sg, MAP_PAGES);
	for (i = 0; i < MAP_PAGES; i++) {
		pages[i] = alloc_page(GFP_KERNEL);
		if (!pages[i])
			goto free;
		sg_set_page(&m->sg[i], pages[i], PAGE_SIZE, 0);
	}
	n = ib_dma_map_sg(dev, m->sg, MAP_PAGES, DMA_BIDIRECTIONAL);
	ret = -EINVAL;
	if (n != MAP_PAGES) {
		pr_err("rrxe_kverbs_test: FAIL contexts: ib_dma_map_sg: %d\n", n);
		goto free;
	}
	for (i = 0; i < ARRAY_SIZE(srcs); i++) {
		struct ib_mr *mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, MAP_PAGES);

		if (IS_ERR(mr)) {
			pr_err("rrxe_kverbs_test: FAIL contexts: ib_alloc_mr: %ld\n", PTR_ERR(mr));
			goto dereg;
		}
		m->mr[srcs[i]] = mr;
		init_completion(&m->done[srcs[i]]);
	}
	hrtimer_setup(&m->hard, map_hard, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	timer_setup(&m->soft, map_soft, 0);
	map_from(m, SRC_PROCESS);
	mod_timer(&m->soft, jiffies + 1);
	hrtimer_start(&m->hard, us_to_ktime(100), HRTIMER_MODE_REL);
	for (i = 0; i < ARRAY_SIZE(srcs); i++)
		if (!wait_for_completion_timeout(&m->done[srcs[i]], 10 * HZ)) {
			pr_err("rrxe_kverbs_test: FAIL contexts: no mapping from %s\n", src_name[srcs[i]]);
			goto stop;
		}
	for (i = 0; i < ARRAY_SIZE(srcs); i++) {
		struct ib_mr *mr = m->mr[srcs[i]];

		if (m->got[srcs[i]] != MAP_PAGES || mr->length != MAP_PAGES * PAGE_SIZE ||
		    mr->iova != sg_dma_address(&m->sg[0])) {
			pr_err("rrxe_kverbs_test: FAIL contexts: ib_map_mr_sg from %s mapped %d pages, length %llu\n",
			       src_name[srcs[i]], m->got[srcs[i]], mr->length);
			goto stop;
		}
	}
	if (atomic_read(&m->wrong_ctx)) {
		pr_err("rrxe_kverbs_test: FAIL contexts: a mapping ran outside its context\n");
		goto stop;
	}
	ret = 0;
	pr_info("rrxe_kverbs_test: ok contexts: ib_map_mr_sg of %d pages from hardirq, softirq and process context\n",
		MAP_PAGES);
stop:
	hrtimer_cancel(&m->hard);
	timer_delete_sync(&m->soft);
dereg:
	for (i = 0; i < SRC_N; i++)
		if (m->mr[i] && ib_dereg_mr(m->mr[i])) {
			pr_err("rrxe_kverbs_test: FAIL contexts: ib_dereg_mr\n");
			ret = -EINVAL;
		}
	ib_dma_unmap_sg(dev, m->sg, MAP_PAGES, DMA_BIDIRECTIONAL);
free:
	for (i = 0; i < MAP_PAGES; i++)
		if (pages[i])
			__free_page(pages[i]);
	kfree(m);
	return ret;
}

int kverbs_check_contexts(struct ib_device *dev, struct ib_pd *pd)
{
	union ib_gid gid;
	int r;

	r = rdma_query_gid(dev, 1, 0, &gid);
	CHECK(!r, "contexts: rdma_query_gid: %d\n", r);
	return ctx_traffic(dev, pd, &gid) ?: ctx_handler(dev, pd, &gid) ?: ctx_map(dev, pd);
}
