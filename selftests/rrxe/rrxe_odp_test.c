// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_odp_test DEV MODE: on-demand paging (IBV_ACCESS_ON_DEMAND MRs)
 * between two RC QPs of one device, connected in loopback through the
 * device's IPv4-mapped GID. Every buffer is an anonymous mapping whose
 * pages are dropped with madvise(MADV_DONTNEED) between messages, as
 * rdma-core's test_odp does: an ODP MR must reach the process's current
 * pages, not the ones it had at registration. Data is compared byte for
 * byte. Needs rdma-core 59's libibverbs (ibv_advise_mr reaches the kernel
 * through librxe from rdma-core 57 on). Prints what went wrong and exits
 * non-zero on failure, 0 on success.
 *
 *   write    RDMA WRITE (from a DONTNEED'd, refilled ODP source) into a
 *            DONTNEED'd ODP target, 8 rounds of 3 pages at an odd offset
 *   read     RDMA READ from a DONTNEED'd, refilled ODP source into a
 *            DONTNEED'd ODP target
 *   send     SEND gathered from an ODP MR into a receive on an ODP MR,
 *            both DONTNEED'd
 *   atomic   FETCH_AND_ADD and CMP_AND_SWP on a DONTNEED'd, reset ODP
 *            word, the original value returned into a DONTNEED'd ODP MR
 *   advise   ibv_advise_mr PREFETCH, PREFETCH_WRITE and PREFETCH_NO_FAULT,
 *            with and without IBV_ADVISE_MR_FLAG_FLUSH, return 0 (and a
 *            WRITE after them lands); a bad lkey fails EINVAL
 *   gone     an ODP MR registered by a child process (through the shared
 *            context) whose address space is gone when an RDMA WRITE
 *            reaches it: the WRITE fails with a remote access error
 *   stall    an ODP MR over memory whose page faults wait until released
 *            (/dev/rrxe_stall of the rrxe_stall_test module, a stand-in
 *            for a file system whose server stopped answering): an RDMA
 *            WRITE and a FETCH_AND_ADD into it reach the stalled fault,
 *            and an RDMA READ of it is posted from a third QP;
 *            meanwhile 16 SENDs between two other QPs of the device
 *            must each complete within STALL_MS, a stalled fault holding
 *            up only its own QP. Released, the WRITE and the atomic
 *            complete, their data in the memory, and the READ (sent
 *            again by its requester) completes with the memory's bytes.
 *   stall_hold  the WRITE of `stall`, then "stalled" on stdout once its
 *            fault is reached, and a wait to be killed (the caller deletes
 *            the device meanwhile)
 *   stall_more  the rest of the stalled memory's encounters: a UD datagram
 *            and a UC WRITE into it, an RC READ and a FETCH_AND_ADD whose
 *            local results go to it, and an RC, a UD and a UC SEND
 *            gathered from it. The
 *            doorbells return at once, 16 SENDs between another pair
 *            complete meanwhile, and odp_fault_deferred counts. Released,
 *            the SENDs and the RC operations complete with the right
 *            bytes; the UD
 *            datagram and the UC WRITE were dropped (the UD receive WQE
 *            kept), and a second datagram and WRITE land.
 *   stall_send_hold  an RC SEND gathered from stalled memory, then
 *            "stalled" and a wait to be killed, as stall_hold
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rrxe_test.h"

#define LEN (3 * 4096 + 1000)	/* crosses pages; the MR starts at OFF */
#define OFF 100
#define MAP (4 * 4096 + 4096)
#define ROUNDS 8
#define WAIT_MS 10000
#define STALL_MS 2000
#define STALL_PARAMS "/sys/module/rrxe_stall_test/parameters/"

#define ODP (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qa, *qb;	/* qa posts, qb answers */
static union ibv_gid gid;
static int gid_index;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* The next completion must be `id` with status `st`. */
static int expect(const char *what, uint64_t id, enum ibv_wc_status st)
{
	long end = now_ms() + WAIT_MS;
	struct ibv_wc wc;
	int n;

	while (!(n = ibv_poll_cq(cq, 1, &wc))) {
		if (now_ms() > end)
			FAIL("%s: no completion within %d ms", what, WAIT_MS);
		usleep(100);
	}
	if (n < 0)
		FAIL("%s: ibv_poll_cq failed", what);
	if (wc.wr_id != id || wc.status != st)
		FAIL("%s: completion wr_id %llu status %s; expected wr_id %llu status %s", what,
		     (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
		     (unsigned long long)id, ibv_wc_status_str(st));
	return 0;
}

/* Connects `q` to QP `peer`, with `timeout` as its local ACK timeout. */
static int connect_qp_timeout(struct ibv_qp *q, uint32_t peer, uint8_t timeout)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC };
	int ret;

	ret = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		FAIL("QP to INIT: %s", strerror(ret));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	ret = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		FAIL("QP to RTR: %s", strerror(ret));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	ret = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		FAIL("QP to RTS: %s", strerror(ret));
	return 0;
}

static int connect_qp(struct ibv_qp *q, uint32_t peer)
{
	return connect_qp_timeout(q, peer, 14);
}

static int setup(const char *dev)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 2, .max_recv_sge = 2 } };
	struct ibv_device_attr_ex dx;

	ctx = rrxe_open(dev);
	if (!ctx)
		FAIL("cannot open %s", dev);
	if (ibv_query_device_ex(ctx, NULL, &dx))
		FAIL("ibv_query_device_ex failed");
	if (!(dx.odp_caps.general_caps & IBV_ODP_SUPPORT) ||
	    !(dx.odp_caps.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_WRITE))
		FAIL("the device reports no RC ODP");
	gid_index = rrxe_ipv4_gid(ctx, &gid);
	if (gid_index < 0)
		FAIL("no IPv4 GID");
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	if (!cq)
		FAIL("PD or CQ creation failed");
	ia.send_cq = ia.recv_cq = cq;
	qa = ibv_create_qp(pd, &ia);
	qb = ibv_create_qp(pd, &ia);
	if (!qa || !qb)
		FAIL("QP creation failed");
	if (connect_qp(qa, qb->qp_num) || connect_qp(qb, qa->qp_num))
		return 1;
	return 0;
}

/* A fresh anonymous mapping and an ODP MR over LEN bytes at OFF in it. */
static struct ibv_mr *odp_buf(uint8_t **p)
{
	uint8_t *m = mmap(NULL, MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	*p = m + OFF;
	return ibv_reg_mr(pd, *p, LEN, ODP);
}

/* Drops the pages under an ODP buffer: the next touch maps new ones. */
static int drop(uint8_t *p)
{
	uint8_t *m = p - OFF;

	if (madvise(m, MAP, MADV_DONTNEED))
		FAIL("madvise: %s", strerror(errno));
	return 0;
}

static void pattern(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed * 97 + (i >> 8) + 1);
}

static int same(const char *what, const uint8_t *got, const uint8_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i])
			FAIL("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, got[i], want[i]);
	return 0;
}

static int post_rdma(enum ibv_wr_opcode op, struct ibv_mr *l, void *laddr, uint32_t len,
		     struct ibv_mr *r, void *raddr, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)laddr, .length = len, .lkey = l->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = r->rkey;
	return ibv_post_send(qa, &wr, &bad);
}

static int t_write(void)
{
	uint8_t *src, *dst, want[LEN];
	struct ibv_mr *smr = odp_buf(&src), *dmr = odp_buf(&dst);

	if (!smr || !dmr)
		FAIL("ODP registration failed: %s", strerror(errno));
	for (unsigned int i = 0; i < ROUNDS; i++) {
		memset(dst, 0xee, LEN);
		if (drop(dst) || drop(src))
			return 1;
		pattern(src, LEN, i);
		memcpy(want, src, LEN);
		if (post_rdma(IBV_WR_RDMA_WRITE, smr, src, LEN, dmr, dst, i))
			FAIL("post WRITE failed");
		if (expect("WRITE", i, IBV_WC_SUCCESS) || same("WRITE target", dst, want, LEN))
			return 1;
	}
	return 0;
}

static int t_read(void)
{
	uint8_t *src, *dst, want[LEN];
	struct ibv_mr *smr = odp_buf(&src), *dmr = odp_buf(&dst);

	if (!smr || !dmr)
		FAIL("ODP registration failed: %s", strerror(errno));
	for (unsigned int i = 0; i < ROUNDS; i++) {
		memset(dst, 0xee, LEN);
		memset(src, 0x55, LEN);
		if (drop(dst) || drop(src))
			return 1;
		pattern(src, LEN, i + 100);
		memcpy(want, src, LEN);
		if (post_rdma(IBV_WR_RDMA_READ, dmr, dst, LEN, smr, src, i))
			FAIL("post READ failed");
		if (expect("READ", i, IBV_WC_SUCCESS) || same("READ target", dst, want, LEN))
			return 1;
	}
	return 0;
}

static int t_send(void)
{
	uint8_t *src, *dst, want[LEN];
	struct ibv_mr *smr = odp_buf(&src), *dmr = odp_buf(&dst);

	if (!smr || !dmr)
		FAIL("ODP registration failed: %s", strerror(errno));
	for (unsigned int i = 0; i < ROUNDS; i++) {
		struct ibv_sge rs = { .addr = (uintptr_t)dst, .length = LEN, .lkey = dmr->lkey };
		struct ibv_sge ss = { .addr = (uintptr_t)src, .length = LEN, .lkey = smr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 1000 + i, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_send_wr swr = { .wr_id = i, .sg_list = &ss, .num_sge = 1,
					   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad;

		memset(dst, 0xee, LEN);
		if (drop(dst) || drop(src))
			return 1;
		pattern(src, LEN, i + 200);
		memcpy(want, src, LEN);
		if (ibv_post_recv(qb, &rwr, &rbad) || ibv_post_send(qa, &swr, &sbad))
			FAIL("post failed");
		/* Both complete on the one CQ, in either order. */
		for (int k = 0; k < 2; k++) {
			struct ibv_wc wc;
			long end = now_ms() + WAIT_MS;
			int n;

			while (!(n = ibv_poll_cq(cq, 1, &wc)) && now_ms() < end)
				usleep(100);
			if (n <= 0 || wc.status != IBV_WC_SUCCESS ||
			    (wc.wr_id != i && wc.wr_id != 1000 + i))
				FAIL("SEND round %u: %s completion (%d)", i,
				     n > 0 ? ibv_wc_status_str(wc.status) : "no", n);
		}
		if (same("SEND target", dst, want, LEN))
			return 1;
	}
	return 0;
}

static int post_atomic(enum ibv_wr_opcode op, struct ibv_mr *l, void *laddr, struct ibv_mr *r,
		       void *raddr, uint64_t cmp_add, uint64_t swap, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)laddr, .length = 8, .lkey = l->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.atomic.remote_addr = (uintptr_t)raddr;
	wr.wr.atomic.rkey = r->rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(qa, &wr, &bad);
}

static int t_atomic(void)
{
	uint8_t *res, *tgt;
	struct ibv_mr *rmr = odp_buf(&res), *tmr = odp_buf(&tgt);
	uint64_t *word, *orig;

	if (!rmr || !tmr)
		FAIL("ODP registration failed: %s", strerror(errno));
	word = (uint64_t *)(tgt + 4096 - OFF);	/* 8-aligned, in the second page */
	orig = (uint64_t *)(res + 4096 - OFF + 8);
	for (unsigned int i = 0; i < ROUNDS; i++) {
		uint64_t v = 1000 * (i + 1);

		*word = 7;
		*orig = 1;
		if (drop(tgt) || drop(res))
			return 1;
		*word = v;
		if (post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, rmr, orig, tmr, word, 5, 0, i))
			FAIL("post FETCH_AND_ADD failed");
		if (expect("FETCH_AND_ADD", i, IBV_WC_SUCCESS))
			return 1;
		if (*orig != v || *word != v + 5)
			FAIL("FETCH_AND_ADD round %u: original %llu, word %llu; expected %llu, %llu", i,
			     (unsigned long long)*orig, (unsigned long long)*word,
			     (unsigned long long)v, (unsigned long long)v + 5);
		if (drop(res))
			return 1;
		if (post_atomic(IBV_WR_ATOMIC_CMP_AND_SWP, rmr, orig, tmr, word, v + 5, 42, 100 + i))
			FAIL("post CMP_AND_SWP failed");
		if (expect("CMP_AND_SWP", 100 + i, IBV_WC_SUCCESS))
			return 1;
		if (*orig != v + 5 || *word != 42)
			FAIL("CMP_AND_SWP round %u: original %llu, word %llu; expected %llu, 42", i,
			     (unsigned long long)*orig, (unsigned long long)*word,
			     (unsigned long long)v + 5);
	}
	return 0;
}

static int t_advise(void)
{
	static const struct {
		enum ibv_advise_mr_advice advice;
		const char *name;
	} adv[] = {
		{ IBV_ADVISE_MR_ADVICE_PREFETCH, "PREFETCH" },
		{ IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, "PREFETCH_WRITE" },
		{ IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, "PREFETCH_NO_FAULT" },
	};
	uint8_t *src, *dst, want[LEN];
	struct ibv_mr *smr = odp_buf(&src), *dmr = odp_buf(&dst);
	unsigned int round = 0;
	int ret;

	if (!smr || !dmr)
		FAIL("ODP registration failed: %s", strerror(errno));
	for (unsigned int a = 0; a < sizeof(adv) / sizeof(adv[0]); a++) {
		for (uint32_t flags = 0; flags <= IBV_ADVISE_MR_FLAG_FLUSH; flags++, round++) {
			struct ibv_sge sg[2] = {
				{ .addr = (uintptr_t)dst, .length = LEN, .lkey = dmr->lkey },
				{ .addr = (uintptr_t)src + 10, .length = 20, .lkey = smr->lkey },
			};

			if (drop(dst))
				return 1;
			ret = ibv_advise_mr(pd, adv[a].advice, flags, sg, 2);
			if (ret)
				FAIL("ibv_advise_mr %s flags %u: %s", adv[a].name, flags, strerror(ret));
			pattern(src, LEN, round + 300);
			memcpy(want, src, LEN);
			if (post_rdma(IBV_WR_RDMA_WRITE, smr, src, LEN, dmr, dst, round))
				FAIL("post WRITE failed");
			if (expect("WRITE after advise", round, IBV_WC_SUCCESS) ||
			    same("WRITE after advise", dst, want, LEN))
				return 1;
		}
	}
	{
		struct ibv_sge bad = { .addr = (uintptr_t)dst, .length = 8, .lkey = rrxe_wrong_key(dmr->lkey) };

		ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
				    &bad, 1);
		if (ret != EINVAL)
			FAIL("ibv_advise_mr with a bad lkey: %s, expected EINVAL", strerror(ret));
	}
	return 0;
}

static int t_gone(void)
{
	uint8_t *src, *dst;
	struct ibv_mr *smr = odp_buf(&src);
	int fds[2], status;
	uint32_t rkey;
	pid_t pid;

	if (!smr || pipe(fds))
		FAIL("setup failed");
	dst = mmap(NULL, MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dst == MAP_FAILED)
		FAIL("mmap failed");
	pid = fork();
	if (pid < 0)
		FAIL("fork failed");
	if (!pid) {
		/* The child's mm owns this MR; the shared context keeps it. */
		struct ibv_mr *m = ibv_reg_mr(pd, dst, LEN, ODP);

		rkey = m ? m->rkey : 0;
		if (write(fds[1], &rkey, sizeof(rkey)) != sizeof(rkey))
			_exit(2);
		_exit(m ? 0 : 1);
	}
	if (rrxe_readall(fds[0], &rkey, sizeof(rkey)) || waitpid(pid, &status, 0) != pid)
		FAIL("child failed");
	if (!rkey)
		FAIL("the child's ODP registration failed");
	{
		struct ibv_mr r = { .rkey = rkey };

		pattern(src, LEN, 7);
		if (post_rdma(IBV_WR_RDMA_WRITE, smr, src, LEN, &r, dst, 1))
			FAIL("post WRITE failed");
	}
	return expect("WRITE into an exited process's ODP MR", 1, IBV_WC_REM_ACCESS_ERR);
}

/* A counter of the stall module, or -1. */
static long stall_count(const char *name)
{
	char path[128];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), STALL_PARAMS "%s", name);
	f = fopen(path, "r");
	if (f && fscanf(f, "%ld", &n) != 1)
		n = -1;
	if (f)
		fclose(f);
	return n;
}

/* Sets the stall module's `release` to `v`. */
static int stall_set(const char *v)
{
	FILE *f = fopen(STALL_PARAMS "release", "w");
	int r;

	if (!f)
		FAIL("open " STALL_PARAMS "release: %s", strerror(errno));
	r = fputs(v, f) < 0;
	if (fclose(f) || r)
		FAIL("set " STALL_PARAMS "release to %s: %s", v, strerror(errno));
	return 0;
}

static int stall_release(void)
{
	return stall_set("1");
}

/* Maps 4 pages of /dev/rrxe_stall and registers them on demand. */
static struct ibv_mr *stall_buf(uint8_t **p)
{
	int fd = open("/dev/rrxe_stall", O_RDWR);
	uint8_t *m;

	if (fd < 0)
		return NULL;
	m = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	*p = m;
	return ibv_reg_mr(pd, m, 4 * 4096, ODP);
}

/* Posts the WRITE of 4 KiB of `src` into the stalled memory, and waits
 * until its fault is reached. */
static int stall_write(struct ibv_mr *smr, uint8_t *src, struct ibv_mr *dmr, uint8_t *dst)
{
	long before = stall_count("waiting") + stall_count("nowait"), end = now_ms() + WAIT_MS;

	if (before < 0)
		FAIL("no " STALL_PARAMS ": load rrxe_stall_test");
	pattern(src, 4096, 5);
	if (post_rdma(IBV_WR_RDMA_WRITE, smr, src, 4096, dmr, dst, 1))
		FAIL("post the WRITE into the stalled memory");
	if (now_ms() > end - WAIT_MS + STALL_MS)
		FAIL("ibv_post_send of the WRITE into the stalled memory took %ld ms: the doorbell waited for the fault",
		     now_ms() - (end - WAIT_MS));
	while (stall_count("waiting") + stall_count("nowait") == before)
		if (now_ms() > end)
			FAIL("the WRITE never reached the stalled memory's fault");
		else
			usleep(1000);
	return 0;
}

/* 16 SENDs of 512 bytes from `qs` to `qr` (both on `c`), through `buf`
 * (the send at `buf`, the receive at `buf` + 4096, in `mr`), each of
 * which must complete, its bytes in place, within STALL_MS while faults
 * on stalled memory are pending elsewhere on the device. */
static int others_go_on(const char *pair, struct ibv_qp *qs, struct ibv_qp *qr, struct ibv_cq *c,
			uint8_t *buf, struct ibv_mr *mr)
{
	struct ibv_wc wc;
	int n;

	for (int i = 0; i < 16; i++) {
		struct ibv_sge rs = { (uintptr_t)buf + 4096, 4096, mr->lkey };
		struct ibv_sge ss = { (uintptr_t)buf, 512, mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 100 + i, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_send_wr sw = { .wr_id = 200 + i, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad;
		long end = now_ms() + STALL_MS;

		memset(buf, i + 1, 512);
		if (ibv_post_recv(qr, &rw, &rbad) || ibv_post_send(qs, &sw, &sbad))
			FAIL("post on %s", pair);
		for (int k = 0; k < 2;) {
			n = ibv_poll_cq(c, 1, &wc);
			if (n < 0)
				FAIL("poll %s's CQ", pair);
			if (n && wc.status != IBV_WC_SUCCESS)
				FAIL("SEND %d on %s: %s", i, pair, ibv_wc_status_str(wc.status));
			k += n;
			if (!n && now_ms() > end)
				FAIL("SEND %d between two other QPs did not complete within %d ms while faults on the stalled memory were pending (waiting: %ld): one stalled fault holds up the device",
				     i, STALL_MS, stall_count("waiting"));
		}
		if (buf[4096] != i + 1 || buf[4096 + 511] != i + 1)
			FAIL("SEND %d on %s: wrong data", i, pair);
	}
	return 0;
}

static int stall_run(void)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	uint8_t *dst, *src = malloc(4096 + 8), *buf = malloc(3 * 4096);
	struct ibv_mr *dmr = stall_buf(&dst), *smr, *bmr;
	struct ibv_cq *cq2 = ibv_create_cq(ctx, 64, NULL, NULL, 0), *cq3;
	struct ibv_qp *qc, *qd, *qe, *qf;
	struct ibv_wc wc;
	uint64_t got;
	int n = 0;

	if (!dmr || !src || !buf || !cq2)
		FAIL("the stalled memory's ODP MR, buffers or CQ: %s", strerror(errno));
	smr = ibv_reg_mr(pd, src, 4096 + 8, IBV_ACCESS_LOCAL_WRITE);
	bmr = ibv_reg_mr(pd, buf, 3 * 4096, IBV_ACCESS_LOCAL_WRITE);
	ia.send_cq = ia.recv_cq = cq2;
	qc = ibv_create_qp(pd, &ia);
	qd = ibv_create_qp(pd, &ia);
	if (!smr || !bmr || !qc || !qd || connect_qp(qc, qd->qp_num) || connect_qp(qd, qc->qp_num))
		FAIL("the second QP pair");
	if (stall_write(smr, src, dmr, dst) ||
	    post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, smr, src + 4096, dmr, dst + 8192, 7, 0, 2))
		return 1;
	/* A READ of the stalled memory from a third QP, whose requester asks
	 * again every second or so (timeout 18) until it gets an answer. */
	cq3 = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = cq3;
	qe = cq3 ? ibv_create_qp(pd, &ia) : NULL;
	qf = cq3 ? ibv_create_qp(pd, &ia) : NULL;
	if (!qe || !qf || connect_qp_timeout(qe, qf->qp_num, 18) || connect_qp(qf, qe->qp_num))
		FAIL("the third QP pair");
	memset(buf + 8192, 0xee, 4096);
	{
		struct ibv_sge rs = { (uintptr_t)buf + 8192, 4096, bmr->lkey };
		struct ibv_send_wr rw = { .wr_id = 3, .sg_list = &rs, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
					  .wr = { .rdma = { (uintptr_t)dst + 4096, dmr->rkey } } }, *rbad;
		long t0 = now_ms();

		if (ibv_post_send(qe, &rw, &rbad))
			FAIL("post the READ of the stalled memory");
		if (now_ms() - t0 > STALL_MS)
			FAIL("ibv_post_send of the READ of the stalled memory took %ld ms: the doorbell waited for the fault",
			     now_ms() - t0);
	}
	/* The other QPs of the device carry on meanwhile. */
	if (others_go_on("the second pair", qc, qd, cq2, buf, bmr))
		return 1;
	if (ibv_poll_cq(cq, 1, &wc))
		FAIL("the WRITE into the stalled memory completed (%s) before its fault was released",
		     ibv_wc_status_str(wc.status));
	if (stall_release() || expect("WRITE into the released memory", 1, IBV_WC_SUCCESS) ||
	    expect("FETCH_AND_ADD into the released memory", 2, IBV_WC_SUCCESS) ||
	    same("the released memory", dst, src, 4096))
		return 1;
	memcpy(&got, dst + 8192, 8);
	if (got != 7)
		FAIL("the FETCH_AND_ADD left %llu in the released memory, expected 7", (unsigned long long)got);
	{
		long end = now_ms() + WAIT_MS;

		while (!(n = ibv_poll_cq(cq3, 1, &wc)))
			if (now_ms() > end)
				FAIL("the READ of the released memory did not complete within %d ms", WAIT_MS);
			else
				usleep(1000);
		if (n < 0 || wc.wr_id != 3 || wc.status != IBV_WC_SUCCESS)
			FAIL("the READ of the released memory completed with %s", ibv_wc_status_str(wc.status));
		for (int i = 0; i < 4096; i++)
			if (buf[8192 + i] != dst[4096 + i])
				FAIL("the READ of the released memory: byte %d is 0x%02x, the memory has 0x%02x", i,
				     buf[8192 + i], dst[4096 + i]);
	}
	printf("stall: 16 SENDs of another QP pair completed while the fault waited; released, the WRITE and the atomic landed and the READ got the memory\n");
	return 0;
}

/* A UD QP of `c`, brought to RTS. */
static struct ibv_qp *ud_qp(struct ibv_cq *c)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD, .send_cq = c, .recv_cq = c,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *q = ibv_create_qp(pd, &ia);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111 };

	if (!q || ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return NULL;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE))
		return NULL;
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ? NULL : q;
}

/* Posts `wr` on `q`; fails if the doorbell took STALL_MS or more. */
static int post_quick(const char *what, struct ibv_qp *q, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	long t0 = now_ms();

	if (ibv_post_send(q, wr, &bad))
		FAIL("post the %s", what);
	if (now_ms() - t0 >= STALL_MS)
		FAIL("ibv_post_send of the %s took %ld ms: the doorbell waited for the stalled fault",
		     what, now_ms() - t0);
	return 0;
}

static const char *stall_dev;

/* A port counter of the device, or -1. */
static long hw_counter(const char *dev, const char *name)
{
	return (long)rrxe_hw_counter(dev, name);
}

/* Waits until `n` more faults than `before` reached the stalled memory;
 * if none does, says what the device's drop counters show. */
static int stall_reached(const char *what, long before, long n)
{
	static const char *const drops[] = { "rcvd_pkts", "rcvd_unknown_qp", "rcvd_qkey_err",
					     "rcvd_hdr_err", "out_of_buffer", "send_err" };
	long end = now_ms() + WAIT_MS;

	while (stall_count("waiting") + stall_count("nowait") < before + n)
		if (now_ms() > end) {
			for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
				fprintf(stderr, "%s %ld\n", drops[i], hw_counter(stall_dev, drops[i]));
			FAIL("%s never reached the stalled memory's fault", what);
		} else {
			usleep(1000);
		}
	return 0;
}

/* The next completion on `c` within WAIT_MS must be `id` with `st`. */
static int expect_on(struct ibv_cq *c, const char *what, uint64_t id, enum ibv_wc_status st)
{
	struct ibv_cq *keep = cq;
	int r;

	cq = c;
	r = expect(what, id, st);
	cq = keep;
	return r;
}

/*
 * The other places a stalled fault can be met: a UD datagram and a UC
 * WRITE into stalled memory, an RC READ and an atomic whose local results
 * go to stalled memory, and an RC SEND gathered from it. Each doorbell
 * returns at once; 16 SENDs between another pair complete meanwhile.
 * UD and UC drop what they cannot place (UD keeps its receive WQE): once
 * released, a second datagram and a second WRITE land. The RC READ, atomic
 * and SEND complete with the right bytes once released.
 */
static int stall_more_run(void)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	uint8_t *sm, *sm2, *buf = malloc(8 * 4096);
	struct ibv_mr *smr = stall_buf(&sm), *smr2 = stall_buf(&sm2), *bmr;
	struct ibv_cq *cx = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *u3, *u4, *c3, *c4;
	struct ibv_cq *cs = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *cu = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *co = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *u1, *u2, *c1, *c2, *r1, *r2, *o1, *o2;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 } };
	struct ibv_ah *ah;
	long before, deferred;
	struct ibv_wc wc;
	uint64_t got;
	int n;

	if (!smr || !smr2 || !buf || !cs || !cu || !co || !cx)
		FAIL("the stalled memory's ODP MR, buffers or CQs: %s", strerror(errno));
	before = stall_count("waiting") + stall_count("nowait");
	if (before < 0)
		FAIL("no " STALL_PARAMS ": load rrxe_stall_test");
	deferred = hw_counter(stall_dev, "odp_fault_deferred");
	bmr = ibv_reg_mr(pd, buf, 8 * 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	u1 = ud_qp(cu);
	u2 = ud_qp(cu);
	ah = ibv_create_ah(pd, &aa);
	ia.qp_type = IBV_QPT_UC;
	ia.send_cq = ia.recv_cq = cu;
	c1 = ibv_create_qp(pd, &ia);
	c2 = ibv_create_qp(pd, &ia);
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = ia.recv_cq = cs;
	r1 = ibv_create_qp(pd, &ia);
	r2 = ibv_create_qp(pd, &ia);
	ia.send_cq = ia.recv_cq = co;
	o1 = ibv_create_qp(pd, &ia);
	o2 = ibv_create_qp(pd, &ia);
	ia.qp_type = IBV_QPT_UC;
	ia.send_cq = ia.recv_cq = cx;
	c3 = ibv_create_qp(pd, &ia);
	c4 = ibv_create_qp(pd, &ia);
	u3 = ud_qp(cx);
	u4 = ud_qp(cx);
	if (!c3 || !c4 || !u3 || !u4 ||
	    rrxe_connect(c3, c4->qp_num, &gid, gid_index, IBV_MTU_1024, 0, 0) ||
	    rrxe_connect(c4, c3->qp_num, &gid, gid_index, IBV_MTU_1024, 0, 0))
		FAIL("the UD and UC QPs that send from stalled memory");
	if (!bmr || !u1 || !u2 || !ah || !c1 || !c2 || !r1 || !r2 || !o1 || !o2 ||
	    rrxe_connect(c1, c2->qp_num, &gid, gid_index, IBV_MTU_1024, IBV_ACCESS_REMOTE_WRITE, 0) ||
	    rrxe_connect(c2, c1->qp_num, &gid, gid_index, IBV_MTU_1024, IBV_ACCESS_REMOTE_WRITE, 0) ||
	    connect_qp_timeout(r1, r2->qp_num, 18) || connect_qp(r2, r1->qp_num) ||
	    connect_qp(o1, o2->qp_num) || connect_qp(o2, o1->qp_num))
		FAIL("the QPs: %s", strerror(errno));
	pattern(buf, 8 * 4096, 9);
	memset(buf + 5 * 4096, 0xee, 4096);
	got = 5;
	memcpy(buf + 4 * 4096, &got, 8);
	{
		/* UD: a receive in the stalled page 0, and a datagram to it. */
		struct ibv_sge rs = { (uintptr_t)sm, 40 + 64, smr->lkey }, ss = { (uintptr_t)buf, 64, bmr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 20, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_send_wr sw = { .wr_id = 10, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED,
					  .wr = { .ud = { ah, u2->qp_num, 0x11111111 } } };

		if (ibv_post_recv(u2, &rw, &rbad) || post_quick("UD SEND into the stalled memory", u1, &sw) ||
		    stall_reached("the UD SEND", before, 1) ||
		    expect_on(cu, "the UD SEND into the stalled memory", 10, IBV_WC_SUCCESS))
			return 1;
	}
	{
		/* UC: a WRITE into the stalled page 1. */
		struct ibv_sge ss = { (uintptr_t)buf + 4096, 512, bmr->lkey };
		struct ibv_send_wr sw = { .wr_id = 11, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
					  .wr = { .rdma = { (uintptr_t)sm + 4096, smr->rkey } } };

		before = stall_count("waiting") + stall_count("nowait");
		if (post_quick("UC WRITE into the stalled memory", c1, &sw) ||
		    stall_reached("the UC WRITE", before, 1) ||
		    expect_on(cu, "the UC WRITE into the stalled memory", 11, IBV_WC_SUCCESS))
			return 1;
	}
	{
		/* RC: a READ into the stalled page 2, a FETCH_AND_ADD whose
		 * original value goes there too, and (another QP) a SEND
		 * gathered from the stalled page 3. */
		struct ibv_sge rd = { (uintptr_t)sm + 8192, 2048, smr->lkey };
		struct ibv_sge at = { (uintptr_t)sm + 8192 + 3000, 8, smr->lkey };
		struct ibv_send_wr aw = { .wr_id = 13, .sg_list = &at, .num_sge = 1,
					  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .send_flags = IBV_SEND_SIGNALED,
					  .wr = { .atomic = { .remote_addr = (uintptr_t)buf + 4 * 4096,
							      .compare_add = 9, .rkey = bmr->rkey } } };
		struct ibv_send_wr rw = { .wr_id = 12, .sg_list = &rd, .num_sge = 1, .next = &aw,
					  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
					  .wr = { .rdma = { (uintptr_t)buf + 1024, bmr->rkey } } };
		struct ibv_sge ss = { (uintptr_t)sm + 3 * 4096, 4096, smr->lkey };
		struct ibv_sge rs = { (uintptr_t)buf + 5 * 4096, 4096, bmr->lkey };
		struct ibv_send_wr sw = { .wr_id = 14, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
		struct ibv_recv_wr rr = { .wr_id = 15, .sg_list = &rs, .num_sge = 1 }, *rbad;

		before = stall_count("waiting") + stall_count("nowait");
		if (post_quick("RC READ and FETCH_AND_ADD into the stalled memory", r1, &rw) ||
		    stall_reached("the RC READ's response", before, 1))
			return 1;
		before = stall_count("waiting") + stall_count("nowait");
		if (ibv_post_recv(o2, &rr, &rbad) ||
		    post_quick("RC SEND gathered from the stalled memory", o1, &sw) ||
		    stall_reached("the RC SEND's gather", before, 1))
			return 1;
	}
	{
		/* A UD and a UC SEND gathered from a second stalled mapping,
		 * into receives in ordinary memory. */
		struct ibv_sge us = { (uintptr_t)sm2, 64, smr2->lkey }, cs = { (uintptr_t)sm2 + 4096, 512, smr2->lkey };
		struct ibv_sge ur = { (uintptr_t)buf + 3 * 4096, 40 + 64, bmr->lkey };
		struct ibv_sge cr = { (uintptr_t)buf + 3 * 4096 + 1024, 512, bmr->lkey };
		struct ibv_recv_wr urw = { .wr_id = 31, .sg_list = &ur, .num_sge = 1 };
		struct ibv_recv_wr crw = { .wr_id = 33, .sg_list = &cr, .num_sge = 1 }, *rbad;
		struct ibv_send_wr usw = { .wr_id = 30, .sg_list = &us, .num_sge = 1, .opcode = IBV_WR_SEND,
					   .send_flags = IBV_SEND_SIGNALED,
					   .wr = { .ud = { ah, u4->qp_num, 0x11111111 } } };
		struct ibv_send_wr csw = { .wr_id = 32, .sg_list = &cs, .num_sge = 1, .opcode = IBV_WR_SEND,
					   .send_flags = IBV_SEND_SIGNALED };

		memset(buf + 3 * 4096, 0xee, 4096);
		before = stall_count("waiting") + stall_count("nowait");
		if (ibv_post_recv(u4, &urw, &rbad) || ibv_post_recv(c4, &crw, &rbad) ||
		    post_quick("UD SEND gathered from the stalled memory", u3, &usw) ||
		    post_quick("UC SEND gathered from the stalled memory", c3, &csw) ||
		    stall_reached("the UD and UC SENDs' gathers", before, 2))
			return 1;
	}
	/* The other QPs of the device carry on meanwhile. */
	if (others_go_on("the first pair", qa, qb, cq, buf + 6 * 4096, bmr))
		return 1;
	if ((n = ibv_poll_cq(cs, 1, &wc)) || (n = ibv_poll_cq(co, 1, &wc)) || (n = ibv_poll_cq(cu, 1, &wc)) ||
	    (n = ibv_poll_cq(cx, 1, &wc)))
		FAIL("wr_id %llu completed (%s) before the stalled faults were released",
		     (unsigned long long)wc.wr_id, n > 0 ? ibv_wc_status_str(wc.status) : "poll failed");
	/* The port counters are read through ib_core's cache (a lifespan of
	 * 10 ms): the count may show a little later. */
	for (long end = now_ms() + WAIT_MS;
	     hw_counter(stall_dev, "odp_fault_deferred") <= deferred && now_ms() < end;)
		usleep(10000);
	if (hw_counter(stall_dev, "odp_fault_deferred") <= deferred)
		FAIL("odp_fault_deferred did not count what waited for the stalled memory (%ld, was %ld)",
		     hw_counter(stall_dev, "odp_fault_deferred"), deferred);
	if (stall_release())
		return 1;
	/* RC: each completes, its data in place. */
	if (expect_on(cs, "the READ into the released memory", 12, IBV_WC_SUCCESS) ||
	    expect_on(cs, "the FETCH_AND_ADD into the released memory", 13, IBV_WC_SUCCESS) ||
	    same("the READ into the released memory", sm + 8192, buf + 1024, 2048))
		return 1;
	memcpy(&got, sm + 8192 + 3000, 8);
	if (got != 5)
		FAIL("the FETCH_AND_ADD's original value in the released memory is %llu, expected 5",
		     (unsigned long long)got);
	memcpy(&got, buf + 4 * 4096, 8);
	if (got != 14)
		FAIL("the FETCH_AND_ADD left %llu, expected 14", (unsigned long long)got);
	for (int k = 0; k < 2; k++) {
		long end = now_ms() + WAIT_MS;

		while (!(n = ibv_poll_cq(co, 1, &wc)) && now_ms() < end)
			usleep(1000);
		if (n <= 0 || wc.status != IBV_WC_SUCCESS || (wc.wr_id != 14 && wc.wr_id != 15))
			FAIL("the SEND from the released memory: %s completion",
			     n > 0 ? ibv_wc_status_str(wc.status) : "no");
	}
	if (same("the SEND from the released memory", buf + 5 * 4096, sm + 3 * 4096, 4096))
		return 1;
	/* The UD and UC SENDs go once their memory is in. */
	for (int k = 0; k < 4; k++) {
		long end = now_ms() + WAIT_MS;

		while (!(n = ibv_poll_cq(cx, 1, &wc)) && now_ms() < end)
			usleep(1000);
		if (n <= 0 || wc.status != IBV_WC_SUCCESS || wc.wr_id < 30 || wc.wr_id > 33)
			FAIL("the UD and UC SENDs from the released memory: %s completion (%d of 4)",
			     n > 0 ? ibv_wc_status_str(wc.status) : "no", k);
	}
	if (same("the UD SEND from the released memory", buf + 3 * 4096 + 40, sm2, 64) ||
	    same("the UC SEND from the released memory", buf + 3 * 4096 + 1024, sm2 + 4096, 512))
		return 1;
	{
		/* UD: the datagram was dropped; its receive WQE is still there,
		 * and the next datagram lands in it. */
		struct ibv_sge ss = { (uintptr_t)buf + 64, 64, bmr->lkey };
		struct ibv_send_wr sw = { .wr_id = 16, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED,
					  .wr = { .ud = { ah, u2->qp_num, 0x11111111 } } };
		struct ibv_wc w[2];
		long end = now_ms() + WAIT_MS;
		int k = 0;

		if (post_quick("UD SEND into the released memory", u1, &sw))
			return 1;
		while (k < 2 && now_ms() < end)
			if ((n = ibv_poll_cq(cu, 2 - k, w + k)) > 0)
				k += n;
			else
				usleep(1000);
		for (int j = 0; j < k; j++)
			if (w[j].status != IBV_WC_SUCCESS || (w[j].wr_id != 16 && w[j].wr_id != 20))
				FAIL("UD after the release: wr_id %llu %s", (unsigned long long)w[j].wr_id,
				     ibv_wc_status_str(w[j].status));
		if (k != 2)
			FAIL("UD after the release: %d of 2 completions (the send and the receive kept from the dropped datagram)", k);
		if (same("the datagram in the released memory", sm + 40, buf + 64, 64))
			return 1;
	}
	{
		/* UC: the WRITE was dropped; a second one lands. */
		struct ibv_sge ss = { (uintptr_t)buf + 4096 + 512, 512, bmr->lkey };
		struct ibv_send_wr sw = { .wr_id = 17, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
					  .wr = { .rdma = { (uintptr_t)sm + 4096, smr->rkey } } };
		long end = now_ms() + WAIT_MS;

		if (post_quick("UC WRITE into the released memory", c1, &sw) ||
		    expect_on(cu, "the UC WRITE into the released memory", 17, IBV_WC_SUCCESS))
			return 1;
		while (memcmp(sm + 4096, buf + 4096 + 512, 512) && now_ms() < end)
			usleep(1000);
		if (same("the UC WRITE into the released memory", sm + 4096, buf + 4096 + 512, 512))
			return 1;
	}
	printf("stall_more: UD, UC, an RC READ, an atomic and an RC SEND met the stalled memory; the doorbells returned, another pair went on, and after the release each landed\n");
	return 0;
}

/* Whatever happens, the faults are released: by this process when the
 * run ends, or by a watchdog process STALL_WATCHDOG_S seconds in, should
 * this one be stuck in the kernel behind the stalled fault (an exit that
 * has to wait for the fault would not end either). */
#define STALL_WATCHDOG_S 60

static int t_stall(void)
{
	pid_t dog = fork();
	int r;

	if (dog < 0)
		FAIL("fork: %s", strerror(errno));
	if (!dog) {
		sleep(STALL_WATCHDOG_S);
		fprintf(stderr, "stall: the watchdog released the faults after %d s\n", STALL_WATCHDOG_S);
		_exit(stall_release());
	}
	r = stall_run();
	kill(dog, SIGKILL);
	waitpid(dog, NULL, 0);
	return stall_release() || r;
}

static int t_stall_more(void)
{
	pid_t dog = fork();
	int r;

	if (dog < 0)
		FAIL("fork: %s", strerror(errno));
	if (!dog) {
		sleep(STALL_WATCHDOG_S);
		fprintf(stderr, "stall_more: the watchdog released the faults after %d s\n", STALL_WATCHDOG_S);
		_exit(stall_release());
	}
	r = stall_set("0") || stall_more_run();
	kill(dog, SIGKILL);
	waitpid(dog, NULL, 0);
	return stall_release() || r;
}

/* An RC SEND gathered from stalled memory, then "stalled" on stdout once
 * its fault is reached, and a wait to be killed. */
static int t_stall_send_hold(void)
{
	uint8_t *sm, *dst = malloc(4096);
	struct ibv_mr *smr = stall_buf(&sm), *dmr;
	struct ibv_sge ss, rs;
	struct ibv_send_wr sw = { .wr_id = 1, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED, .sg_list = &ss };
	struct ibv_recv_wr rw = { .wr_id = 2, .num_sge = 1, .sg_list = &rs }, *rbad;
	long before = stall_count("waiting") + stall_count("nowait");

	if (!smr || !dst || before < 0)
		FAIL("the stalled memory's ODP MR: %s", strerror(errno));
	dmr = ibv_reg_mr(pd, dst, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!dmr)
		FAIL("register the receive buffer");
	ss = (struct ibv_sge){ (uintptr_t)sm, 4096, smr->lkey };
	rs = (struct ibv_sge){ (uintptr_t)dst, 4096, dmr->lkey };
	if (ibv_post_recv(qb, &rw, &rbad) || post_quick("RC SEND gathered from the stalled memory", qa, &sw) ||
	    stall_reached("the RC SEND's gather", before, 1))
		return 1;
	printf("stalled\n");
	fflush(stdout);
	for (;;)
		pause();
}

static int t_stall_hold(void)
{
	uint8_t *dst, *src = malloc(4096);
	struct ibv_mr *dmr = stall_buf(&dst), *smr;

	if (!dmr || !src)
		FAIL("the stalled memory's ODP MR: %s", strerror(errno));
	smr = ibv_reg_mr(pd, src, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!smr || stall_write(smr, src, dmr, dst))
		return 1;
	printf("stalled\n");
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} modes[] = {
		{ "write", t_write }, { "read", t_read }, { "send", t_send },
		{ "atomic", t_atomic }, { "advise", t_advise }, { "gone", t_gone },
		{ "stall", t_stall }, { "stall_hold", t_stall_hold },
		{ "stall_more", t_stall_more }, { "stall_send_hold", t_stall_send_hold },
	};

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEV write|read|send|atomic|advise|gone|stall|stall_hold|stall_more|stall_send_hold\n",
			argv[0]);
		return 2;
	}
	stall_dev = argv[1];
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[2], modes[i].name))
			return setup(argv[1]) || modes[i].fn();
	fprintf(stderr, "unknown mode %s\n", argv[2]);
	return 2;
}
