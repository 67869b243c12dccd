// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_kverbs_test: kernel verbs against the RXE-driver device bound to
 * netdev=NAME, as a kernel ULP uses them: PDs (whose local_dma_lkey and
 * unsafe global rkey come from get_dma_mr), kernel CQs, fast-registration
 * MRs from ib_alloc_mr, ib_map_mr_sg over a scatterlist, kernel UD traffic,
 * kernel RC traffic with fast registration, and RC QPs reset and
 * reconnected. Loading succeeds only if every check passes; each check
 * logs one "rrxe_kverbs_test: ok" line, a failure logs what went wrong
 * and the load fails with -EINVAL.
 */
#include <linux/module.h>
#include <linux/delay.h>
#include <linux/netdevice.h>
#include <linux/scatterlist.h>
#include <linux/gfp.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

#include "kverbs.h"

static char *netdev = "";
module_param(netdev, charp, 0444);
MODULE_PARM_DESC(netdev, "netdev whose RXE-driver RDMA device to test");

static int destroy_race;
module_param(destroy_race, int, 0444);
MODULE_PARM_DESC(destroy_race, "instead of the checks, this many rounds of the destroy race (kverbs_destroy.c)");

#define NPAGES 20
#define MR_INDEX_MAX (1u << 19)

static bool mr_key_ok(u32 key)
{
	return (key >> 8) >= 1 && (key >> 8) <= MR_INDEX_MAX;
}

static int check_pds(struct ib_device *dev)
{
	struct ib_pd *pd, *gpd;
	int ret = 0;

	pd = ib_alloc_pd(dev, 0);
	CHECK(!IS_ERR(pd), "ib_alloc_pd: %ld\n", PTR_ERR(pd));
	if (!pd->__internal_mr || !mr_key_ok(pd->local_dma_lkey)) {
		pr_err("rrxe_kverbs_test: FAIL local_dma_lkey 0x%x (internal MR %p)\n",
		       pd->local_dma_lkey, pd->__internal_mr);
		ret = -EINVAL;
	}
	gpd = ib_alloc_pd(dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(gpd)) {
		pr_err("rrxe_kverbs_test: FAIL ib_alloc_pd(UNSAFE_GLOBAL_RKEY): %ld\n", PTR_ERR(gpd));
		ib_dealloc_pd(pd);
		return -EINVAL;
	}
	if (!mr_key_ok(gpd->unsafe_global_rkey) ||
	    gpd->unsafe_global_rkey != gpd->__internal_mr->rkey ||
	    gpd->local_dma_lkey != gpd->__internal_mr->lkey) {
		pr_err("rrxe_kverbs_test: FAIL global rkey 0x%x, lkey 0x%x\n",
		       gpd->unsafe_global_rkey, gpd->local_dma_lkey);
		ret = -EINVAL;
	}
	if (pd->local_dma_lkey == gpd->local_dma_lkey) {
		pr_err("rrxe_kverbs_test: FAIL two PDs share DMA key 0x%x\n", pd->local_dma_lkey);
		ret = -EINVAL;
	}
	ib_dealloc_pd(gpd);
	ib_dealloc_pd(pd);
	if (!ret)
		pr_info("rrxe_kverbs_test: ok PDs get DMA MRs: local_dma_lkey and unsafe global rkey\n");
	return ret;
}

static int check_alloc_mr(struct ib_pd *pd)
{
	static const struct { enum ib_mr_type type; u32 n; } bad[] = {
		{ IB_MR_TYPE_MEM_REG, 0 },
		{ IB_MR_TYPE_MEM_REG, 513 },
		{ IB_MR_TYPE_MEM_REG, U32_MAX },
		{ IB_MR_TYPE_SG_GAPS, 16 },
		{ IB_MR_TYPE_DM, 16 },
	};
	struct ib_mr *mr;
	u32 keys[64];
	int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		mr = ib_alloc_mr(pd, bad[i].type, bad[i].n);
		if (!IS_ERR(mr)) {
			ib_dereg_mr(mr);
			CHECK(0, "ib_alloc_mr(type %d, %u) succeeded\n", bad[i].type, bad[i].n);
		}
		CHECK(PTR_ERR(mr) == -EINVAL, "ib_alloc_mr(type %d, %u): %ld, expected -EINVAL\n",
		      bad[i].type, bad[i].n, PTR_ERR(mr));
	}
	/* Many at once, distinct keys; and the maximum page list. */
	for (i = 0; i < 1000; i++) {
		mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, i % 64 == 0 ? 512 : 1 + i % 32);
		CHECK(!IS_ERR(mr), "ib_alloc_mr #%d: %ld\n", i, PTR_ERR(mr));
		if (mr->lkey != mr->rkey || !mr_key_ok(mr->lkey)) {
			ib_dereg_mr(mr);
			CHECK(0, "fast MR keys lkey 0x%x rkey 0x%x\n", mr->lkey, mr->rkey);
		}
		keys[i % 64] = mr->lkey;
		CHECK(ib_dereg_mr(mr) == 0, "ib_dereg_mr #%d\n", i);
	}
	pr_info("rrxe_kverbs_test: ok ib_alloc_mr: bad types and sizes -EINVAL, 1000 alloc/dereg, keys in the MR range (last 0x%x)\n",
		keys[999 % 64]);
	return 0;
}

static int map(struct ib_mr *mr, struct scatterlist *sg, int n, unsigned int *off,
	       unsigned int page_size, int want, u64 iova, u64 len, const char *what)
{
	int got = ib_map_mr_sg(mr, sg, n, off, page_size);

	CHECK(got == want, "%s: ib_map_mr_sg returned %d, expected %d\n", what, got, want);
	if (want > 0) {
		CHECK(mr->iova == iova && mr->length == len && mr->page_size == page_size,
		      "%s: iova 0x%llx length %llu page_size %u, expected 0x%llx %llu %u\n", what,
		      mr->iova, mr->length, mr->page_size, iova, len, page_size);
	}
	pr_info("rrxe_kverbs_test: ok %s\n", what);
	return 0;
}

static int check_map_mr_sg(struct ib_device *dev, struct ib_pd *pd)
{
	struct scatterlist sg[NPAGES];
	struct page *pages[NPAGES] = {};
	struct ib_mr *mr;
	unsigned int off;
	int i, n, ret = -ENOMEM;
	u64 a0;

	sg_init_table(sg, NPAGES);
	for (i = 0; i < NPAGES; i++) {
		pages[i] = alloc_page(GFP_KERNEL);
		if (!pages[i])
			goto free;
		sg_set_page(&sg[i], pages[i], PAGE_SIZE, 0);
	}
	n = ib_dma_map_sg(dev, sg, NPAGES, DMA_BIDIRECTIONAL);
	ret = -EINVAL;
	if (n != NPAGES) {
		pr_err("rrxe_kverbs_test: FAIL ib_dma_map_sg: %d\n", n);
		goto free;
	}
	a0 = sg_dma_address(&sg[0]);
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 16);
	if (IS_ERR(mr)) {
		pr_err("rrxe_kverbs_test: FAIL ib_alloc_mr(16): %ld\n", PTR_ERR(mr));
		goto unmap;
	}
	off = 100;
	ret = map(mr, sg, 4, NULL, PAGE_SIZE, 4, a0, 4 * PAGE_SIZE,
		  "ib_map_mr_sg: 4 pages") ?:
	      map(mr, sg, NPAGES, NULL, PAGE_SIZE, 16, a0, 16 * PAGE_SIZE,
		  "ib_map_mr_sg: 20 pages into a 16-page MR maps 16") ?:
	      map(mr, sg, 2, &off, PAGE_SIZE, 2, a0 + 100, 2 * PAGE_SIZE - 100,
		  "ib_map_mr_sg: with a first-entry offset") ?:
	      map(mr, sg, 2, NULL, 1000, -EINVAL, 0, 0,
		  "ib_map_mr_sg: page size 1000 fails -EINVAL") ?:
	      map(mr, sg, 1, NULL, PAGE_SIZE, 1, a0, PAGE_SIZE,
		  "ib_map_mr_sg: remapping after a failure");
	if (ib_dereg_mr(mr)) {
		pr_err("rrxe_kverbs_test: FAIL ib_dereg_mr of a mapped MR\n");
		ret = -EINVAL;
	}
unmap:
	ib_dma_unmap_sg(dev, sg, NPAGES, DMA_BIDIRECTIONAL);
free:
	for (i = 0; i < NPAGES; i++)
		if (pages[i])
			__free_page(pages[i]);
	return ret;
}

static void comp_handler(struct ib_cq *cq, void *ctx)
{
}

static int check_cqs(struct ib_device *dev)
{
	static const struct { unsigned int cqe; int vec; } bad[] = {
		/* cqe 0 is refused by the core itself, with a WARN. */
		{ 32768, 0 }, { UINT_MAX, 0 }, { 16, -1 },
	};
	struct ib_cq_init_attr ca = {};
	struct ib_wc wc[4];
	struct ib_cq *cq;
	int i, r, n;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ca.cqe = bad[i].cqe;
		ca.comp_vector = bad[i].vec < 0 ? dev->num_comp_vectors : bad[i].vec;
		cq = ib_create_cq(dev, comp_handler, NULL, NULL, &ca);
		if (!IS_ERR(cq)) {
			ib_destroy_cq(cq);
			CHECK(0, "ib_create_cq(cqe %u, vector %u) succeeded\n", ca.cqe, ca.comp_vector);
		}
		CHECK(PTR_ERR(cq) == -EINVAL, "ib_create_cq(cqe %u, vector %u): %ld, expected -EINVAL\n",
		      ca.cqe, ca.comp_vector, PTR_ERR(cq));
	}
	ca.cqe = 100;
	ca.comp_vector = dev->num_comp_vectors - 1;
	cq = ib_create_cq(dev, comp_handler, NULL, NULL, &ca);
	CHECK(!IS_ERR(cq), "ib_create_cq(100): %ld\n", PTR_ERR(cq));
	n = cq->cqe;
	r = n != 127 ? -1 : ib_poll_cq(cq, 4, wc);
	if (!r)
		r = ib_req_notify_cq(cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS);
	if (!r)
		r = ib_req_notify_cq(cq, IB_CQ_SOLICITED | IB_CQ_REPORT_MISSED_EVENTS);
	ib_destroy_cq(cq);
	CHECK(r == 0, "new kernel CQ: cqe %d, poll/notify gave %d\n", n, r);
	for (i = 0; i < 200; i++) {
		ca.cqe = 1 + i * 50;
		ca.comp_vector = i % dev->num_comp_vectors;
		cq = ib_create_cq(dev, comp_handler, NULL, NULL, &ca);
		CHECK(!IS_ERR(cq), "ib_create_cq #%d: %ld\n", i, PTR_ERR(cq));
		ib_destroy_cq(cq);
	}
	/* The helper kernel ULPs use, with direct polling. */
	cq = ib_alloc_cq(dev, NULL, 64, 0, IB_POLL_DIRECT);
	CHECK(!IS_ERR(cq), "ib_alloc_cq: %ld\n", PTR_ERR(cq));
	r = ib_process_cq_direct(cq, 16);
	ib_free_cq(cq);
	CHECK(r == 0, "ib_process_cq_direct on an empty CQ: %d\n", r);
	pr_info("rrxe_kverbs_test: ok kernel CQs: bad sizes and vectors -EINVAL, cqe 2^k - 1, empty poll, notify, 200 create/destroy, ib_alloc_cq\n");
	return 0;
}

/* Takes a new UD QP through INIT and RTR to RTS, with Q_Key 0x1111 and `psn`. */
int kverbs_ud_rts(struct ib_qp *qp, u32 psn)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_INIT, .port_num = 1, .qkey = 0x1111 };
	int r = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY);

	a.qp_state = IB_QPS_RTR;
	r = r ?: ib_modify_qp(qp, &a, IB_QP_STATE);
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = psn;
	return r ?: ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN);
}

/* A UD QP of `pd` on `cq`, taken to RTS with Q_Key 0x1111 (from an SRQ if given). */
static struct ib_qp *ud_qp(struct ib_pd *pd, struct ib_cq *cq, struct ib_srq *srq)
{
	struct ib_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IB_QPT_UD,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 16, .max_recv_wr = srq ? 0 : 16, .max_send_sge = 2, .max_recv_sge = srq ? 0 : 2 },
	};
	struct ib_qp *qp = ib_create_qp(pd, &ia);
	int r;

	if (IS_ERR(qp))
		return qp;
	r = kverbs_ud_rts(qp, 5);
	if (r) {
		ib_destroy_qp(qp);
		return ERR_PTR(r);
	}
	return qp;
}

/* Polls `cq` for one completion, up to 2 s. */
static int poll_one(struct ib_cq *cq, struct ib_wc *wc)
{
	int i;

	for (i = 0; i < 200; i++) {
		if (ib_poll_cq(cq, 1, wc) == 1)
			return 0;
		msleep(10);
	}
	return -ETIMEDOUT;
}

/*
 * Kernel UD traffic between kernel QPs of one device, as a ULP posts it:
 * a non-sleepable AH, DMA-mapped kernel buffers with the PD's
 * local_dma_lkey, SEND with immediate, receives from the QP's own queue
 * and from a kernel SRQ; data compared byte for byte, completions
 * carrying their QP.
 */
static int check_ud_traffic(struct ib_device *dev, struct ib_pd *pd)
{
	struct rdma_ah_attr aa = {};
	struct ib_srq_init_attr si = { .attr = { .max_wr = 7, .max_sge = 1 }, .srq_type = IB_SRQT_BASIC };
	struct ib_qp *a = NULL, *b = NULL, *c = NULL;
	struct ib_srq *srq = NULL;
	struct ib_cq *cq;
	struct ib_ah *ah = NULL;
	u8 *sbuf, *rbuf;
	u64 sdma, rdma;
	union ib_gid gid;
	struct ib_wc wc;
	int ret = -EINVAL, i, round;

	sbuf = kmalloc(4096, GFP_KERNEL);
	rbuf = kzalloc(4096, GFP_KERNEL);
	cq = ib_alloc_cq(dev, NULL, 64, 0, IB_POLL_DIRECT);
	if (!sbuf || !rbuf || IS_ERR(cq)) {
		pr_err("rrxe_kverbs_test: FAIL kernel traffic: buffers or CQ\n");
		goto out_free;
	}
	for (i = 0; i < 4096; i++)
		sbuf[i] = (u8)(i * 7 + 3);
	sdma = ib_dma_map_single(dev, sbuf, 4096, DMA_TO_DEVICE);
	rdma = ib_dma_map_single(dev, rbuf, 4096, DMA_FROM_DEVICE);
	srq = ib_create_srq(pd, &si);
	if (IS_ERR(srq)) {
		pr_err("rrxe_kverbs_test: FAIL ib_create_srq: %ld\n", PTR_ERR(srq));
		srq = NULL;
		goto out;
	}
	a = ud_qp(pd, cq, NULL);
	b = a && !IS_ERR(a) ? ud_qp(pd, cq, NULL) : NULL;
	c = b && !IS_ERR(b) ? ud_qp(pd, cq, srq) : NULL;
	if (IS_ERR_OR_NULL(a) || IS_ERR_OR_NULL(b) || IS_ERR_OR_NULL(c)) {
		pr_err("rrxe_kverbs_test: FAIL kernel UD QPs: %ld %ld %ld\n", PTR_ERR(a), PTR_ERR(b), PTR_ERR(c));
		goto out;
	}
	if (a->qp_num == 1 || b->qp_num == a->qp_num) {
		pr_err("rrxe_kverbs_test: FAIL kernel QP numbers %u %u\n", a->qp_num, b->qp_num);
		goto out;
	}
	/* GID 0: the netdev's link-local IPv6 address. */
	ret = rdma_query_gid(dev, 1, 0, &gid);
	if (ret) {
		pr_err("rrxe_kverbs_test: FAIL rdma_query_gid: %d\n", ret);
		goto out;
	}
	aa.type = RDMA_AH_ATTR_TYPE_ROCE;
	aa.port_num = 1;
	aa.ah_flags = IB_AH_GRH;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = 0;
	aa.grh.hop_limit = 64;
	ah = rdma_create_ah(pd, &aa, 0);
	if (IS_ERR(ah)) {
		pr_err("rrxe_kverbs_test: FAIL non-sleepable rdma_create_ah: %ld\n", PTR_ERR(ah));
		ret = PTR_ERR(ah);
		ah = NULL;
		goto out;
	}
	ret = -EINVAL;
	for (round = 0; round < 2; round++) {
		struct ib_qp *dst = round ? c : b;
		struct ib_sge rs = { .addr = rdma, .length = 40 + 1000, .lkey = pd->local_dma_lkey };
		struct ib_recv_wr rw = { .wr_id = 100 + round, .sg_list = &rs, .num_sge = 1 };
		struct ib_sge ss[2] = {
			{ .addr = sdma + 10, .length = 600, .lkey = pd->local_dma_lkey },
			{ .addr = sdma + 2000, .length = 400, .lkey = pd->local_dma_lkey },
		};
		struct ib_ud_wr sw = {
			.wr = { .wr_id = 200 + round, .sg_list = ss, .num_sge = 2, .opcode = IB_WR_SEND_WITH_IMM,
				.send_flags = IB_SEND_SIGNALED, .ex.imm_data = cpu_to_be32(0xabc0 + round) },
			.ah = ah, .remote_qpn = dst->qp_num, .remote_qkey = 0x1111,
		};
		const struct ib_recv_wr *rbad;
		const struct ib_send_wr *sbad;
		bool got_send = false, got_recv = false;

		memset(rbuf, 0, 4096);
		ret = round ? ib_post_srq_recv(srq, &rw, &rbad) : ib_post_recv(b, &rw, &rbad);
		ret = ret ?: ib_post_send(a, &sw.wr, &sbad);
		if (ret) {
			pr_err("rrxe_kverbs_test: FAIL round %d: post: %d\n", round, ret);
			goto out;
		}
		ret = -EINVAL;
		for (i = 0; i < 2; i++) {
			if (poll_one(cq, &wc)) {
				pr_err("rrxe_kverbs_test: FAIL round %d: completion %d missing\n", round, i);
				goto out;
			}
			if (wc.status != IB_WC_SUCCESS) {
				pr_err("rrxe_kverbs_test: FAIL round %d: status %d\n", round, wc.status);
				goto out;
			}
			if (wc.wr_id == 200 + round && wc.qp == a && wc.opcode == IB_WC_SEND) {
				got_send = true;
			} else if (wc.wr_id == 100 + round && wc.qp == dst && wc.opcode == IB_WC_RECV &&
				   wc.byte_len == 1040 && wc.src_qp == a->qp_num &&
				   (wc.wc_flags & IB_WC_GRH) && (wc.wc_flags & IB_WC_WITH_IMM) &&
				   be32_to_cpu(wc.ex.imm_data) == 0xabc0 + round &&
				   (wc.wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE) &&
				   wc.network_hdr_type == RDMA_NETWORK_IPV6) {
				got_recv = true;
			} else {
				pr_err("rrxe_kverbs_test: FAIL round %d: unexpected wc id %llu qp %p op %d len %u flags %x\n",
				       round, wc.wr_id, wc.qp, wc.opcode, wc.byte_len, wc.wc_flags);
				goto out;
			}
		}
		if (!got_send || !got_recv || memcmp(rbuf + 40, sbuf + 10, 600) ||
		    memcmp(rbuf + 640, sbuf + 2000, 400) || rbuf[1040]) {
			pr_err("rrxe_kverbs_test: FAIL round %d: data or completions wrong\n", round);
			goto out;
		}
	}
	/* A full kernel SRQ refuses more: 7 fit (a ring of 8 slots). */
	for (i = 0; i < 8; i++) {
		struct ib_sge rs = { .addr = rdma, .length = 64, .lkey = pd->local_dma_lkey };
		struct ib_recv_wr rw = { .wr_id = i, .sg_list = &rs, .num_sge = 1 };
		const struct ib_recv_wr *rbad;

		ret = ib_post_srq_recv(srq, &rw, &rbad);
		if (ret)
			break;
	}
	if (i != 7 || ret != -ENOMEM) {
		pr_err("rrxe_kverbs_test: FAIL kernel SRQ took %d receives, then %d\n", i, ret);
		ret = -EINVAL;
		goto out;
	}
	ret = 0;
	pr_info("rrxe_kverbs_test: ok kernel UD traffic: non-sleepable AH, SEND with immediate over 2 SGEs into a QP and into a kernel SRQ, data and completions checked, a full SRQ gives -ENOMEM\n");
out:
	if (!IS_ERR_OR_NULL(c))
		ib_destroy_qp(c);
	if (!IS_ERR_OR_NULL(b))
		ib_destroy_qp(b);
	if (!IS_ERR_OR_NULL(a))
		ib_destroy_qp(a);
	if (ah)
		rdma_destroy_ah(ah, 0);
	if (srq)
		ib_destroy_srq(srq);
	ib_dma_unmap_single(dev, sdma, 4096, DMA_TO_DEVICE);
	ib_dma_unmap_single(dev, rdma, 4096, DMA_FROM_DEVICE);
out_free:
	if (!IS_ERR_OR_NULL(cq))
		ib_free_cq(cq);
	kfree(sbuf);
	kfree(rbuf);
	return ret;
}

/*
 * An RC QP of `pd` on `cq`, with `depth` send and receive WRs, in INIT with
 * remote read and write allowed.
 */
struct ib_qp *kverbs_rc_qp(struct ib_pd *pd, struct ib_cq *cq, u32 depth)
{
	struct ib_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IB_QPT_RC, .sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT, .port_num = 1,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ,
	};
	struct ib_qp *qp = ib_create_qp(pd, &ia);
	int r;

	if (IS_ERR(qp))
		return qp;
	r = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (r) {
		ib_destroy_qp(qp);
		return ERR_PTR(r);
	}
	return qp;
}

/*
 * Takes RC QP `qp` from INIT to RTS, connected to `peer` through GID 0 of
 * port 1, sending from PSN `sq_psn` and expecting `rq_psn`.
 */
int kverbs_rc_connect_psn(struct ib_qp *qp, struct ib_qp *peer, union ib_gid *gid, u32 sq_psn, u32 rq_psn)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_RTR, .path_mtu = IB_MTU_1024, .dest_qp_num = peer->qp_num,
		.rq_psn = rq_psn, .max_dest_rd_atomic = 4, .min_rnr_timer = 1,
	};
	int r;

	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	a.ah_attr.port_num = 1;
	a.ah_attr.ah_flags = IB_AH_GRH;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = 64;
	r = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			 IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (r)
		return r;
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
}

/* The same with PSN 100 both ways. */
int kverbs_rc_connect(struct ib_qp *qp, struct ib_qp *peer, union ib_gid *gid)
{
	return kverbs_rc_connect_psn(qp, peer, gid, 100, 100);
}

/* Posts one signaled WR on `qp` and expects one completion with `status`. */
static int rc_post_one(struct ib_qp *qp, struct ib_cq *cq, struct ib_send_wr *wr,
		       enum ib_wc_status status, enum ib_wc_opcode op, const char *what)
{
	const struct ib_send_wr *bad;
	struct ib_wc wc;
	int r;

	wr->send_flags |= IB_SEND_SIGNALED;
	r = ib_post_send(qp, wr, &bad);
	CHECK(!r, "%s: ib_post_send: %d\n", what, r);
	CHECK(!poll_one(cq, &wc), "%s: no completion\n", what);
	CHECK(wc.status == status && wc.wr_id == wr->wr_id && wc.qp == qp &&
	      (status != IB_WC_SUCCESS || wc.opcode == op),
	      "%s: status %d (want %d) opcode %d (want %d) wr_id %llu\n", what, wc.status, status,
	      wc.opcode, op, wc.wr_id);
	return 0;
}

/*
 * Kernel RC traffic as a storage ULP does it: two kernel RC QPs of one
 * device; a SEND into a posted receive; a fast-registration MR over a
 * 3-page scatterlist, registered by an IB_WR_REG_MR with a new key, then
 * RDMA WRITE into it and RDMA READ back through that key from the other
 * QP; LOCAL_INV, a remap from an offset into the first page and a new
 * REG_MR at an iova the consumer changed after mapping (xprtrdma's XID in
 * the upper 32 bits), WRITE and READ at that iova; LOCAL_INV of the key,
 * after which a WRITE fails with IB_WC_REM_ACCESS_ERR and leaves the
 * memory unchanged.
 */
static int check_rc_traffic(struct ib_device *dev, struct ib_pd *pd)
{
	struct ib_qp *a = NULL, *b = NULL;
	struct scatterlist sg[3];
	struct ib_mr *mr = NULL;
	struct ib_cq *cq;
	union ib_gid gid;
	u8 *src = NULL, *dst = NULL, *back = NULL, *pages[3] = {};
	u64 sdma = 0, ddma = 0, bdma = 0;
	int ret = -EINVAL, i, n = 0, mapped = 0;

	cq = ib_alloc_cq(dev, NULL, 64, 0, IB_POLL_DIRECT);
	src = kmalloc(3 * PAGE_SIZE, GFP_KERNEL);
	dst = kzalloc(8192, GFP_KERNEL);
	back = kzalloc(3 * PAGE_SIZE, GFP_KERNEL);
	for (i = 0; i < 3; i++)
		pages[i] = (u8 *)__get_free_page(GFP_KERNEL | __GFP_ZERO);
	if (IS_ERR(cq) || !src || !dst || !back || !pages[0] || !pages[1] || !pages[2]) {
		pr_err("rrxe_kverbs_test: FAIL kernel RC: buffers or CQ\n");
		goto out_free;
	}
	for (i = 0; i < 3 * PAGE_SIZE; i++)
		src[i] = (u8)(i * 13 + 1);
	sdma = ib_dma_map_single(dev, src, 3 * PAGE_SIZE, DMA_TO_DEVICE);
	ddma = ib_dma_map_single(dev, dst, 8192, DMA_FROM_DEVICE);
	bdma = ib_dma_map_single(dev, back, 3 * PAGE_SIZE, DMA_FROM_DEVICE);
	ret = rdma_query_gid(dev, 1, 0, &gid);
	if (ret) {
		pr_err("rrxe_kverbs_test: FAIL kernel RC: rdma_query_gid: %d\n", ret);
		goto out;
	}
	ret = -EINVAL;
	a = kverbs_rc_qp(pd, cq, 16);
	b = IS_ERR(a) ? NULL : kverbs_rc_qp(pd, cq, 16);
	if (IS_ERR_OR_NULL(a) || IS_ERR_OR_NULL(b)) {
		pr_err("rrxe_kverbs_test: FAIL kernel RC QPs: %ld %ld\n", PTR_ERR(a), PTR_ERR(b));
		goto out;
	}
	ret = kverbs_rc_connect(a, b, &gid) ?: kverbs_rc_connect(b, a, &gid);
	if (ret) {
		pr_err("rrxe_kverbs_test: FAIL kernel RC connect: %d\n", ret);
		goto out;
	}
	ret = -EINVAL;

	/* SEND of 5000 bytes over 2 SGEs into one receive buffer. */
	{
		struct ib_sge rs = { .addr = ddma, .length = 8192, .lkey = pd->local_dma_lkey };
		struct ib_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 };
		struct ib_sge ss[2] = {
			{ .addr = sdma, .length = 3000, .lkey = pd->local_dma_lkey },
			{ .addr = sdma + 5000, .length = 2000, .lkey = pd->local_dma_lkey },
		};
		struct ib_send_wr sw = { .wr_id = 2, .sg_list = ss, .num_sge = 2, .opcode = IB_WR_SEND };
		const struct ib_recv_wr *rbad;
		const struct ib_send_wr *sbad;
		bool got_send = false, got_recv = false;
		struct ib_wc wc;

		sw.send_flags = IB_SEND_SIGNALED;
		if (ib_post_recv(b, &rw, &rbad) || ib_post_send(a, &sw, &sbad)) {
			pr_err("rrxe_kverbs_test: FAIL kernel RC SEND: post failed\n");
			goto out;
		}
		/* Both completions share the CQ, in either order. */
		for (i = 0; i < 2; i++) {
			if (poll_one(cq, &wc) || wc.status != IB_WC_SUCCESS) {
				pr_err("rrxe_kverbs_test: FAIL kernel RC SEND: completion %d missing or failed\n", i);
				goto out;
			}
			if (wc.qp == a && wc.wr_id == 2 && wc.opcode == IB_WC_SEND)
				got_send = true;
			else if (wc.qp == b && wc.wr_id == 1 && wc.opcode == IB_WC_RECV && wc.byte_len == 5000)
				got_recv = true;
		}
		if (!got_send || !got_recv || memcmp(dst, src, 3000) || memcmp(dst + 3000, src + 5000, 2000)) {
			pr_err("rrxe_kverbs_test: FAIL kernel RC SEND: completions or data wrong\n");
			goto out;
		}
	}

	/* A fast-registration MR over three separate pages, registered by a WR. */
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 4);
	if (IS_ERR(mr)) {
		pr_err("rrxe_kverbs_test: FAIL kernel RC: ib_alloc_mr: %ld\n", PTR_ERR(mr));
		mr = NULL;
		goto out;
	}
	sg_init_table(sg, 3);
	for (i = 0; i < 3; i++)
		sg_set_buf(&sg[i], pages[i], PAGE_SIZE);
	mapped = ib_dma_map_sg(dev, sg, 3, DMA_BIDIRECTIONAL);
	n = mapped ? ib_map_mr_sg(mr, sg, mapped, NULL, PAGE_SIZE) : 0;
	if (n != 3) {
		pr_err("rrxe_kverbs_test: FAIL kernel RC: ib_map_mr_sg mapped %d of 3\n", n);
		goto out;
	}
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	{
		struct ib_reg_wr rw = {
			.wr = { .wr_id = 3, .opcode = IB_WR_REG_MR }, .mr = mr, .key = mr->rkey,
			.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ,
		};
		struct ib_sge ws = { .addr = sdma + 100, .length = 3 * PAGE_SIZE - 300, .lkey = pd->local_dma_lkey };
		struct ib_rdma_wr ww = {
			.wr = { .wr_id = 4, .sg_list = &ws, .num_sge = 1, .opcode = IB_WR_RDMA_WRITE },
			.remote_addr = mr->iova + 200, .rkey = mr->rkey,
		};
		struct ib_sge bs = { .addr = bdma, .length = 3 * PAGE_SIZE - 300, .lkey = pd->local_dma_lkey };
		struct ib_rdma_wr rr = {
			.wr = { .wr_id = 5, .sg_list = &bs, .num_sge = 1, .opcode = IB_WR_RDMA_READ },
			.remote_addr = mr->iova + 200, .rkey = mr->rkey,
		};
		struct ib_send_wr inv = { .wr_id = 6, .opcode = IB_WR_LOCAL_INV, .ex.invalidate_rkey = mr->rkey };
		struct ib_rdma_wr w2 = ww;
		u8 *whole = kmalloc(3 * PAGE_SIZE, GFP_KERNEL);

		if (!whole)
			goto out;
		if (rc_post_one(b, cq, &rw.wr, IB_WC_SUCCESS, IB_WC_REG_MR, "REG_MR") ||
		    rc_post_one(a, cq, &ww.wr, IB_WC_SUCCESS, IB_WC_RDMA_WRITE, "WRITE through the fast-registered key") ||
		    rc_post_one(a, cq, &rr.wr, IB_WC_SUCCESS, IB_WC_RDMA_READ, "READ through the fast-registered key")) {
			kfree(whole);
			goto out;
		}
		for (i = 0; i < 3; i++)
			memcpy(whole + i * PAGE_SIZE, pages[i], PAGE_SIZE);
		if (memcmp(whole + 200, src + 100, 3 * PAGE_SIZE - 300) || whole[199] ||
		    whole[3 * PAGE_SIZE - 100] || memcmp(back, src + 100, 3 * PAGE_SIZE - 300)) {
			pr_err("rrxe_kverbs_test: FAIL kernel RC: data through the fast-registered MR wrong\n");
			kfree(whole);
			goto out;
		}
		/*
		 * Invalidated, mapped again from 512 bytes into the first page,
		 * and registered at an iova whose upper 32 bits were changed
		 * after the mapping, as xprtrdma does (it puts the RPC's XID
		 * there): the peer's WRITE and READ address that iova.
		 */
		{
			unsigned int sgoff = 512;

			if (rc_post_one(b, cq, &inv, IB_WC_SUCCESS, IB_WC_LOCAL_INV, "LOCAL_INV before a remap")) {
				kfree(whole);
				goto out;
			}
			n = ib_map_mr_sg(mr, sg, mapped, &sgoff, PAGE_SIZE);
			if (n != 3 || mr->length != 3 * PAGE_SIZE - 512) {
				pr_err("rrxe_kverbs_test: FAIL kernel RC: remap at an offset mapped %d of 3, length %llu\n",
				       n, mr->length);
				kfree(whole);
				goto out;
			}
			mr->iova = (mr->iova & 0xffffffffULL) | (0x5eed1234ULL << 32);
			ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
			rw.key = mr->rkey;
			rw.wr.wr_id = 8;
			ws.addr = sdma;
			ws.length = 2 * PAGE_SIZE;
			ww.remote_addr = mr->iova + 100;
			ww.rkey = mr->rkey;
			ww.wr.wr_id = 9;
			bs.length = 2 * PAGE_SIZE;
			rr.remote_addr = mr->iova + 100;
			rr.rkey = mr->rkey;
			rr.wr.wr_id = 10;
			memset(back, 0, 3 * PAGE_SIZE);
			if (rc_post_one(b, cq, &rw.wr, IB_WC_SUCCESS, IB_WC_REG_MR, "REG_MR at an iova changed after mapping") ||
			    rc_post_one(a, cq, &ww.wr, IB_WC_SUCCESS, IB_WC_RDMA_WRITE,
					"WRITE at an iova changed after mapping") ||
			    rc_post_one(a, cq, &rr.wr, IB_WC_SUCCESS, IB_WC_RDMA_READ,
					"READ at an iova changed after mapping")) {
				kfree(whole);
				goto out;
			}
			for (i = 0; i < 3; i++)
				memcpy(whole + i * PAGE_SIZE, pages[i], PAGE_SIZE);
			if (memcmp(whole + 612, src, 2 * PAGE_SIZE) || memcmp(back, src, 2 * PAGE_SIZE)) {
				pr_err("rrxe_kverbs_test: FAIL kernel RC: data at an iova changed after mapping wrong\n");
				kfree(whole);
				goto out;
			}
			inv.ex.invalidate_rkey = mr->rkey;
			w2 = ww;
		}
		w2.wr.wr_id = 7;
		ws.addr = sdma;
		if (rc_post_one(b, cq, &inv, IB_WC_SUCCESS, IB_WC_LOCAL_INV, "LOCAL_INV") ||
		    rc_post_one(a, cq, &w2.wr, IB_WC_REM_ACCESS_ERR, IB_WC_RDMA_WRITE, "WRITE after LOCAL_INV")) {
			kfree(whole);
			goto out;
		}
		for (i = 0; i < 3; i++)
			if (memcmp(whole + i * PAGE_SIZE, pages[i], PAGE_SIZE)) {
				pr_err("rrxe_kverbs_test: FAIL kernel RC: a WRITE after LOCAL_INV changed memory\n");
				kfree(whole);
				goto out;
			}
		kfree(whole);
	}
	ret = 0;
	pr_info("rrxe_kverbs_test: ok kernel RC traffic: SEND over 2 SGEs, REG_MR of a 3-page fast-registration MR with a new key, WRITE and READ through it, again after a remap at an offset and at an iova changed after mapping (as xprtrdma does), LOCAL_INV then REM_ACCESS_ERR with memory unchanged\n");
out:
	if (!IS_ERR_OR_NULL(b))
		ib_destroy_qp(b);
	if (!IS_ERR_OR_NULL(a))
		ib_destroy_qp(a);
	if (mr)
		ib_dereg_mr(mr);
	if (mapped)
		ib_dma_unmap_sg(dev, sg, 3, DMA_BIDIRECTIONAL);
	ib_dma_unmap_single(dev, sdma, 3 * PAGE_SIZE, DMA_TO_DEVICE);
	ib_dma_unmap_single(dev, ddma, 8192, DMA_FROM_DEVICE);
	ib_dma_unmap_single(dev, bdma, 3 * PAGE_SIZE, DMA_FROM_DEVICE);
out_free:
	if (!IS_ERR_OR_NULL(cq))
		ib_free_cq(cq);
	for (i = 0; i < 3; i++)
		free_page((unsigned long)pages[i]);
	kfree(src);
	kfree(dst);
	kfree(back);
	return ret;
}

static int __init rrxe_kverbs_test_init(void)
{
	struct net_device *nd;
	struct ib_device *dev;
	struct ib_pd *pd;
	int ret;

	nd = dev_get_by_name(&init_net, netdev);
	if (!nd) {
		pr_err("rrxe_kverbs_test: no netdev '%s'\n", netdev);
		return -ENODEV;
	}
	dev = ib_device_get_by_netdev(nd, RDMA_DRIVER_RXE);
	dev_put(nd);
	if (!dev) {
		pr_err("rrxe_kverbs_test: no RXE-driver device on %s\n", netdev);
		return -ENODEV;
	}
	ret = destroy_race ? 0 : check_pds(dev) ?: check_cqs(dev);
	if (!ret && destroy_race) {
		pd = ib_alloc_pd(dev, 0);
		ret = IS_ERR(pd) ? PTR_ERR(pd) : kverbs_check_destroy_race(dev, pd, destroy_race);
		if (!IS_ERR(pd))
			ib_dealloc_pd(pd);
	} else if (!ret) {
		pd = ib_alloc_pd(dev, 0);
		if (IS_ERR(pd)) {
			ret = PTR_ERR(pd);
		} else {
			ret = check_alloc_mr(pd) ?: check_map_mr_sg(dev, pd) ?: check_ud_traffic(dev, pd) ?:
			      check_rc_traffic(dev, pd) ?: kverbs_check_reset(dev, pd) ?:
			      kverbs_check_contexts(dev, pd);
			ib_dealloc_pd(pd);
		}
	}
	ib_device_put(dev);
	if (!ret)
		pr_info("rrxe_kverbs_test: all passed on %s\n", netdev);
	return ret ? -EINVAL : 0;
}

static void __exit rrxe_kverbs_test_exit(void)
{
}

module_init(rrxe_kverbs_test_init);
module_exit(rrxe_kverbs_test_exit);
MODULE_DESCRIPTION("rrxe selftest: kernel verbs (PD DMA MRs, ib_alloc_mr, ib_map_mr_sg)");
MODULE_LICENSE("GPL");
