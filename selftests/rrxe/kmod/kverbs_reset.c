// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel RC QPs moved to RESET and reconnected, as a ULP recovering a
 * connection does: a SEND to a QP without receives RNR-loops (rnr_retry
 * 7); the requester goes to RESET from RTS, a receive is posted to the
 * responder, which goes to RESET too (a receive posted to it then is
 * refused); both come back to RTS with new PSNs. The old SEND and the old
 * receive are gone without a completion: a new SEND completes alone, into
 * a receive posted after the reset, byte for byte, and nothing else
 * completes.
 */
#include <linux/delay.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>

#include "kverbs.h"

#define RS_BUF 8192
#define RS_OLD 4096	/* the receive posted before the reset */
#define RS_NEW 6144	/* the receive posted after it */
#define RS_LEN 300	/* the new SEND's length */

/* The next completion on `cq` within `ms`, or -ETIMEDOUT. */
static int rs_poll(struct ib_cq *cq, struct ib_wc *wc, int ms)
{
	for (; ms >= 0; ms -= 5) {
		if (ib_poll_cq(cq, 1, wc) == 1)
			return 0;
		msleep(5);
	}
	return -ETIMEDOUT;
}

static int rs_modify(struct ib_qp *qp, enum ib_qp_state st)
{
	struct ib_qp_attr a = {
		.qp_state = st, .port_num = 1,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ,
	};

	return ib_modify_qp(qp, &a, st == IB_QPS_INIT ?
			    IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS : IB_QP_STATE);
}

static int rs_post_recv(struct ib_qp *qp, u64 id, u64 addr, u32 lkey)
{
	struct ib_sge s = { .addr = addr, .length = 1024, .lkey = lkey };
	struct ib_recv_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 };
	const struct ib_recv_wr *bad;

	return ib_post_recv(qp, &wr, &bad);
}

static int rs_post_send(struct ib_qp *qp, u64 id, u64 addr, u32 len, u32 lkey)
{
	struct ib_sge s = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_send_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = IB_WR_SEND,
				 .send_flags = IB_SEND_SIGNALED };
	const struct ib_send_wr *bad;

	return ib_post_send(qp, &wr, &bad);
}

static int rs_run(struct ib_qp *a, struct ib_qp *b, struct ib_cq *cq, union ib_gid *gid, u8 *buf, u64 dma,
		  u32 lkey)
{
	bool got_send = false, got_recv = false;
	struct ib_wc wc;
	int i, r;

	for (i = 0; i < RS_BUF; i++)
		buf[i] = i < RS_OLD ? (u8)(i * 7 + 3) : 0;
	r = kverbs_rc_connect_psn(a, b, gid, 100, 200) ?: kverbs_rc_connect_psn(b, a, gid, 200, 100);
	CHECK(!r, "kernel RC RESET: connect: %d\n", r);
	r = rs_post_send(a, 1, dma, 100, lkey);
	CHECK(!r, "kernel RC RESET: post the first SEND: %d\n", r);
	CHECK(rs_poll(cq, &wc, 20), "kernel RC RESET: the SEND without a receive completed (wr_id %llu status %d)\n",
	      wc.wr_id, wc.status);
	r = rs_modify(a, IB_QPS_RESET);
	CHECK(!r, "kernel RC RESET: the requester from RTS to RESET: %d\n", r);
	r = rs_post_recv(b, 50, dma + RS_OLD, lkey);
	CHECK(!r, "kernel RC RESET: post a receive before the responder's RESET: %d\n", r);
	CHECK(rs_poll(cq, &wc, 10), "kernel RC RESET: a completion after the requester's RESET (wr_id %llu status %d)\n",
	      wc.wr_id, wc.status);
	r = rs_modify(b, IB_QPS_RESET);
	CHECK(!r, "kernel RC RESET: the responder from RTS to RESET: %d\n", r);
	CHECK(rs_post_recv(b, 53, dma + RS_NEW, lkey), "kernel RC RESET: a receive posted in RESET was taken\n");
	r = rs_modify(a, IB_QPS_INIT) ?: rs_modify(b, IB_QPS_INIT);
	r = r ?: kverbs_rc_connect_psn(a, b, gid, 0x7a5a5a, 0x3c3c3c) ?:
		 kverbs_rc_connect_psn(b, a, gid, 0x3c3c3c, 0x7a5a5a);
	CHECK(!r, "kernel RC RESET: reconnect with new PSNs: %d\n", r);
	r = rs_post_recv(b, 51, dma + RS_NEW, lkey) ?: rs_post_send(a, 2, dma + 1000, RS_LEN, lkey);
	CHECK(!r, "kernel RC RESET: post after the reset: %d\n", r);
	for (i = 0; i < 2; i++) {
		CHECK(!rs_poll(cq, &wc, 2000), "kernel RC RESET: completion %d of 2 after the reset missing\n", i);
		if (wc.qp == a && wc.wr_id == 2 && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_SEND)
			got_send = true;
		else if (wc.qp == b && wc.wr_id == 51 && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_RECV &&
			 wc.byte_len == RS_LEN)
			got_recv = true;
		else
			CHECK(0, "kernel RC RESET: completion wr_id %llu status %d opcode %d byte_len %u on QP %u after the reset; expected the new SEND (2) and its receive (51)\n",
			      wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.qp->qp_num);
	}
	CHECK(got_send && got_recv, "kernel RC RESET: not both the new SEND and its receive completed\n");
	CHECK(rs_poll(cq, &wc, 100), "kernel RC RESET: a further completion wr_id %llu status %d after the reset\n",
	      wc.wr_id, wc.status);
	CHECK(!memcmp(buf + RS_NEW, buf + 1000, RS_LEN), "kernel RC RESET: the new SEND's data differ\n");
	for (i = RS_OLD; i < RS_BUF; i++)
		CHECK((i >= RS_NEW && i < RS_NEW + RS_LEN) || !buf[i],
		      "kernel RC RESET: byte %d written (the old receive, or past the new one's data)\n", i);
	return 0;
}

int kverbs_check_reset(struct ib_device *dev, struct ib_pd *pd)
{
	struct ib_qp *a = NULL, *b = NULL;
	struct ib_cq *cq;
	union ib_gid gid;
	u8 *buf;
	u64 dma;
	int ret;

	cq = ib_alloc_cq(dev, NULL, 32, 0, IB_POLL_DIRECT);
	buf = kzalloc(RS_BUF, GFP_KERNEL);
	if (IS_ERR(cq) || !buf) {
		pr_err("rrxe_kverbs_test: FAIL kernel RC RESET: buffer or CQ\n");
		ret = -ENOMEM;
		goto out_free;
	}
	dma = ib_dma_map_single(dev, buf, RS_BUF, DMA_BIDIRECTIONAL);
	ret = rdma_query_gid(dev, 1, 0, &gid);
	if (!ret) {
		a = kverbs_rc_qp(pd, cq, 8);
		b = IS_ERR(a) ? NULL : kverbs_rc_qp(pd, cq, 8);
		if (IS_ERR_OR_NULL(a) || IS_ERR_OR_NULL(b))
			ret = -EINVAL;
	}
	if (ret)
		pr_err("rrxe_kverbs_test: FAIL kernel RC RESET: GID or QPs: %d\n", ret);
	else
		ret = rs_run(a, b, cq, &gid, buf, dma, pd->local_dma_lkey);
	if (!ret)
		pr_info("rrxe_kverbs_test: ok kernel RC RESET: a SEND RNR-looping and a posted receive dropped without a completion, a receive refused in RESET; reconnected with new PSNs only the new SEND completes, into the new receive\n");
	if (!IS_ERR_OR_NULL(b))
		ib_destroy_qp(b);
	if (!IS_ERR_OR_NULL(a))
		ib_destroy_qp(a);
	ib_dma_unmap_single(dev, dma, RS_BUF, DMA_BIDIRECTIONAL);
out_free:
	if (!IS_ERR_OR_NULL(cq))
		ib_free_cq(cq);
	kfree(buf);
	return ret;
}
