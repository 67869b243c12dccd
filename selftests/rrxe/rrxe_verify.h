/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A verified transfer on one device, for the selftest programs that must
 * show that a device still works after they abused it: RC WRITE, READ,
 * SEND with immediate and FETCH_AND_ADD, UC SEND over several packets and
 * WRITE with immediate, a UD SEND; between QPs of one context, through the
 * device's IPv4-mapped GID. Every byte and every completion is checked,
 * and every wait is bounded.
 */
#ifndef RRXE_VERIFY_H
#define RRXE_VERIFY_H

#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rrxe_test.h"

#define RV_REGION (64 * 1024)
/* src: the sender's bytes; dst: where they land; back: READ results. */
#define RV_SRC 0
#define RV_DST RV_REGION
#define RV_BACK (2 * RV_REGION)
#define RV_BUF (3 * RV_REGION + 4096)

struct rrxe_verify {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
	int gid_index;
	/* Completions that came before the one waited for. */
	struct ibv_wc early[8];
	int n_early;
};

static inline double rv_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Waits (at most 10 s) for the completion of `wr_id` (others that come
 * first are kept for later waits); an error status fails. */
static inline int rv_wait(struct rrxe_verify *v, uint64_t wr_id, struct ibv_wc *out)
{
	double end = rv_now() + 10;
	struct ibv_wc wc;

	for (;;) {
		int n = 0;

		for (int i = 0; i < v->n_early; i++)
			if (v->early[i].wr_id == wr_id) {
				wc = v->early[i];
				v->early[i] = v->early[--v->n_early];
				n = 1;
				break;
			}
		if (!n)
			n = ibv_poll_cq(v->cq, 1, &wc);
		if (n < 0)
			FAIL("verify: poll_cq failed");
		if (n == 0) {
			if (rv_now() > end)
				FAIL("verify: no completion for wr_id %llu within 10 s", (unsigned long long)wr_id);
			usleep(100);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS)
			FAIL("verify: wr_id %llu completed with status %d (%s)", (unsigned long long)wc.wr_id,
			     wc.status, ibv_wc_status_str(wc.status));
		if (wc.wr_id != wr_id) {
			if (v->n_early == 8)
				FAIL("verify: unexpected completions (wr_id %llu)", (unsigned long long)wc.wr_id);
			v->early[v->n_early++] = wc;
			continue;
		}
		if (out)
			*out = wc;
		return 0;
	}
}

static inline struct ibv_qp *rv_qp(struct rrxe_verify *v, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = v->cq, .recv_cq = v->cq, .qp_type = t,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2 },
	};

	return ibv_create_qp(v->pd, &ia);
}

/* Takes `qp` to RTS: connected to `peer` (RC, UC; path MTU 1024), or with
 * Q_Key 0x1234 (UD). */
static inline int rv_connect(struct rrxe_verify *v, struct ibv_qp *qp, uint32_t peer)
{
	int ud = qp->qp_type == IBV_QPT_UD, rc = qp->qp_type == IBV_QPT_RC;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x1234,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   (rc ? IBV_ACCESS_REMOTE_ATOMIC : 0),
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)))
		FAIL("verify: INIT: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer;
	a.rq_psn = 0x10;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = v->gid;
	a.ah_attr.grh.sgid_index = v->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | (ud ? 0 : IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
						 IBV_QP_RQ_PSN) |
			  (rc ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0)))
		FAIL("verify: RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x10;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			  (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0)))
		FAIL("verify: RTS: %s", strerror(errno));
	return 0;
}

static inline void rv_fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 131 + seed + (i >> 8) * 7) ^ (seed >> 8));
}

static inline int rv_same(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i])
			FAIL("verify: %s: byte %zu is %#x, expected %#x", what, i, got[i], want[i]);
	return 0;
}

static inline int rv_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static inline int rv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, void *addr, uint32_t len,
			       uint32_t lkey)
{
	struct ibv_sge s = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr *bad;

	wr->sg_list = &s;
	wr->num_sge = 1;
	wr->send_flags |= IBV_SEND_SIGNALED;
	return ibv_post_send(qp, wr, &bad);
}

static inline int rv_rc(struct rrxe_verify *v, uint32_t seed)
{
	uint8_t *src = v->buf + RV_SRC, *dst = v->buf + RV_DST, *back = v->buf + RV_BACK;
	struct ibv_qp *a = rv_qp(v, IBV_QPT_RC), *b = rv_qp(v, IBV_QPT_RC);
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint64_t *word = (uint64_t *)(dst + RV_REGION - 64), *old = (uint64_t *)(back + RV_REGION - 64);
	int rc = 1;

	if (!a || !b) {
		fprintf(stderr, "verify: RC QPs: %s\n", strerror(errno));
		goto out;
	}
	if (rv_connect(v, a, b->qp_num) || rv_connect(v, b, a->qp_num))
		goto out;
	rv_fill(src, RV_REGION, seed);
	memset(dst, 0, RV_REGION);
	memset(back, 0, RV_REGION);
	/* WRITE 60 KiB, then READ it back elsewhere. */
	wr = (struct ibv_send_wr){ .wr_id = 1, .opcode = IBV_WR_RDMA_WRITE };
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = v->mr->rkey;
	if (rv_post_send(a, &wr, src, RV_REGION - 4096, v->mr->lkey) || rv_wait(v, 1, NULL) ||
	    rv_same(dst, src, RV_REGION - 4096, "RC WRITE"))
		goto out;
	wr = (struct ibv_send_wr){ .wr_id = 2, .opcode = IBV_WR_RDMA_READ };
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = v->mr->rkey;
	if (rv_post_send(a, &wr, back, RV_REGION - 4096, v->mr->lkey) || rv_wait(v, 2, NULL) ||
	    rv_same(back, src, RV_REGION - 4096, "RC READ"))
		goto out;
	/* SEND with immediate into a receive at the end of dst. */
	rv_fill(src, 2048, seed + 1);
	if (rv_post_recv(b, 3, dst + RV_REGION - 4096, 2048, v->mr->lkey))
		goto out;
	wr = (struct ibv_send_wr){ .wr_id = 4, .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(seed) };
	if (rv_post_send(a, &wr, src, 2048, v->mr->lkey) || rv_wait(v, 4, NULL) || rv_wait(v, 3, &wc) ||
	    rv_same(dst + RV_REGION - 4096, src, 2048, "RC SEND"))
		goto out;
	if (wc.byte_len != 2048 || !(wc.wc_flags & IBV_WC_WITH_IMM) || wc.imm_data != htobe32(seed))
		FAIL("verify: RC SEND: length %u, flags %#x, imm %#x", wc.byte_len, wc.wc_flags, wc.imm_data);
	/* FETCH_AND_ADD on an aligned word. */
	*word = 1000 + seed;
	wr = (struct ibv_send_wr){ .wr_id = 5, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	wr.wr.atomic.remote_addr = (uintptr_t)word;
	wr.wr.atomic.rkey = v->mr->rkey;
	wr.wr.atomic.compare_add = 7;
	if (rv_post_send(a, &wr, old, 8, v->mr->lkey) || rv_wait(v, 5, NULL))
		goto out;
	if (*old != 1000 + (uint64_t)seed || *word != 1007 + (uint64_t)seed)
		FAIL("verify: FETCH_AND_ADD: old %llu new %llu", (unsigned long long)*old,
		     (unsigned long long)*word);
	rc = 0;
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	return rc;
}

static inline int rv_uc(struct rrxe_verify *v, uint32_t seed)
{
	uint8_t *src = v->buf + RV_SRC, *dst = v->buf + RV_DST;
	struct ibv_qp *a = rv_qp(v, IBV_QPT_UC), *b = rv_qp(v, IBV_QPT_UC);
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	int rc = 1;

	if (!a || !b) {
		fprintf(stderr, "verify: UC QPs: %s\n", strerror(errno));
		goto out;
	}
	if (rv_connect(v, a, b->qp_num) || rv_connect(v, b, a->qp_num))
		goto out;
	rv_fill(src, RV_REGION, seed + 2);
	memset(dst, 0, RV_REGION);
	/* A SEND of 8 packets, then a WRITE with immediate of 4. */
	if (rv_post_recv(b, 11, dst, 8192, v->mr->lkey) || rv_post_recv(b, 12, dst + 8192, 16, v->mr->lkey))
		goto out;
	wr = (struct ibv_send_wr){ .wr_id = 13, .opcode = IBV_WR_SEND };
	if (rv_post_send(a, &wr, src, 8192, v->mr->lkey) || rv_wait(v, 13, NULL) || rv_wait(v, 11, &wc) ||
	    rv_same(dst, src, 8192, "UC SEND"))
		goto out;
	if (wc.byte_len != 8192)
		FAIL("verify: UC SEND: length %u", wc.byte_len);
	wr = (struct ibv_send_wr){ .wr_id = 14, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .imm_data = htobe32(seed) };
	wr.wr.rdma.remote_addr = (uintptr_t)dst + 16384;
	wr.wr.rdma.rkey = v->mr->rkey;
	if (rv_post_send(a, &wr, src + 8192, 4096, v->mr->lkey) || rv_wait(v, 14, NULL) || rv_wait(v, 12, &wc) ||
	    rv_same(dst + 16384, src + 8192, 4096, "UC WRITE"))
		goto out;
	if (!(wc.wc_flags & IBV_WC_WITH_IMM) || wc.imm_data != htobe32(seed))
		FAIL("verify: UC WRITE with immediate: flags %#x, imm %#x", wc.wc_flags, wc.imm_data);
	rc = 0;
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	return rc;
}

static inline int rv_ud(struct rrxe_verify *v, uint32_t seed)
{
	uint8_t *src = v->buf + RV_SRC, *dst = v->buf + RV_DST;
	struct ibv_qp *a = rv_qp(v, IBV_QPT_UD), *b = rv_qp(v, IBV_QPT_UD);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah = NULL;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	int rc = 1;

	if (!a || !b) {
		fprintf(stderr, "verify: UD QPs: %s\n", strerror(errno));
		goto out;
	}
	if (rv_connect(v, a, 0) || rv_connect(v, b, 0))
		goto out;
	aa.grh.dgid = v->gid;
	aa.grh.sgid_index = v->gid_index;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(v->pd, &aa);
	if (!ah) {
		fprintf(stderr, "verify: AH: %s\n", strerror(errno));
		goto out;
	}
	rv_fill(src, 512, seed + 3);
	memset(dst, 0, 1024);
	if (rv_post_recv(b, 21, dst, 40 + 512, v->mr->lkey))
		goto out;
	wr = (struct ibv_send_wr){ .wr_id = 22, .opcode = IBV_WR_SEND };
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = b->qp_num;
	wr.wr.ud.remote_qkey = 0x1234;
	if (rv_post_send(a, &wr, src, 512, v->mr->lkey) || rv_wait(v, 22, NULL) || rv_wait(v, 21, &wc) ||
	    rv_same(dst + 40, src, 512, "UD SEND"))
		goto out;
	if (wc.byte_len != 40 + 512 || wc.src_qp != a->qp_num)
		FAIL("verify: UD SEND: length %u, source QP %u", wc.byte_len, wc.src_qp);
	rc = 0;
out:
	if (ah)
		ibv_destroy_ah(ah);
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	return rc;
}

/* Verified RC, UC and UD transfers on device `name`; 0 on success. */
static inline int rrxe_verify_dev(const char *name)
{
	struct rrxe_verify v = {0};
	uint32_t seed = (uint32_t)(rv_now() * 1e6) ^ (uint32_t)getpid();
	int rc = 1;

	v.ctx = rrxe_open(name);
	if (!v.ctx)
		FAIL("verify: cannot open %s", name);
	v.gid_index = rrxe_ipv4_gid(v.ctx, &v.gid);
	v.pd = ibv_alloc_pd(v.ctx);
	v.cq = ibv_create_cq(v.ctx, 64, NULL, NULL, 0);
	v.buf = aligned_alloc(4096, RV_BUF);
	if (v.gid_index < 0 || !v.pd || !v.cq || !v.buf) {
		fprintf(stderr, "verify: setup on %s (GID index %d): %s\n", name, v.gid_index, strerror(errno));
		goto out;
	}
	v.mr = ibv_reg_mr(v.pd, v.buf, RV_BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!v.mr) {
		fprintf(stderr, "verify: reg_mr: %s\n", strerror(errno));
		goto out;
	}
	rc = rv_rc(&v, seed) || rv_uc(&v, seed) || rv_ud(&v, seed);
out:
	if (v.mr)
		ibv_dereg_mr(v.mr);
	if (v.cq)
		ibv_destroy_cq(v.cq);
	if (v.pd)
		ibv_dealloc_pd(v.pd);
	ibv_close_device(v.ctx);
	free(v.buf);
	return rc;
}

#endif
