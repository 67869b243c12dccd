// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_memcg_test DEV: run inside a memory cgroup with a limit, creates
 * verbs objects and moves messages until a verb fails, the way a process
 * would that means to make the kernel allocate for it: each round a PD,
 * a CQ, an RC pair, a UC pair and a UD QP with the smallest rings (so
 * that what the kernel allocates beside the rings weighs the most), the
 * QPs of a pair connected to each other through the device's IPv4 GID at
 * path MTU 4096, then a 4 KiB SEND each way and a 4 KiB RDMA READ each
 * way on the RC pair (each RC QP's requester and responder buffers grow
 * to a full packet), a 4 KiB UC SEND, a 4 KiB UD datagram to itself, an
 * MR over one shared buffer, a memory window and, while the device has
 * device memory left, 16 KiB of it with an MR on it. Every message is
 * checked (status, length, bytes).
 *
 * When a verb fails, it prints "failed VERB ERRNO_NAME ..." on standard
 * output; when a message completes with LOC_QP_OP_ERR or REM_OP_ERR (what
 * a message gets whose packet buffer the kernel found no memory for, on
 * the requester's side or the READ responder's), "failed completion
 * STATUS ...". Then it prints "holding" once everything it made is still
 * there, and waits
 * until its standard input reaches end of file (the script measures the
 * cgroup and the kernel meanwhile); then it exits without freeing
 * anything. Exit status 0 once it held, 1 on a failure that is not a verb
 * failing (a message lost or wrong, a setup step).
 *
 * User memory is touched up front (a heap kept in reserve and locked, the
 * message buffers), so that only the kernel's allocations meet the limit:
 * a page fault past it would meet the cgroup's OOM killer instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <malloc.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl.h>
#include <rdma/rrxe-abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rrxe_test.h"

#define MSG 4096
#define DM_CHUNK (16 * 1024)
#define RESERVE (6 << 20)	/* heap touched up front for libibverbs */
#define MAX_ROUNDS 100000
#define WAIT_MS 10000

static struct ibv_context *ctx;
static union ibv_gid gid;
static int gidx;
static uint8_t *buf;		/* [0, MSG) send, [MSG, 2 MSG) receive, ... */
static const char *failed_verb;
static int failed_err;
static const char *failed_wc;	/* with failed_verb "completion" */

/* A verb failed with `err`: remembered, and the rounds stop. */
static int verb_failed(const char *verb, int err)
{
	failed_verb = verb;
	failed_err = err ? err : EIO;
	return -1;
}

/* A completion's status other than success: -1 (the rounds stop) for the
 * two a message gets when its packet buffer found no memory, else 1. */
static int wc_failed(const struct ibv_wc *wc, const char *what)
{
	if (wc->status == IBV_WC_LOC_QP_OP_ERR || wc->status == IBV_WC_REM_OP_ERR) {
		failed_verb = "completion";
		failed_wc = wc->status == IBV_WC_LOC_QP_OP_ERR ? "LOC_QP_OP_ERR" : "REM_OP_ERR";
		return -1;
	}
	FAIL("%s: wr %llu status %s (%d) byte_len %u", what, (unsigned long long)wc->wr_id,
	     ibv_wc_status_str(wc->status), wc->status, wc->byte_len);
}

#define VERB(what, ptr) ({ __typeof__(ptr) p_ = (ptr); if (!p_) return verb_failed(what, errno); p_; })
#define VERB0(what, call) ({ int r_ = (call); if (r_) return verb_failed(what, r_ > 0 ? r_ : errno); })

/* ---- device memory through the uverbs ioctls (librxe has no ibv_alloc_dm) ---- */

struct cmd {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[8];
};

static struct ib_uverbs_attr *attr(struct cmd *c, uint16_t id, uint16_t len, uint64_t data)
{
	struct ib_uverbs_attr *a = &c->attrs[c->hdr.num_attrs++];

	a->attr_id = id;
	a->len = len;
	a->flags = UVERBS_ATTR_F_MANDATORY;
	a->data = data;
	return a;
}

static int run(struct cmd *c, uint16_t obj, uint16_t method)
{
	c->hdr.object_id = obj;
	c->hdr.method_id = method;
	c->hdr.driver_id = RDMA_DRIVER_RXE;
	c->hdr.length = sizeof(c->hdr) + c->hdr.num_attrs * sizeof(c->attrs[0]);
	return ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, c) ? errno : 0;
}

/* 16 KiB of device memory and a zero-based MR on it, in `pd`. */
static int dm_round(struct ibv_pd *pd)
{
	struct ib_uverbs_attr *h;
	uint32_t align = 0, access = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE, lkey, rkey;
	uint64_t len = DM_CHUNK, off;
	struct cmd c = { 0 };

	h = attr(&c, UVERBS_ATTR_ALLOC_DM_HANDLE, 0, 0);
	attr(&c, UVERBS_ATTR_ALLOC_DM_LENGTH, sizeof(len), len);
	attr(&c, UVERBS_ATTR_ALLOC_DM_ALIGNMENT, sizeof(align), align);
	attr(&c, RRXE_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET, sizeof(off), (uintptr_t)&off);
	VERB0("DM_ALLOC", run(&c, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC));
	uint32_t dm = h->data;

	memset(&c, 0, sizeof(c));
	attr(&c, UVERBS_ATTR_REG_DM_MR_HANDLE, 0, 0);
	attr(&c, UVERBS_ATTR_REG_DM_MR_OFFSET, sizeof(uint64_t), 0);
	attr(&c, UVERBS_ATTR_REG_DM_MR_LENGTH, sizeof(len), len);
	attr(&c, UVERBS_ATTR_REG_DM_MR_PD_HANDLE, 0, pd->handle);
	attr(&c, UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, sizeof(access), access);
	attr(&c, UVERBS_ATTR_REG_DM_MR_DM_HANDLE, 0, dm);
	attr(&c, UVERBS_ATTR_REG_DM_MR_RESP_LKEY, sizeof(lkey), (uintptr_t)&lkey);
	attr(&c, UVERBS_ATTR_REG_DM_MR_RESP_RKEY, sizeof(rkey), (uintptr_t)&rkey);
	VERB0("DM_MR_REG", run(&c, UVERBS_OBJECT_MR, UVERBS_METHOD_DM_MR_REG));
	return 0;
}

/* ---- messages ---- */

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* The next completion on `cq` is `id`, successful, of `len` bytes. */
static int expect(struct ibv_cq *cq, uint64_t id, uint32_t len)
{
	long end = now_ms() + WAIT_MS;
	struct ibv_wc wc;
	int n;

	while (!(n = ibv_poll_cq(cq, 1, &wc))) {
		if (now_ms() > end)
			FAIL("no completion for wr %llu in %d ms", (unsigned long long)id, WAIT_MS);
		usleep(50);
	}
	if (n < 0)
		FAIL("ibv_poll_cq: %d", n);
	if (wc.status != IBV_WC_SUCCESS)
		return wc_failed(&wc, "expected completion");
	if (wc.wr_id != id || wc.byte_len != len)
		FAIL("wr %llu: got wr %llu status %s (%d) byte_len %u, expected %u", (unsigned long long)id,
		     (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.status, wc.byte_len, len);
	return 0;
}

static int post_recv(struct ibv_qp *q, uint64_t id, void *p, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(q, &wr, &bad);
}

static int post(struct ibv_qp *q, enum ibv_wr_opcode op, uint64_t id, void *p, uint32_t lkey, uint64_t raddr,
		uint32_t rkey, struct ibv_ah *ah, uint32_t rqpn)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p, .length = MSG, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ah) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = rqpn;
		wr.wr.ud.remote_qkey = 0x11111111;
	}
	return ibv_post_send(q, &wr, &bad);
}

static void pattern(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

/* The bytes at `p` are pattern `seed`. */
static int same(const uint8_t *p, size_t n, unsigned int seed, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 7 + seed))
			FAIL("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, p[i], (uint8_t)(i * 7 + seed));
	return 0;
}

/* `from` SENDs MSG bytes of pattern `seed` into a receive on `to`. */
static int send_one(struct ibv_qp *from, struct ibv_qp *to, struct ibv_cq *cq, uint32_t lkey, unsigned int seed,
		    struct ibv_ah *ah)
{
	uint32_t grh = ah ? 40 : 0;

	pattern(buf, MSG, seed);
	memset(buf + MSG, 0, MSG + grh);
	VERB0("ibv_post_recv", post_recv(to, 1, buf + MSG, MSG + grh, lkey));
	VERB0("ibv_post_send", post(from, IBV_WR_SEND, 2, buf, lkey, 0, 0, ah, to->qp_num));
	/* One CQ for both: the send completes first on RC and UC (its
	 * receive completes in the doorbell, before the requester's), either
	 * way round on UD; take both in whichever order. */
	struct ibv_wc wc[2];
	long end = now_ms() + WAIT_MS;
	int got = 0;

	while (got < 2) {
		int n = ibv_poll_cq(cq, 2 - got, wc + got);

		if (n < 0)
			FAIL("ibv_poll_cq: %d", n);
		/* A failed send leaves its receive posted: stop at once. */
		for (int i = got; i < got + n; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				return wc_failed(&wc[i], "SEND");
		got += n;
		if (got < 2 && now_ms() > end)
			FAIL("SEND of seed %u: %d of 2 completions in %d ms", seed, got, WAIT_MS);
		if (got < 2)
			usleep(50);
	}
	for (int i = 0; i < 2; i++) {
		uint32_t want = wc[i].wr_id == 1 ? MSG + grh : MSG;

		if (wc[i].wr_id == 1 && wc[i].byte_len != want)
			FAIL("SEND of seed %u: received %u bytes, expected %u", seed, wc[i].byte_len, want);
	}
	return same(buf + MSG + grh, MSG, seed, "received SEND");
}

/* `q` READs MSG bytes of pattern `seed` from the buffer's third quarter. */
static int read_one(struct ibv_qp *q, struct ibv_cq *cq, struct ibv_mr *mr, unsigned int seed)
{
	pattern(buf + 2 * MSG, MSG, seed);
	memset(buf + 3 * MSG, 0, MSG);
	VERB0("ibv_post_send", post(q, IBV_WR_RDMA_READ, 3, buf + 3 * MSG, mr->lkey, (uintptr_t)(buf + 2 * MSG),
				    mr->rkey, NULL, 0));
	int r = expect(cq, 3, MSG);

	return r ?: same(buf + 3 * MSG, MSG, seed, "RDMA READ");
}

/* ---- rounds ---- */

static struct ibv_qp *qp(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = t,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &a);
}

static int ud_ready(struct ibv_qp *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111 };

	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return errno;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE))
		return errno;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ? errno : 0;
}

/* rrxe_connect's result as a verb's: 0 or an errno. */
static int link_qp(struct ibv_qp *q, uint32_t peer)
{
	int access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;

	errno = 0;
	if (rrxe_connect(q, peer, &gid, gidx, IBV_MTU_4096, access, 100))
		return errno ? errno : EIO;
	return 0;
}

static uint64_t dm_left;

/* One round; 0, -1 when a verb failed (failed_verb says which), 1 on
 * another failure. */
static int round_(unsigned int n)
{
	struct ibv_pd *pd = VERB("ibv_alloc_pd", ibv_alloc_pd(ctx));
	struct ibv_cq *cq = VERB("ibv_create_cq", ibv_create_cq(ctx, 4, NULL, NULL, 0));
	struct ibv_qp *ra = VERB("ibv_create_qp RC", qp(pd, cq, IBV_QPT_RC));
	struct ibv_qp *rb = VERB("ibv_create_qp RC", qp(pd, cq, IBV_QPT_RC));
	struct ibv_qp *ua = VERB("ibv_create_qp UC", qp(pd, cq, IBV_QPT_UC));
	struct ibv_qp *ub = VERB("ibv_create_qp UC", qp(pd, cq, IBV_QPT_UC));
	struct ibv_qp *ud = VERB("ibv_create_qp UD", qp(pd, cq, IBV_QPT_UD));
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_MW_BIND;
	struct ibv_mr *mr = VERB("ibv_reg_mr", ibv_reg_mr(pd, buf, 4 * MSG, access));
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .dgid = gid, .sgid_index = gidx, .hop_limit = 64 } };
	struct ibv_ah *ah;
	int r;

	VERB("ibv_alloc_mw", ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	VERB0("modify_qp RC", link_qp(ra, rb->qp_num));
	VERB0("modify_qp RC", link_qp(rb, ra->qp_num));
	VERB0("modify_qp UC", link_qp(ua, ub->qp_num));
	VERB0("modify_qp UC", link_qp(ub, ua->qp_num));
	VERB0("modify_qp UD", ud_ready(ud));
	ah = VERB("ibv_create_ah", ibv_create_ah(pd, &aa));
	r = send_one(ra, rb, cq, mr->lkey, n, NULL);
	r = r ?: send_one(rb, ra, cq, mr->lkey, n + 1, NULL);
	r = r ?: read_one(ra, cq, mr, n + 2);
	r = r ?: read_one(rb, cq, mr, n + 3);
	r = r ?: send_one(ua, ub, cq, mr->lkey, n + 4, NULL);
	r = r ?: send_one(ud, ud, cq, mr->lkey, n + 5, ah);
	if (r)
		return r;
	if (dm_left >= DM_CHUNK) {
		r = dm_round(pd);
		if (r)
			return r;
		dm_left -= DM_CHUNK;
	}
	return 0;
}

/* Heap for libibverbs' own allocations, touched and kept: glibc trims
 * nothing and maps nothing on its own. */
static int reserve_heap(void)
{
	void *p;

	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	mallopt(M_MMAP_THRESHOLD, 1 << 30);
	mallopt(M_TOP_PAD, 0);
	p = malloc(RESERVE);
	if (!p)
		FAIL("malloc of the reserve failed");
	memset(p, 1, RESERVE);
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex dx;
	unsigned int n;
	char c;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DEV\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (reserve_heap())
		return 1;
	buf = aligned_alloc(4096, 4 * MSG);
	if (!buf)
		FAIL("no buffer");
	memset(buf, 0, 4 * MSG);
	ctx = rrxe_open(argv[1]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	gidx = rrxe_ipv4_gid(ctx, &gid);
	if (gidx < 0)
		FAIL("no IPv4 GID");
	if (ibv_query_device_ex(ctx, NULL, &dx))
		FAIL("ibv_query_device_ex failed");
	dm_left = dx.max_dm_size;
	if (mlockall(MCL_CURRENT))
		FAIL("mlockall: %s", strerror(errno));
	for (n = 0; n < MAX_ROUNDS; n++) {
		int r = round_(n);

		if (r > 0)
			FAIL("round %u failed", n);
		if (r < 0)
			break;
		if (n % 200 == 0)
			fprintf(stderr, "round %u\n", n);
	}
	if (!failed_verb)
		FAIL("%u rounds and no verb failed", n);
	printf("failed %s %s after %u rounds, %llu bytes of DM, %zu KiB of heap in use\n", failed_verb,
	       failed_wc ? failed_wc : strerrorname_np(failed_err), n,
	       (unsigned long long)(dx.max_dm_size - dm_left), mallinfo2().uordblks >> 10);
	printf("holding\n");
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
