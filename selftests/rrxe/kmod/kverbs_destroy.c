// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel QP destroyed while traffic for it is in flight, as a ULP tears
 * down a connection while a peer keeps sending: no completion that names
 * the destroyed QP may reach its CQ, which lives on (ib_poll_cq would hand
 * the consumer a wc->qp pointing at freed memory).
 *
 * A process (rrxe_race_test ud_flood, on CPU 0) floods the multicast group
 * ff0e::5a17 with UD datagrams (Q_Key 0x1111); rrxe delivers each to the
 * group's QPs of the device in that process's doorbell. Each round, a
 * thread on CPU 0 at real-time priority (so that its timer wakes it in the
 * middle of a delivery, wherever that is) creates DR_QPS UD QPs on a
 * shared CQ, fills their receive queues, attaches them to the group,
 * sleeps a random while, then detaches and destroys the QPs, drains the
 * CQ, and lets the process run on: whatever then reaches the CQ was posted
 * after ib_destroy_qp returned, and must not name those QPs.
 */
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>

#include "kverbs.h"

#define DR_QPS 8		/* QPs in the group each round */
#define DR_RECVS 64	/* receives posted to each */
#define DR_BUF 256

struct destroy_race {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	u64 dma;
	int rounds;
	/* Results. */
	int ret;
	unsigned long received;	/* receive completions before a destroy */
	unsigned long late;	/* completions naming a destroyed QP, after */
	unsigned long foreign;	/* completions naming another QP (none) */
	int late_round;
	struct completion done;
};

static const union ib_gid dr_group = {
	.raw = { 0xff, 0x0e, [14] = 0x5a, [15] = 0x17 },
};

/* A UD QP on the shared CQ in RTS with Q_Key 0x1111, its receive queue full. */
static struct ib_qp *dr_qp(struct destroy_race *r)
{
	struct ib_qp_init_attr ia = {
		.send_cq = r->cq, .recv_cq = r->cq, .qp_type = IB_QPT_UD,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 1, .max_recv_wr = DR_RECVS, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_sge sge = { .addr = r->dma, .length = DR_BUF, .lkey = r->pd->local_dma_lkey };
	struct ib_recv_wr rw = { .sg_list = &sge, .num_sge = 1 };
	const struct ib_recv_wr *bad;
	struct ib_qp *qp = ib_create_qp(r->pd, &ia);
	int ret, i;

	if (IS_ERR(qp))
		return qp;
	ret = kverbs_ud_rts(qp, 1);
	/* Every receive lands in the same buffer: only completions count. */
	for (i = 0; !ret && i < DR_RECVS; i++) {
		rw.wr_id = i;
		ret = ib_post_recv(qp, &rw, &bad);
	}
	ret = ret ?: ib_attach_mcast(qp, (union ib_gid *)&dr_group, 0);
	if (ret) {
		ib_destroy_qp(qp);
		return ERR_PTR(ret);
	}
	return qp;
}

/* Takes every completion on the CQ; counts those naming one of `qp`. */
static unsigned long dr_drain(struct destroy_race *r, struct ib_qp **qp)
{
	struct ib_wc wc[16];
	unsigned long hits = 0;
	int n, i, k;

	while ((n = ib_poll_cq(r->cq, ARRAY_SIZE(wc), wc)) > 0)
		for (i = 0; i < n; i++) {
			for (k = 0; k < DR_QPS && wc[i].qp != qp[k]; k++)
				;
			if (k < DR_QPS)
				hits++;
			else
				r->foreign++;
		}
	return hits;
}

static int dr_thread(void *arg)
{
	struct destroy_race *r = arg;
	struct ib_qp *qp[DR_QPS];
	int i, k;

	sched_set_fifo(current);
	for (i = 0; i < r->rounds && !r->ret; i++) {
		unsigned long late;

		for (k = 0; k < DR_QPS; k++) {
			qp[k] = dr_qp(r);
			if (IS_ERR(qp[k])) {
				pr_err("rrxe_kverbs_test: FAIL destroy race round %d: UD QP: %ld\n", i,
				       PTR_ERR(qp[k]));
				r->ret = -EINVAL;
				break;
			}
		}
		if (r->ret) {
			while (k--)
				if (ib_detach_mcast(qp[k], (union ib_gid *)&dr_group, 0) == 0)
					ib_destroy_qp(qp[k]);
			break;
		}
		usleep_range(50, 50 + get_random_u32_below(500));
		/* Woken by the timer: the process is wherever it was. */
		for (k = 0; k < DR_QPS; k++)
			if (ib_detach_mcast(qp[k], (union ib_gid *)&dr_group, 0) || ib_destroy_qp(qp[k])) {
				pr_err("rrxe_kverbs_test: FAIL destroy race round %d: detach or destroy failed\n", i);
				r->ret = -EINVAL;
			}
		/* Posted before the destroy returned: the consumer's to take. */
		r->received += dr_drain(r, qp);
		/* The process finishes what it was doing; nothing of qp may follow. */
		usleep_range(300, 500);
		late = dr_drain(r, qp);
		if (late && !r->late)
			r->late_round = i;
		r->late += late;
	}
	kthread_complete_and_exit(&r->done, 0);
}

/*
 * The check: `rounds` rounds (the module parameter destroy_race), with
 * ud_flood running. Fails if any completion named a destroyed QP, or if no
 * datagram was received at all (nothing was raced).
 */
int kverbs_check_destroy_race(struct ib_device *dev, struct ib_pd *pd, int rounds)
{
	struct destroy_race *r = kzalloc(sizeof(*r), GFP_KERNEL);
	struct task_struct *t;
	void *buf = kzalloc(DR_BUF, GFP_KERNEL);
	int ret = -ENOMEM;

	if (!r || !buf)
		goto out;
	r->dev = dev;
	r->pd = pd;
	r->rounds = rounds;
	init_completion(&r->done);
	r->cq = ib_alloc_cq(dev, NULL, DR_QPS * DR_RECVS, 0, IB_POLL_DIRECT);
	if (IS_ERR(r->cq)) {
		ret = PTR_ERR(r->cq);
		goto out;
	}
	r->dma = ib_dma_map_single(dev, buf, DR_BUF, DMA_FROM_DEVICE);
	t = kthread_create(dr_thread, r, "rrxe_dr");
	if (IS_ERR(t)) {
		ret = PTR_ERR(t);
		goto unmap;
	}
	kthread_bind(t, 0);
	wake_up_process(t);
	wait_for_completion(&r->done);
	ret = r->ret;
	if (!ret && (r->late || r->foreign)) {
		pr_err("rrxe_kverbs_test: FAIL destroy race: %lu completions named a destroyed QP after ib_destroy_qp returned (the first in round %d of %d; %lu received before the destroys); %lu named another QP\n",
		       r->late, r->late_round, rounds, r->received, r->foreign);
		ret = -EINVAL;
	} else if (!ret && !r->received) {
		pr_err("rrxe_kverbs_test: FAIL destroy race: no datagram reached the QPs (is ud_flood running?)\n");
		ret = -EINVAL;
	} else if (!ret) {
		pr_info("rrxe_kverbs_test: ok %d rounds of %d kernel UD QPs destroyed amid a flood of datagrams (%lu received before): no completion named a destroyed QP afterwards\n",
			rounds, DR_QPS, r->received);
	}
unmap:
	ib_dma_unmap_single(dev, r->dma, DR_BUF, DMA_FROM_DEVICE);
	ib_free_cq(r->cq);
out:
	kfree(buf);
	kfree(r);
	return ret;
}
