// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_hostile_test DEV [ROUNDS]: a process that writes random and
 * adversarial WQEs straight into the mapped send and receive rings of UD
 * QPs it creates with the raw uverbs commands (so that it knows where the
 * rings are), pushes the indices anywhere, and rings the doorbell with the
 * raw POST_SEND command. The kernel must stay in bounds: the run
 * ends with a check that clean UD traffic still works on the device.
 * Prints what went wrong and exits non-zero on failure.
 *
 * rrxe_hostile_test DEV race: a thread keeps the mapped send ring of a raw
 * UD QP (4096 slots) full of valid, unsignaled 1 KiB SENDs by moving the producer
 * index behind the kernel's consumer, for 6 seconds, while the main thread
 * rings the doorbell once. The doorbell must return within 2 seconds (one
 * ring's worth of WQEs), not when the thread stops; then clean traffic.
 * `race SCALE` multiplies both times (a slower kernel: the debug one
 * takes over 3 s for one ring's worth).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rrxe_test.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char buf[65536];
static uint64_t seed = 88172645463325252ull;

static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* A raw UD QP, created with the write() command so that the rings' mmap
 * info comes back to this program. */
struct raw_qp {
	uint32_t handle, qpn;
	struct mminfo rq, sq;
};

static int raw_create(struct raw_qp *q, uint32_t max_send_wr)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_qp cmd;
	} req;
	struct {
		struct ib_uverbs_create_qp_resp resp;
		struct mminfo rq, sq;
	} resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_CREATE_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.pd_handle = pd->handle;
	req.cmd.send_cq_handle = cq->handle;
	req.cmd.recv_cq_handle = cq->handle;
	req.cmd.max_send_wr = max_send_wr;
	req.cmd.max_recv_wr = 32;
	req.cmd.max_send_sge = 4;
	req.cmd.max_recv_sge = 4;
	req.cmd.max_inline_data = 64;
	req.cmd.qp_type = IBV_QPT_UD;
	if (write(ctx->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	q->handle = resp.resp.qp_handle;
	q->qpn = resp.resp.qpn;
	q->rq = resp.rq;
	q->sq = resp.sq;
	return 0;
}

static int raw_modify(struct raw_qp *q, int state, uint32_t mask)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_modify_qp cmd;
	} req;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_MODIFY_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.cmd.qp_handle = q->handle;
	req.cmd.attr_mask = mask;
	req.cmd.qp_state = state;
	req.cmd.port_num = 1;
	req.cmd.qkey = 0x1234;
	req.cmd.sq_psn = 1;
	return write(ctx->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

static int raw_destroy(struct raw_qp *q)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_qp cmd;
	} req;
	struct ib_uverbs_destroy_qp_resp resp;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_DESTROY_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.qp_handle = q->handle;
	return write(ctx->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

static struct ibv_qp *ud_qp(void)
{
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
				       .cap = { 32, 32, 4, 4, 64 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x1234 };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		return NULL;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return NULL;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return NULL;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return NULL;
	return qp;
}

/* Fills slot `i` of a ring with an adversarial WQE of kind `k`. */
static void poison(uint8_t *ring, unsigned i, unsigned k, int send, struct ibv_ah *ah)
{
	uint32_t log2 = *(uint32_t *)ring, mask = *(uint32_t *)(ring + 4);
	uint8_t *w = ring + 384 + ((size_t)(i & mask) << log2);
	size_t sz = (size_t)1 << log2;
	uint32_t *num_sge = (uint32_t *)(w + (send ? 184 + 12 : 16 + 12));
	uint32_t *dlen = (uint32_t *)(w + (send ? 184 : 16));
	uint8_t *sge = w + (send ? 208 : 40);

	for (size_t b = 0; b < sz; b += 8) {
		uint64_t r = rnd();
		memcpy(w + b, &r, sz - b < 8 ? sz - b : 8);
	}
	if (!send) {
		*num_sge = k % 3 ? (uint32_t)rnd() % 6 : (uint32_t)rnd();
		return;
	}
	switch (k % 8) {
	case 0: /* random opcode */
		break;
	case 1: /* a UD send with a wild SGE count */
		*(uint32_t *)(w + 12) = 2;
		*num_sge = (uint32_t)rnd();
		break;
	case 2: /* a UD send whose SGEs point around the real MR */
		*(uint32_t *)(w + 12) = 2;
		*(uint32_t *)(w + 16) = 0;
		*(uint32_t *)(w + 36) = ah ? 1 + (uint32_t)rnd() % 4 : 0;
		*num_sge = 1 + rnd() % 4;
		for (unsigned s = 0; s < *num_sge; s++) {
			uint64_t addr = (uintptr_t)buf + (rnd() % 3 == 0 ? (uint64_t)-1 - rnd() % 4096 : rnd() % 70000);
			uint32_t len = rnd() % 3 == 0 ? 0xffffffff : rnd() % 5000;

			memcpy(sge + 16 * s, &addr, 8);
			memcpy(sge + 16 * s + 8, &len, 4);
			memcpy(sge + 16 * s + 12, rnd() % 2 ? &mr->lkey : (uint32_t *)&seed, 4);
		}
		break;
	case 3: /* inline with a huge length */
		*(uint32_t *)(w + 12) = 2;
		*(uint32_t *)(w + 16) = 1 << 3;
		*dlen = (uint32_t)rnd();
		break;
	case 4: /* RDMA opcodes on UD */
		*(uint32_t *)(w + 12) = rnd() % 2 ? 0 : 4;
		break;
	case 5: /* a random AH number */
		*(uint32_t *)(w + 12) = 3;
		*(uint32_t *)(w + 36) = (uint32_t)rnd();
		*num_sge = 0;
		break;
	default: /* opcodes just past the table */
		*(uint32_t *)(w + 12) = 10 + rnd() % 6;
		break;
	}
}

static int clean_traffic(void)
{
	struct ibv_qp *a = ud_qp(), *b = ud_qp();
	union ibv_gid gid;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 64, .sgid_index = 1 } };
	struct ibv_ah *ah;
	struct ibv_sge s = { (uintptr_t)buf, 256, 0 }, r = { (uintptr_t)buf + 4096, 296, 0 };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bs;
	struct ibv_recv_wr rw = { .wr_id = 8, .sg_list = &r, .num_sge = 1 }, *br;
	struct ibv_wc wc[4];
	int got = 0, n;

	if (!a || !b)
		FAIL("clean QPs: %s", strerror(errno));
	if (ibv_query_gid(ctx, 1, 1, &gid))
		FAIL("query GID 1: %s", strerror(errno));
	aa.grh.dgid = gid;
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		FAIL("AH: %s", strerror(errno));
	s.lkey = r.lkey = mr->lkey;
	memset(buf, 0x5c, 256);
	memset(buf + 4096, 0, 296);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = b->qp_num;
	wr.wr.ud.remote_qkey = 0x1234;
	while (ibv_poll_cq(cq, 4, wc) > 0)
		;
	if (ibv_post_recv(b, &rw, &br) || ibv_post_send(a, &wr, &bs))
		FAIL("clean post: %s", strerror(errno));
	for (int t = 0; t < 1000 && got < 2; t++) {
		n = ibv_poll_cq(cq, 4, wc);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				FAIL("clean completion wr_id %llu status %d", (unsigned long long)wc[i].wr_id, wc[i].status);
			got++;
		}
		usleep(1000);
	}
	if (got != 2)
		FAIL("clean traffic: %d completions, expected 2", got);
	for (int i = 0; i < 256; i++)
		if ((uint8_t)buf[4096 + 40 + i] != 0x5c)
			FAIL("clean traffic: byte %d is 0x%x", i, (uint8_t)buf[4096 + 40 + i]);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	return 0;
}

/* The ring header's words (rxe_queue_buf) and the first slot. */
#define RING_PROD 128
#define RING_CONS 256
#define RING_DATA 384

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* A raw UD QP in RTS with its send ring mapped. */
static int raw_rts(struct raw_qp *q, uint8_t **sq, uint32_t max_send_wr)
{
	int n;

	if ((n = raw_create(q, max_send_wr)))
		FAIL("raw CREATE_QP: %s", strerror(n));
	if ((n = raw_modify(q, IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) ||
	    (n = raw_modify(q, IBV_QPS_RTR, IBV_QP_STATE)) ||
	    (n = raw_modify(q, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_SQ_PSN)))
		FAIL("raw MODIFY_QP: %s", strerror(n));
	*sq = mmap(NULL, q->sq.size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd, q->sq.offset);
	if (*sq == MAP_FAILED)
		FAIL("mapping the send ring: %s", strerror(errno));
	return 0;
}

/*
 * Writes a UD SEND of `len` bytes of `buf` to `qpn` through AH number
 * `ah_num` into slot `i`.
 */
static void ud_send_wqe(uint8_t *sq, unsigned i, uint32_t qpn, uint32_t ah_num, int signaled, uint32_t len)
{
	uint32_t log2 = *(volatile uint32_t *)sq, mask = *(volatile uint32_t *)(sq + 4);
	struct rxe_send_wqe *w = (void *)(sq + RING_DATA + ((size_t)(i & mask) << log2));

	memset(w, 0, sizeof(*w));
	w->wr.wr_id = i;
	w->wr.opcode = IBV_WR_SEND;
	w->wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	w->wr.wr.ud.remote_qpn = qpn;
	w->wr.wr.ud.remote_qkey = 0x1234;
	w->wr.wr.ud.ah_num = ah_num;
	if (len) {
		w->dma.length = len;
		w->dma.num_sge = 1;
		w->dma.sge[0].addr = (uintptr_t)buf;
		w->dma.sge[0].length = len;
		w->dma.sge[0].lkey = mr->lkey;
	}
}

struct racer {
	uint8_t *sq;
	double until;
};

/*
 * Keeps the ring full (the producer index just behind the consumer's)
 * until its time is up.
 */
static void *race_indices(void *arg)
{
	struct racer *r = arg;
	uint32_t mask = *(volatile uint32_t *)(r->sq + 4);

	while (now_s() < r->until) {
		uint32_t c = *(volatile uint32_t *)(r->sq + RING_CONS);

		*(volatile uint32_t *)(r->sq + RING_PROD) = (c - 1) & mask;
	}
	return NULL;
}

static int race(double scale)
{
	struct ibv_qp *rcv = ud_qp();
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 64, .sgid_index = 1 } };
	struct racer r = {0};
	struct raw_qp q;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	pthread_t t;
	int ah_num = -1, n;
	double t0, took;

	if (!rcv || ibv_query_gid(ctx, 1, 1, &aa.grh.dgid))
		FAIL("receiver: %s", strerror(errno));
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		FAIL("AH: %s", strerror(errno));
	/* The AH's number: a signaled SEND per guess, each on a fresh QP (a
	 * wrong number puts the QP in ERR). */
	for (uint32_t k = 1; k < 64 && ah_num < 0; k++) {
		uint8_t *sq;

		if (raw_rts(&q, &sq, 32))
			return 1;
		ud_send_wqe(sq, 0, rcv->qp_num, k, 1, 0);
		memset(&wc, 0, sizeof(wc));
		wc.status = IBV_WC_GENERAL_ERR;
		*(volatile uint32_t *)(sq + RING_PROD) = 1;
		if ((n = rrxe_doorbell(ctx, q.handle)))
			FAIL("probe doorbell: %s", strerror(n));
		for (int i = 0; i < 1000 && ibv_poll_cq(cq, 1, &wc) == 0; i++)
			usleep(1000);
		if (wc.status == IBV_WC_SUCCESS)
			ah_num = k;
		munmap(sq, q.sq.size);
		if ((n = raw_destroy(&q)))
			FAIL("destroy: %s", strerror(n));
	}
	if (ah_num < 0)
		FAIL("found no AH number that works");

	/*
	 * A big ring of 1 KiB SENDs: a pass over it takes the kernel long
	 * enough that the racing thread always moves the index in time.
	 */
	if (raw_rts(&q, &r.sq, 4096))
		return 1;
	for (unsigned i = 0; i <= *(uint32_t *)(r.sq + 4); i++)
		ud_send_wqe(r.sq, i, rcv->qp_num, ah_num, 0, 1024);
	r.until = now_s() + 6 * scale;
	if (pthread_create(&t, NULL, race_indices, &r))
		FAIL("pthread_create");
	usleep(50000);
	t0 = now_s();
	n = rrxe_doorbell(ctx, q.handle);
	took = now_s() - t0;
	pthread_join(t, NULL);
	if (n)
		FAIL("racing doorbell: %s", strerror(n));
	if (took > 2.0 * scale)
		FAIL("the doorbell took %.2f s while the producer index kept moving (limit %.0f s)", took,
		     2.0 * scale);
	if (ibv_poll_cq(cq, 1, &wc) != 0)
		FAIL("an unsignaled SEND completed (status %d)", wc.status);
	printf("racing doorbell returned in %.3f s\n", took);
	munmap(r.sq, q.sq.size);
	if ((n = raw_destroy(&q)))
		FAIL("destroy: %s", strerror(n));
	ibv_destroy_ah(ah);
	ibv_destroy_qp(rcv);
	return clean_traffic();
}

int main(int argc, char **argv)
{
	int rounds, n;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DEV [ROUNDS]\n", argv[0]);
		return 2;
	}
	rounds = argc > 2 ? atoi(argv[2]) : 200;
	ctx = rrxe_open(argv[1]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!cq || !mr)
		FAIL("setup: %s", strerror(errno));
	if (argc > 2 && !strcmp(argv[2], "race"))
		return race(argc > 3 ? atof(argv[3]) : 1);
	/* A clean sender whose datagrams land in the hostile receive rings. */
	union ibv_gid gid;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 64, .sgid_index = 1 } };
	struct ibv_qp *sender = ud_qp();
	struct ibv_ah *ah;

	if (!sender || ibv_query_gid(ctx, 1, 1, &gid))
		FAIL("sender: %s", strerror(errno));
	aa.grh.dgid = gid;
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		FAIL("AH: %s", strerror(errno));

	for (int round = 0; round < rounds; round++) {
		struct raw_qp q;
		uint8_t *rq, *sq;

		if ((n = raw_create(&q, 32)))
			FAIL("round %d: raw CREATE_QP: %s", round, strerror(n));
		if ((n = raw_modify(&q, IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) ||
		    (n = raw_modify(&q, IBV_QPS_RTR, IBV_QP_STATE)) ||
		    (n = raw_modify(&q, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_SQ_PSN)))
			FAIL("round %d: raw MODIFY_QP: %s", round, strerror(n));
		rq = mmap(NULL, q.rq.size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd, q.rq.offset);
		sq = mmap(NULL, q.sq.size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd, q.sq.offset);
		if (rq == MAP_FAILED || sq == MAP_FAILED)
			FAIL("round %d: mapping the rings: %s", round, strerror(errno));
		for (unsigned i = 0; i < 32; i++) {
			poison(sq, i, (unsigned)rnd(), 1, NULL);
			poison(rq, i, (unsigned)rnd(), 0, NULL);
		}
		/* Indices anywhere, including past each other and unmasked. */
		*(volatile uint32_t *)(sq + 128) = (uint32_t)rnd();
		*(volatile uint32_t *)(rq + 128) = (uint32_t)rnd();
		if (round % 4 == 0)
			*(volatile uint32_t *)(sq + 256) = (uint32_t)rnd();
		if (round % 5 == 0) {
			/* Scribble over the geometry too. */
			*(volatile uint32_t *)sq = (uint32_t)rnd();
			*(volatile uint32_t *)(sq + 4) = (uint32_t)rnd();
		}
		{
			struct ibv_sge sg = { (uintptr_t)buf, 100 + rnd() % 900, mr->lkey };
			struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;

			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = q.qpn;
			wr.wr.ud.remote_qkey = 0x1234;
			for (int k = 0; k < 3; k++)
				if ((n = ibv_post_send(sender, &wr, &bad)))
					FAIL("round %d: clean send into the hostile ring: %s", round, strerror(n));
		}
		n = rrxe_doorbell(ctx, q.handle);
		if (n && n != EINVAL)
			FAIL("round %d: doorbell gave %d (%s)", round, n, strerror(n));
		while (ibv_poll_cq(cq, 64, (struct ibv_wc[64]){}) > 0)
			;
		munmap(rq, q.rq.size);
		munmap(sq, q.sq.size);
		if ((n = raw_destroy(&q)))
			FAIL("round %d: destroy: %s", round, strerror(n));
	}
	ibv_destroy_ah(ah);
	ibv_destroy_qp(sender);
	if (clean_traffic())
		return 1;
	printf("%d hostile rounds, then clean traffic: ok\n", rounds);
	return 0;
}
