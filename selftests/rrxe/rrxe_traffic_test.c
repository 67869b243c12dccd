// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_traffic_test DEV MODE: UC and UD traffic between QPs of one device,
 * through stock libibverbs + librxe, with the data compared byte for byte
 * and every completion checked. Each mode prints what went wrong and exits
 * non-zero on failure.
 *
 *   uc_write    RDMA WRITE with immediate over many MTUs; a plain WRITE
 *               (no receive completion); zero-length WRITE with a bad key
 *   uc_reject   WRITEs with a foreign PD's rkey, a wrong key, one byte past
 *               the MR, near u64 wrap, to an MR without remote write, to
 *               a QP without remote write: all dropped, target unchanged,
 *               no receive completion; the next good message arrives
 *   uc_send     SEND with immediate into a multi-SGE receive WQE; a SEND
 *               too long for its WQE is dropped and the WQE kept for the
 *               next message
 *   srq         UC and UD receives from an SRQ; its limit event fires once
 *               fewer WQEs than the limit remain
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rrxe_test.h"

#define BUF (1 << 20)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;
static uint8_t *src, *dst;
static struct ibv_mr *smr, *dmr;
static union ibv_gid gid;
static int gid_index = -1;

static int find_gid(void)
{
	for (int i = 0; i < 16; i++) {
		if (ibv_query_gid(ctx, 1, i, &gid))
			break;
		/* An IPv4-mapped GID. */
		if (!memcmp(gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
			gid_index = i;
			return 0;
		}
	}
	return -1;
}

static struct ibv_qp *mkqp(enum ibv_qp_type t, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq, .recv_cq = rcq, .srq = srq, .qp_type = t,
		.cap = { .max_send_wr = 64, .max_recv_wr = srq ? 0 : 64, .max_send_sge = 4,
			 .max_recv_sge = srq ? 0 : 4, .max_inline_data = 64 },
	};

	return ibv_create_qp(pd, &ia);
}

static int init_qp(struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = access, .qkey = 0x1234 };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(qp, &a, mask);
}

/* Connects UC QP `a` to QP number `peer` and takes it to RTS. */
static int connect_uc(struct ibv_qp *a, uint32_t peer, int access)
{
	struct ibv_qp_attr at = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = peer, .rq_psn = 7,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 } },
	};

	if (init_qp(a, access))
		return -1;
	if (ibv_modify_qp(a, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
		return -1;
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 7;
	return ibv_modify_qp(a, &at, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static int to_rts_ud(struct ibv_qp *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };

	if (init_qp(q, 0) || ibv_modify_qp(q, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* Waits for one completion on `cq` (2 s at most). */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	for (int i = 0; i < 2000; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
		usleep(1000);
	}
	return 0;
}

/* No completion appears on `cq` for 200 ms. */
static int quiet(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	usleep(200000);
	return ibv_poll_cq(cq, 1, &wc) == 0;
}

static int post_write(struct ibv_qp *qp, uint64_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
		      int imm, uint32_t immv, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)src + off, len, smr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
		.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
		.imm_data = htobe32(immv), .wr = { .rdma = { raddr, rkey } },
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static int post_recv(struct ibv_qp *qp, struct ibv_srq *srq, uint64_t id, uint64_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)dst + off, len, dmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(qp, &wr, &bad);
}

/* The send completion of `id`: success, opcode `op`. */
static int send_ok(uint64_t id, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;

	if (!wait_wc(scq, &wc))
		FAIL("no send completion for %lu", (unsigned long)id);
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != id || wc.opcode != op)
		FAIL("send completion: status %s wr_id %lu opcode %d", ibv_wc_status_str(wc.status),
		     (unsigned long)wc.wr_id, wc.opcode);
	return 0;
}

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 8));
}

static int setup_uc(struct ibv_qp **a, struct ibv_qp **b, int b_access)
{
	*a = mkqp(IBV_QPT_UC, NULL);
	*b = mkqp(IBV_QPT_UC, NULL);
	if (!*a || !*b)
		FAIL("create UC QPs: %s", strerror(errno));
	if (connect_uc(*a, (*b)->qp_num, IBV_ACCESS_REMOTE_WRITE) || connect_uc(*b, (*a)->qp_num, b_access))
		FAIL("connect UC QPs: %s", strerror(errno));
	return 0;
}

static int mode_uc_write(void)
{
	struct ibv_qp *a, *b;
	struct ibv_wc wc;
	uint32_t n = 10000 + 123;

	if (setup_uc(&a, &b, IBV_ACCESS_REMOTE_WRITE))
		return 1;
	pattern(src, BUF, 1);
	memset(dst, 0, BUF);
	if (post_recv(b, NULL, 77, 0, 16) || post_write(a, 5, n, (uintptr_t)dst + 3, dmr->rkey, 1, 0xabcd0123, 1))
		FAIL("post: %s", strerror(errno));
	if (send_ok(1, IBV_WC_RDMA_WRITE))
		return 1;
	if (!wait_wc(rcq, &wc))
		FAIL("no receive completion for the WRITE with immediate");
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 77 || wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
	    !(wc.wc_flags & IBV_WC_WITH_IMM) || be32toh(wc.imm_data) != 0xabcd0123 || wc.byte_len != n)
		FAIL("receive completion: status %s wr_id %lu opcode %d flags %x imm %x len %u",
		     ibv_wc_status_str(wc.status), (unsigned long)wc.wr_id, wc.opcode, wc.wc_flags,
		     be32toh(wc.imm_data), wc.byte_len);
	if (memcmp(dst + 3, src + 5, n) || dst[2] || dst[3 + n])
		FAIL("written bytes differ from the source (or spill over)");
	/* A plain WRITE: data, no receive completion. */
	if (post_write(a, 100000, 70000, (uintptr_t)dst + 200000, dmr->rkey, 0, 0, 2) || send_ok(2, IBV_WC_RDMA_WRITE))
		return 1;
	usleep(100000);
	if (memcmp(dst + 200000, src + 100000, 70000))
		FAIL("plain WRITE: bytes differ");
	if (!quiet(rcq))
		FAIL("a plain WRITE completed a receive");
	/* Zero-length WRITE with immediate and a key that names nothing. */
	if (post_recv(b, NULL, 78, 0, 16) || post_write(a, 0, 0, 0, 0xdead00, 1, 5, 3) || send_ok(3, IBV_WC_RDMA_WRITE))
		return 1;
	if (!wait_wc(rcq, &wc) || wc.status != IBV_WC_SUCCESS || wc.wr_id != 78 || wc.byte_len != 0)
		FAIL("zero-length WRITE with immediate did not complete its receive");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	printf("uc_write ok\n");
	return 0;
}

static int mode_uc_reject(void)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *foreign, *ro;
	struct ibv_qp *a, *b, *c, *d;
	struct ibv_wc wc;
	struct {
		const char *what;
		uint64_t addr;
		uint32_t rkey, len;
	} bad[6];
	int i;

	if (!pd2)
		FAIL("second PD: %s", strerror(errno));
	foreign = ibv_reg_mr(pd2, dst, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ro = ibv_reg_mr(pd, dst + 8192, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!foreign || !ro)
		FAIL("MRs: %s", strerror(errno));
	if (setup_uc(&a, &b, IBV_ACCESS_REMOTE_WRITE))
		return 1;
	bad[0] = (typeof(bad[0])){ "an rkey from another PD", (uintptr_t)dst, foreign->rkey, 100 };
	bad[1] = (typeof(bad[0])){ "a wrong key", (uintptr_t)dst, dmr->rkey ^ 0x80, 100 };
	bad[2] = (typeof(bad[0])){ "one byte past the MR", (uintptr_t)dst + BUF - 99, dmr->rkey, 100 };
	bad[3] = (typeof(bad[0])){ "an address near u64 wrap", UINT64_MAX - 50, dmr->rkey, 100 };
	bad[4] = (typeof(bad[0])){ "an MR without remote write", (uintptr_t)dst + 8192, ro->rkey, 100 };
	bad[5] = (typeof(bad[0])){ "2000 bytes over 2 MTUs past the MR", (uintptr_t)dst + BUF - 1500, dmr->rkey, 2000 };
	pattern(src, BUF, 2);
	memset(dst, 0x5a, BUF);
	for (i = 0; i < 6; i++) {
		if (post_recv(b, NULL, 100 + i, 0, 16) ||
		    post_write(a, 0, bad[i].len, bad[i].addr, bad[i].rkey, 1, i, 10 + i) ||
		    send_ok(10 + i, IBV_WC_RDMA_WRITE))
			FAIL("posting the WRITE with %s", bad[i].what);
		/* The responder dropped it: the posted receive is still there
		 * and gets the next good message. */
		if (!quiet(rcq))
			FAIL("a WRITE with %s completed a receive", bad[i].what);
		for (size_t k = 0; k < BUF; k++)
			if (dst[k] != 0x5a)
				FAIL("a WRITE with %s changed byte %zu", bad[i].what, k);
		if (post_write(a, 0, 64, (uintptr_t)dst, dmr->rkey, 1, 1000 + i, 20 + i) || send_ok(20 + i, IBV_WC_RDMA_WRITE))
			return 1;
		if (!wait_wc(rcq, &wc) || wc.status || wc.wr_id != (uint64_t)(100 + i) || be32toh(wc.imm_data) != 1000u + i)
			FAIL("the good WRITE after %s did not complete", bad[i].what);
		memset(dst, 0x5a, 64);
	}
	/* A QP that does not allow remote writes. */
	if (setup_uc(&c, &d, IBV_ACCESS_LOCAL_WRITE))
		return 1;
	if (post_recv(d, NULL, 200, 0, 16) || post_write(c, 0, 100, (uintptr_t)dst, dmr->rkey, 1, 9, 30) ||
	    send_ok(30, IBV_WC_RDMA_WRITE))
		return 1;
	if (!quiet(rcq) || dst[0] != 0x5a)
		FAIL("a WRITE to a QP without remote write was taken");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_qp(c);
	ibv_destroy_qp(d);
	ibv_dereg_mr(foreign);
	ibv_dereg_mr(ro);
	ibv_dealloc_pd(pd2);
	printf("uc_reject ok\n");
	return 0;
}

static int mode_uc_send(void)
{
	struct ibv_sge sg[3] = {
		{ (uintptr_t)dst, 1000, dmr->lkey },
		{ (uintptr_t)dst + 5000, 3000, dmr->lkey },
		{ (uintptr_t)dst + 9000, 2000, dmr->lkey },
	};
	struct ibv_recv_wr rwr = { .wr_id = 300, .sg_list = sg, .num_sge = 3 }, *rbad;
	struct ibv_sge ss = { (uintptr_t)src, 5500, smr->lkey };
	struct ibv_send_wr swr = { .wr_id = 40, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
				   .send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(42) }, *sbad;
	struct ibv_qp *a, *b;
	struct ibv_wc wc;

	if (setup_uc(&a, &b, 0))
		return 1;
	pattern(src, BUF, 3);
	memset(dst, 0, BUF);
	if (ibv_post_recv(b, &rwr, &rbad) || ibv_post_send(a, &swr, &sbad) || send_ok(40, IBV_WC_SEND))
		FAIL("SEND: %s", strerror(errno));
	if (!wait_wc(rcq, &wc) || wc.status || wc.wr_id != 300 || wc.opcode != IBV_WC_RECV || wc.byte_len != 5500 ||
	    !(wc.wc_flags & IBV_WC_WITH_IMM) || be32toh(wc.imm_data) != 42)
		FAIL("SEND's receive completion wrong");
	if (memcmp(dst, src, 1000) || memcmp(dst + 5000, src + 1000, 3000) || memcmp(dst + 9000, src + 4000, 1500) ||
	    dst[9000 + 1500])
		FAIL("SEND scattered wrongly");
	/* Too long for the 6000-byte WQE: dropped, the WQE waits for the next. */
	rwr.wr_id = 301;
	ss.length = 7000;
	swr.wr_id = 41;
	if (ibv_post_recv(b, &rwr, &rbad) || ibv_post_send(a, &swr, &sbad) || send_ok(41, IBV_WC_SEND))
		return 1;
	if (!quiet(rcq))
		FAIL("a SEND longer than its WQE completed");
	ss.length = 10;
	swr.wr_id = 42;
	swr.opcode = IBV_WR_SEND;
	if (ibv_post_send(a, &swr, &sbad) || send_ok(42, IBV_WC_SEND))
		return 1;
	if (!wait_wc(rcq, &wc) || wc.status || wc.wr_id != 301 || wc.byte_len != 10 || (wc.wc_flags & IBV_WC_WITH_IMM))
		FAIL("the WQE kept from the dropped SEND did not take the next one");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	printf("uc_send ok\n");
	return 0;
}

static int mode_srq(void)
{
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 16, .max_sge = 2 } };
	struct ibv_srq_attr sa = { .srq_limit = 3 };
	struct ibv_srq *srq = ibv_create_srq(pd, &sia);
	struct ibv_qp *a, *b, *u1, *u2;
	struct ibv_async_event ev;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct pollfd pfd;
	int i;

	if (!srq)
		FAIL("SRQ: %s", strerror(errno));
	a = mkqp(IBV_QPT_UC, NULL);
	b = mkqp(IBV_QPT_UC, srq);
	u1 = mkqp(IBV_QPT_UD, NULL);
	u2 = mkqp(IBV_QPT_UD, srq);
	if (!a || !b || !u1 || !u2)
		FAIL("QPs: %s", strerror(errno));
	if (connect_uc(a, b->qp_num, 0) || connect_uc(b, a->qp_num, 0) || to_rts_ud(u1) || to_rts_ud(u2))
		FAIL("QP setup: %s", strerror(errno));
	for (i = 0; i < 5; i++)
		if (post_recv(NULL, srq, 500 + i, (uint64_t)i * 8192, 8192))
			FAIL("post SRQ receive: %s", strerror(errno));
	if (ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT))
		FAIL("arm limit: %s", strerror(errno));
	pattern(src, BUF, 4);
	memset(dst, 0, BUF);
	/* UC SEND of 3000 bytes into the first SRQ WQE. */
	{
		struct ibv_sge ss = { (uintptr_t)src, 3000, smr->lkey };
		struct ibv_send_wr w = { .wr_id = 50, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED }, *bad;

		if (ibv_post_send(a, &w, &bad) || send_ok(50, IBV_WC_SEND))
			return 1;
	}
	if (!wait_wc(rcq, &wc) || wc.status || wc.wr_id != 500 || wc.byte_len != 3000 || wc.qp_num != b->qp_num)
		FAIL("UC receive through the SRQ wrong");
	if (memcmp(dst, src, 3000))
		FAIL("UC data through the SRQ differs");
	/* 4 left, limit 3: no event yet. */
	pfd = (struct pollfd){ .fd = ctx->async_fd, .events = POLLIN };
	if (poll(&pfd, 1, 200) != 0)
		FAIL("limit event before the limit was crossed");
	/* UD datagram (GRH + 100 bytes) into the next. */
	{
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
					  .grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 } };
		struct ibv_sge ss = { (uintptr_t)src + 7, 100, smr->lkey };
		struct ibv_send_wr w = { .wr_id = 51, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED }, *bad;

		ah = ibv_create_ah(pd, &aa);
		if (!ah)
			FAIL("AH: %s", strerror(errno));
		w.wr.ud.ah = ah;
		w.wr.ud.remote_qpn = u2->qp_num;
		w.wr.ud.remote_qkey = 0x1234;
		if (ibv_post_send(u1, &w, &bad) || send_ok(51, IBV_WC_SEND))
			return 1;
	}
	if (!wait_wc(rcq, &wc) || wc.status || wc.wr_id != 501 || wc.byte_len != 140 || wc.qp_num != u2->qp_num ||
	    wc.src_qp != u1->qp_num || !(wc.wc_flags & IBV_WC_GRH))
		FAIL("UD receive through the SRQ wrong");
	if (memcmp(dst + 8192 + 40, src + 7, 100))
		FAIL("UD data through the SRQ differs");
	/* 3 left, below... not yet: the limit fires when fewer than 3 remain. */
	if (poll(&pfd, 1, 200) != 0)
		FAIL("limit event at exactly the limit");
	{
		struct ibv_sge ss = { (uintptr_t)src, 10, smr->lkey };
		struct ibv_send_wr w = { .wr_id = 52, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED }, *bad;

		if (ibv_post_send(a, &w, &bad) || send_ok(52, IBV_WC_SEND))
			return 1;
	}
	if (!wait_wc(rcq, &wc) || wc.status || wc.wr_id != 502)
		FAIL("third receive through the SRQ wrong");
	if (poll(&pfd, 1, 2000) != 1 || ibv_get_async_event(ctx, &ev))
		FAIL("no limit event once 2 WQEs remained");
	if (ev.event_type != IBV_EVENT_SRQ_LIMIT_REACHED || ev.element.srq != srq)
		FAIL("event %d, not SRQ_LIMIT_REACHED on our SRQ", ev.event_type);
	ibv_ack_async_event(&ev);
	if (ibv_query_srq(srq, &sa) || sa.srq_limit != 0)
		FAIL("the limit did not disarm (%u)", sa.srq_limit);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_qp(u1);
	ibv_destroy_qp(u2);
	ibv_destroy_ah(ah);
	if (ibv_destroy_srq(srq))
		FAIL("destroy SRQ: %s", strerror(errno));
	printf("srq ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s DEV uc_write|uc_reject|uc_send|srq\n", argv[0]);
		return 2;
	}
	ctx = rrxe_open(argv[1]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	if (find_gid())
		FAIL("%s has no IPv4 GID", argv[1]);
	pd = ibv_alloc_pd(ctx);
	scq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	src = aligned_alloc(4096, BUF);
	dst = aligned_alloc(4096, BUF);
	if (!pd || !scq || !rcq || !src || !dst)
		FAIL("resources: %s", strerror(errno));
	smr = ibv_reg_mr(pd, src, BUF, IBV_ACCESS_LOCAL_WRITE);
	dmr = ibv_reg_mr(pd, dst, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!smr || !dmr)
		FAIL("MRs: %s", strerror(errno));
	if (!strcmp(argv[2], "uc_write"))
		return mode_uc_write();
	if (!strcmp(argv[2], "uc_reject"))
		return mode_uc_reject();
	if (!strcmp(argv[2], "uc_send"))
		return mode_uc_send();
	if (!strcmp(argv[2], "srq"))
		return mode_srq();
	FAIL("unknown mode %s", argv[2]);
}
