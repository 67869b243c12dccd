// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_srq_test DEV MODE: shared receive queues through stock libibverbs +
 * librxe (which posts receives straight into the shared ring). Each mode
 * prints what went wrong and exits non-zero on failure.
 *
 *   api      sizes and limits, query, the limit attribute, QPs on an SRQ
 *   resize   posted WQEs survive a resize: the ring holds exactly its
 *            capacity afterwards, and shrinking below them fails
 *   leak     SRQs with posted WQEs, then exit without destroying them
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rrxe_test.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_device_attr attr;
static char buf[4096];
static struct ibv_mr *mr;

static struct ibv_srq *mksrq(uint32_t wr, uint32_t sge, uint32_t limit)
{
	struct ibv_srq_init_attr ia = { .attr = { wr, sge, limit } };

	return ibv_create_srq(pd, &ia);
}

static int post(struct ibv_srq *srq, int n, int *done)
{
	struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	int r;

	for (*done = 0; *done < n; (*done)++) {
		wr.wr_id = *done;
		if ((r = ibv_post_srq_recv(srq, &wr, &bad)))
			return r;
	}
	return 0;
}

static int mode_api(void)
{
	struct ibv_srq_attr a;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int r;

	srq = mksrq(100, 2, 0);
	if (!srq)
		FAIL("SRQ of 100: %s", strerror(errno));
	if (ibv_query_srq(srq, &a) || a.max_wr != 127 || a.max_sge != 2 || a.srq_limit)
		FAIL("query: max_wr %u max_sge %u limit %u, expected 127 2 0", a.max_wr, a.max_sge, a.srq_limit);
	static const uint32_t bad[][2] = { { 0, 1 }, { (1u << 20) + 1, 1 }, { 16, 28 } };
	for (unsigned i = 0; i < 3; i++) {
		struct ibv_srq *s;

		errno = 0;
		if ((s = mksrq(bad[i][0], bad[i][1], 0)) || errno != EINVAL)
			FAIL("SRQ max_wr %u max_sge %u: %s, expected EINVAL", bad[i][0], bad[i][1],
			     s ? "created" : strerror(errno));
	}
	a.srq_limit = 10;
	if ((r = ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT)))
		FAIL("arm limit 10: %s", strerror(r));
	if (ibv_query_srq(srq, &a) || a.srq_limit != 10)
		FAIL("limit after arming: %u", a.srq_limit);
	a.srq_limit = 128;
	if ((r = ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT)) != EINVAL)
		FAIL("limit above the capacity: %d, expected EINVAL", r);
	a.max_wr = 5;
	if ((r = ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR)) != EINVAL)
		FAIL("max_wr below the armed limit: %d, expected EINVAL", r);

	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_send_sge = 1, .max_recv_wr = 1u << 30, .max_recv_sge = 99 },
	};
	qp = ibv_create_qp(pd, &qa);
	if (!qp)
		FAIL("RC QP on the SRQ (receive caps ignored): %s", strerror(errno));
	if (qa.cap.max_recv_wr || qa.cap.max_recv_sge)
		FAIL("QP on an SRQ reports receive caps %u/%u", qa.cap.max_recv_wr, qa.cap.max_recv_sge);
	if (ibv_destroy_srq(srq) != EBUSY)
		FAIL("an SRQ with a QP on it was destroyed");
	if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) || ibv_destroy_srq(srq))
		FAIL("cleanup: %s", strerror(errno));
	printf("SRQ sizes, limits, query, QPs on an SRQ: ok\n");
	return 0;
}

static int mode_resize(void)
{
	struct ibv_srq_attr a = {};
	struct ibv_srq *srq = mksrq(63, 1, 0);
	int n, r;

	if (!srq)
		FAIL("SRQ: %s", strerror(errno));
	if ((r = post(srq, 50, &n)))
		FAIL("post 50: failed at %d: %s", n, strerror(r));
	a.max_wr = 30;
	if ((r = ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR)) != EINVAL)
		FAIL("shrinking below 50 posted WQEs: %d, expected EINVAL", r);
	a.max_wr = 200;
	if ((r = ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR)))
		FAIL("resize to 200: %s", strerror(r));
	if (ibv_query_srq(srq, &a) || a.max_wr != 255)
		FAIL("max_wr after resize: %u, expected 255", a.max_wr);
	/* 50 survived: exactly 205 more fit, the next is refused. */
	if ((r = post(srq, 205, &n)))
		FAIL("posting 205 after the resize failed at %d: %s", n, strerror(r));
	if ((r = post(srq, 1, &n)) != ENOMEM)
		FAIL("posting to a full SRQ: %d, expected ENOMEM", r);
	if (ibv_destroy_srq(srq))
		FAIL("destroy: %s", strerror(errno));
	printf("SRQ resize keeps posted WQEs: ok\n");
	return 0;
}

static int mode_leak(void)
{
	int n;

	for (int i = 0; i < 100; i++) {
		struct ibv_srq *srq = mksrq(64, 1, 0);

		if (!srq || post(srq, 10, &n))
			FAIL("SRQ %d: %s", i, strerror(errno));
	}
	printf("left 100 SRQs\n");
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv)
{

	if (argc < 3) {
		fprintf(stderr, "usage: %s DEV MODE\n", argv[0]);
		return 2;
	}
	ctx = rrxe_open(argv[1]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	if (ibv_query_device(ctx, &attr))
		FAIL("ibv_query_device: %s", strerror(errno));
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr)
		FAIL("PD/MR: %s", strerror(errno));
	if (!strcmp(argv[2], "api"))
		return mode_api();
	if (!strcmp(argv[2], "resize"))
		return mode_resize();
	if (!strcmp(argv[2], "leak"))
		return mode_leak();
	FAIL("unknown mode %s", argv[2]);
}
