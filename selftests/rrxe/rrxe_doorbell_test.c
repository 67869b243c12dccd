// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_doorbell_test DEV MODE ...: a doorbell (ibv_post_send) returns
 * promptly whatever it was asked to send, and the transfer goes on after
 * it. QPs of one device, through stock libibverbs + librxe.
 *
 *   uc LIMIT_MS    a UC SEND of 256 MiB, three times: ibv_post_send
 *                  returns within LIMIT_MS (the best of the three); each
 *                  SEND and its receive complete, the data arrives byte
 *                  for byte.
 *   rc LIMIT_MS    the same for one RC RDMA WRITE of 256 MiB.
 *   busy FD        writes a byte to FD, posts 128 UC SENDs of 64 MiB in
 *                  one call (8 GiB, many seconds of copying), and polls
 *                  its CQs until it is killed (the script kills it, or
 *                  deletes its device, while the transfer runs, in the
 *                  doorbell if that is where it runs).
 *
 * Prints what went wrong and exits non-zero on failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rrxe_test.h"

#define LEN (256u << 20)
/* busy's buffers are smaller: a killed process frees them as it exits. */
#define BUSY_LEN (64u << 20)
#define WAIT_MS 120000

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gid_index;

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* Polls `cq` for one completion, up to WAIT_MS: 0 got one, -1 not. */
static int poll1(struct ibv_cq *cq, struct ibv_wc *wc)
{
	long end = now_us() + WAIT_MS * 1000L;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n == 1)
			return 0;
		if (n < 0 || now_us() > end)
			return -1;
		usleep(1000);
	}
}

static int connect_qp(struct ibv_qp *q, uint32_t peer)
{
	return rrxe_connect(q, peer, &gid, gid_index, IBV_MTU_4096, IBV_ACCESS_REMOTE_WRITE, 9);
}

struct pair {
	struct ibv_qp *a, *b;
	struct ibv_cq *acq, *bcq;
	uint8_t *src, *dst;
	size_t len;
	struct ibv_mr *smr, *dmr;
};

static int pair_new(struct pair *p, int rc, size_t len)
{
	struct ibv_qp_init_attr ia = { .cap = { .max_send_wr = 128, .max_recv_wr = 128, .max_send_sge = 1,
						.max_recv_sge = 1 },
				       .qp_type = rc ? IBV_QPT_RC : IBV_QPT_UC };

	p->len = len;
	p->src = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p->dst = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->src == MAP_FAILED || p->dst == MAP_FAILED)
		FAIL("mmap: %s", strerror(errno));
	for (size_t i = 0; i < len; i += 8)
		*(uint64_t *)(p->src + i) = i * 0x9e3779b97f4a7c15ull + 1;
	memset(p->dst, 0, len);
	p->smr = ibv_reg_mr(pd, p->src, len, IBV_ACCESS_LOCAL_WRITE);
	p->dmr = ibv_reg_mr(pd, p->dst, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	p->acq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	p->bcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!p->smr || !p->dmr || !p->acq || !p->bcq)
		FAIL("MRs, CQs: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = p->acq;
	p->a = ibv_create_qp(pd, &ia);
	ia.send_cq = ia.recv_cq = p->bcq;
	p->b = ibv_create_qp(pd, &ia);
	if (!p->a || !p->b)
		FAIL("QPs: %s", strerror(errno));
	return connect_qp(p->a, p->b->qp_num) || connect_qp(p->b, p->a->qp_num);
}

static int post_recvs(struct pair *p, int n)
{
	struct ibv_sge s = { (uintptr_t)p->dst, p->len, p->dmr->lkey };
	struct ibv_recv_wr w = { .sg_list = &s, .num_sge = 1 }, *bad;

	for (int i = 0; i < n; i++) {
		w.wr_id = 100 + i;
		if (ibv_post_recv(p->b, &w, &bad))
			FAIL("post a receive: %s", strerror(errno));
	}
	return 0;
}

/*
 * One WQE of 256 MiB, three times: the doorbell's time (the best of the
 * three: the emulator's CPUs are the host's to deschedule), then each
 * transfer's outcome.
 */
static int one(int rc, long limit_ms)
{
	const char *what = rc ? "RC WRITE" : "UC SEND";
	struct pair p = { 0 };
	struct ibv_sge s;
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	long t0, post_us, best = -1, done_ms[3];
	int r;

	if (pair_new(&p, rc, LEN) || (!rc && post_recvs(&p, 3)))
		return 1;
	s = (struct ibv_sge){ (uintptr_t)p.src, LEN, p.smr->lkey };
	if (rc) {
		w.opcode = IBV_WR_RDMA_WRITE;
		w.wr.rdma.remote_addr = (uintptr_t)p.dst;
		w.wr.rdma.rkey = p.dmr->rkey;
	} else {
		w.opcode = IBV_WR_SEND;
	}
	for (int k = 0; k < 3; k++) {
		memset(p.dst, 0, LEN);
		t0 = now_us();
		r = ibv_post_send(p.a, &w, &bad);
		post_us = now_us() - t0;
		if (r)
			FAIL("post the %s: %s", what, strerror(r));
		if (best < 0 || post_us < best)
			best = post_us;
		if (poll1(p.acq, &wc) || wc.wr_id != 1)
			FAIL("the %s did not complete", what);
		if (wc.status != IBV_WC_SUCCESS)
			FAIL("the %s completed with %s", what, ibv_wc_status_str(wc.status));
		if (!rc && (poll1(p.bcq, &wc) || wc.wr_id != 100u + k || wc.status != IBV_WC_SUCCESS ||
			    wc.byte_len != LEN))
			FAIL("the receive did not complete with the whole SEND");
		done_ms[k] = (now_us() - t0) / 1000;
		if (memcmp(p.src, p.dst, LEN))
			FAIL("the 256 MiB %s did not arrive byte for byte", what);
	}
	printf("%s of 256 MiB, three times: ibv_post_send returned in %ld us at best; the transfers completed in %ld, %ld and %ld ms, verified\n",
	       what, best, done_ms[0], done_ms[1], done_ms[2]);
	if (best > limit_ms * 1000)
		FAIL("ibv_post_send of one %s of 256 MiB took %ld us at best, more than %ld ms", what, best, limit_ms);
	return 0;
}

static int busy(int fd)
{
	struct pair p = { 0 };
	struct ibv_sge s;
	struct ibv_send_wr w[128], *bad;
	struct ibv_wc wc[32];
	int r;

	if (pair_new(&p, 0, BUSY_LEN) || post_recvs(&p, 128))
		return 1;
	s = (struct ibv_sge){ (uintptr_t)p.src, BUSY_LEN, p.smr->lkey };
	for (int i = 0; i < 128; i++)
		w[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
					     .send_flags = IBV_SEND_SIGNALED, .next = i < 127 ? &w[i + 1] : NULL };
	if (write(fd, "p", 1) != 1)
		FAIL("write to the script");
	r = ibv_post_send(p.a, w, &bad);
	if (r)
		FAIL("post 128 UC SENDs of 64 MiB: %s", strerror(r));
	for (;;) {
		ibv_poll_cq(p.acq, 32, wc);
		ibv_poll_cq(p.bcq, 32, wc);
		usleep(1000);
	}
}

int main(int argc, char **argv)
{
	if (argc != 4)
		FAIL("usage: %s DEV uc|rc LIMIT_MS | DEV busy FD", argv[0]);
	ctx = rrxe_open(argv[1]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	pd = ibv_alloc_pd(ctx);
	gid_index = rrxe_ipv4_gid(ctx, &gid);
	if (!pd || gid_index < 0)
		FAIL("PD or IPv4 GID");
	if (!strcmp(argv[2], "uc") || !strcmp(argv[2], "rc"))
		return one(argv[2][0] == 'r', atol(argv[3]));
	if (!strcmp(argv[2], "busy"))
		return busy(atoi(argv[3]));
	FAIL("unknown mode %s", argv[2]);
}
