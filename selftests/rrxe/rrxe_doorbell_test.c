// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_doorbell_test DEV MODE ...: a doorbell (ibv_post_send) returns
 * promptly whatever it was asked to send, and the transfer goes on after
 * it. QPs of one device, through stock libibverbs + librxe.
 *
 *   uc LIMIT_MS    a UC SEND of 256 MiB, five times: the caller runs
 *                  for at most LIMIT_MS inside ibv_post_send (its own CPU
 *                  time, the best of the five), and ibv_post_send returns
 *                  within ten times that (the best of the five), a
 *                  fraction of what the transfer takes; each SEND and its
 *                  receive complete, the data arrives byte for byte.
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

static long clock_us(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static long now_us(void)
{
	return clock_us(CLOCK_MONOTONIC);
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
 * One WQE of 256 MiB, TRIES times, then each transfer's outcome. Two
 * times per post, the best of the tries for each: the caller's own CPU
 * time inside ibv_post_send (the work the doorbell did in its context)
 * against the limit, and the wall time against ten times the limit. The
 * wall time also holds whatever ran on the caller's CPU meanwhile (the
 * QP's send task, woken by the doorbell, may preempt it there; under the
 * emulator, other guests' threads on the host): in a loaded CI run it
 * passed 10 ms for a doorbell that had not started its transfer. A
 * doorbell that does the transfer runs for as long as the transfer; one
 * that waits for it sleeps as long: the first fails the CPU check, the
 * second the wall one.
 */
#define TRIES 5
static int one(int rc, long limit_ms)
{
	const char *what = rc ? "RC WRITE" : "UC SEND";
	struct pair p = { 0 };
	struct ibv_sge s;
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	long t0, c0, cpu_us[TRIES], wall_us[TRIES], done_ms[TRIES], cpu = -1, wall = -1;
	int r;

	if (pair_new(&p, rc, LEN) || (!rc && post_recvs(&p, TRIES)))
		return 1;
	s = (struct ibv_sge){ (uintptr_t)p.src, LEN, p.smr->lkey };
	if (rc) {
		w.opcode = IBV_WR_RDMA_WRITE;
		w.wr.rdma.remote_addr = (uintptr_t)p.dst;
		w.wr.rdma.rkey = p.dmr->rkey;
	} else {
		w.opcode = IBV_WR_SEND;
	}
	for (int k = 0; k < TRIES; k++) {
		memset(p.dst, 0, LEN);
		t0 = now_us();
		c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
		r = ibv_post_send(p.a, &w, &bad);
		cpu_us[k] = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
		wall_us[k] = now_us() - t0;
		if (r)
			FAIL("post the %s: %s", what, strerror(r));
		if (cpu < 0 || cpu_us[k] < cpu)
			cpu = cpu_us[k];
		if (wall < 0 || wall_us[k] < wall)
			wall = wall_us[k];
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
	printf("%s of 256 MiB, %d times, each verified: ibv_post_send", what, TRIES);
	for (int k = 0; k < TRIES; k++)
		printf("%s %ld us (the caller ran %ld)", k ? "," : "", wall_us[k], cpu_us[k]);
	printf("; the transfers completed in");
	for (int k = 0; k < TRIES; k++)
		printf("%s %ld", k ? "," : "", done_ms[k]);
	printf(" ms\n");
	if (cpu > limit_ms * 1000)
		FAIL("the caller ran %ld us at best inside ibv_post_send of one %s of 256 MiB, more than %ld ms",
		     cpu, what, limit_ms);
	if (wall > 10 * limit_ms * 1000)
		FAIL("ibv_post_send of one %s of 256 MiB took %ld us at best, more than %ld ms", what, wall,
		     10 * limit_ms);
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
