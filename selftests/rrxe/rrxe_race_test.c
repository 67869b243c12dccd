// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_race_test DEV MODE ...: races between verbs of one process, through
 * stock libibverbs + librxe. Prints what went wrong and exits non-zero on
 * failure, 0 on success.
 *
 *   mw_dereg N   N rounds, each with a fresh MR: the main thread binds a
 *                window to it (type 2 with IBV_WR_BIND_MW, type 1 with
 *                ibv_bind_mw, in turn) and unbinds it again, in a loop,
 *                while a second thread keeps calling ibv_dereg_mr on the
 *                MR until it succeeds. A dereg must fail (EINVAL, as rxe)
 *                while a window is bound; once it has succeeded, a bind
 *                must complete in error, never bind the window to the
 *                deregistered MR, and an RDMA WRITE from the peer QP
 *                through the window's rkey must fail with
 *                REM_ACCESS_ERR, the memory unchanged.
 *   mw_rebind    a type 2 window's old rkey must not reach its next
 *                binding. QP b sends a FETCH_AND_ADD through rkey K1 of a
 *                window that QP a bound (an atomic resolves its key once,
 *                where a WRITE or READ resolves it again for each copy);
 *                the test build of the module holds that resolution after
 *                it found the window (test_hold_site), and meanwhile a
 *                invalidates K1 and binds the window again, over the same
 *                memory, with a new key. Released, the atomic must fail
 *                with REM_ACCESS_ERR and leave the memory unchanged.
 *   flush_irqs   a QP moved to ERR with 32000 receives posted flushes them
 *                all (WR_FLUSH_ERR, each wr_id once) without keeping
 *                interrupts off for long: the CPU's local timer
 *                interrupts (LOC in /proc/interrupts) handled during
 *                ibv_modify_qp must be at least a third of those its
 *                time spans (their rate measured first, in a busy loop).
 *                With interrupts off for the whole flush, one that fell
 *                in it is handled once, after it. A perf cpu-clock event
 *                on CPU 0 adds a timer interrupt every 200 us to the
 *                tick's, so that a flush of a few ms spans many (a fast
 *                host flushes in less than 3 ticks). At least 4 rounds
 *                of fresh QPs, each spanning 3 interrupts or more, are
 *                flushed until they span 12.
 *   send_err     a UC SEND whose SGE has a wrong lkey fails
 *                (LOC_PROT_ERR) and puts its QP in ERR. The test build
 *                holds the call that sent it once its error completion is
 *                posted (test_hold_site 4); meanwhile this thread polls
 *                the completion and queries the QP, which must be in ERR
 *                already: a consumer that sees the error never finds the
 *                QP still in RTS (on hardware the QP is in error before
 *                its CQE is written).
 *   ud_flood S   for S seconds, UD SENDs of 8 bytes, 64 per doorbell, to
 *                the multicast group ff0e::5a17 with Q_Key 0x1111 (the
 *                kernel test module's destroy race listens there).
 *   dm_exit      the owner of device memory exits while a peer's access
 *                to it is under way. A child process allocates 64 KiB of
 *                DM, fills it, registers it (zero-based, REMOTE_READ) and
 *                connects an RC QP to one of this process; this process
 *                READs 4 KiB of it, and the test build holds the copy of
 *                the READ response between finding the MR and copying
 *                (test_hold_site 2). The child is SIGKILLed during the
 *                hold. Its exit must wait for the held copy (a
 *                deregistration returns only once no access to the MR is
 *                under way, as rxe's does), so it must not be reaped
 *                within a second of the hold; released, the exit ends,
 *                and the READ completes, with the DM's bytes if it
 *                succeeds. The script scans the kernel log (a late release
 *                of the DM after its context was freed shows there on the
 *                debug kernel).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rrxe_test.h"

#define WAIT_MS 10000
#define MRLEN 65536
#define MW_ACCESS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | MW_ACCESS | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
#define QP_ACCESS (MW_ACCESS | IBV_ACCESS_REMOTE_ATOMIC)

/* The rights bind() gives a window. */
static unsigned int bind_access = MW_ACCESS;

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gid_index;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Busy-polls `cq` for one completion, up to WAIT_MS: 0 got one, -1 not. */
static int poll1(struct ibv_cq *cq, struct ibv_wc *wc)
{
	long end = now_ms() + WAIT_MS;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n == 1)
			return 0;
		if (n < 0 || now_ms() > end)
			return -1;
	}
}

/* One RC QP with its CQ; a and b are connected to each other. */
struct pair {
	struct ibv_qp *a, *b;
	struct ibv_cq *acq, *bcq;
};

static int rc_connect(struct ibv_qp *q, uint32_t peer)
{
	return rrxe_connect(q, peer, &gid, gid_index, IBV_MTU_1024, QP_ACCESS, 7);
}

static int pair_new(struct pair *p)
{
	struct ibv_qp_init_attr ia = { .cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
						.max_recv_sge = 1 }, .qp_type = IBV_QPT_RC };

	memset(p, 0, sizeof(*p));
	p->acq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	p->bcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!p->acq || !p->bcq)
		FAIL("create CQs: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = p->acq;
	p->a = ibv_create_qp(pd, &ia);
	ia.send_cq = ia.recv_cq = p->bcq;
	p->b = ibv_create_qp(pd, &ia);
	if (!p->a || !p->b)
		FAIL("create RC QPs: %s", strerror(errno));
	return rc_connect(p->a, p->b->qp_num) || rc_connect(p->b, p->a->qp_num);
}

static int pair_free(struct pair *p)
{
	if (ibv_destroy_qp(p->a) || ibv_destroy_qp(p->b) || ibv_destroy_cq(p->acq) ||
	    ibv_destroy_cq(p->bcq))
		FAIL("destroy a QP pair: %s", strerror(errno));
	return 0;
}

/* The dereg thread's side of a round. */
static struct ibv_mr *volatile race_mr;
static unsigned int go, started, finished, dereg_done, dereg_err, refused;

/* Pins the calling thread to CPU `cpu` (the races need both CPUs). */
static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *dereg_thread(void *arg)
{
	unsigned int seen = 0, seed = 1;

	(void)arg;
	pin(0);
	for (;;) {
		unsigned int g, spin;

		while ((g = __atomic_load_n(&go, __ATOMIC_SEQ_CST)) == seen)
			sched_yield();
		if (g == ~0u)
			return NULL;
		seen = g;
		/* The first attempt lands anywhere in the binder's loop. */
		spin = rand_r(&seed) % 30000;
		for (volatile unsigned int k = 0; k < spin; k++)
			;
		for (;;) {
			int r;

			__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
			r = ibv_dereg_mr(race_mr);
			__atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
			if (!r) {
				__atomic_store_n(&dereg_done, 1, __ATOMIC_SEQ_CST);
				break;
			}
			if (r == EINVAL)
				refused++;
			if (r != EINVAL) {
				__atomic_store_n(&dereg_err, r, __ATOMIC_SEQ_CST);
				__atomic_store_n(&dereg_done, 1, __ATOMIC_SEQ_CST);
				break;
			}
		}
	}
}

/* Binds `mw` (type 1 or 2) over `len` bytes at `addr` of `mr` from `qp`
 * (unbinds a type 1 window when `len` is 0); the completion's status. */
static int bind(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mw *mw, struct ibv_mr *mr, void *addr,
		uint64_t len, enum ibv_wc_status *st)
{
	struct ibv_mw_bind_info bi = { .mr = mr, .addr = (uintptr_t)addr, .length = len,
				       .mw_access_flags = len ? bind_access : 0 };
	uint32_t old = mw->rkey, nk = ibv_inc_rkey(old);
	struct ibv_wc wc;
	int r;

	if (mw->type == IBV_MW_TYPE_1) {
		struct ibv_mw_bind b = { .wr_id = 1, .send_flags = IBV_SEND_SIGNALED, .bind_info = bi };

		r = ibv_bind_mw(qp, mw, &b);
	} else {
		struct ibv_send_wr wr = { .wr_id = 1, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
					  .bind_mw = { .mw = mw, .rkey = nk, .bind_info = bi } }, *bad;

		r = ibv_post_send(qp, &wr, &bad);
	}
	if (r)
		FAIL("post a bind: %s", strerror(r));
	if (poll1(cq, &wc) || wc.wr_id != 1)
		FAIL("a bind did not complete");
	*st = wc.status;
	/* librxe moves a type 1 window's key when it posts (undone on an
	 * error); the test keeps type 2's. */
	mw->rkey = wc.status == IBV_WC_SUCCESS ? nk : old;
	return 0;
}

/* Invalidates bound type 2 window `mw` from `qp`. */
static int local_inv(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mw *mw)
{
	struct ibv_send_wr wr = { .wr_id = 2, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = mw->rkey }, *bad;
	struct ibv_wc wc;
	int r = ibv_post_send(qp, &wr, &bad);

	if (r)
		FAIL("post LOCAL_INV: %s", strerror(r));
	if (poll1(cq, &wc) || wc.wr_id != 2 || wc.status != IBV_WC_SUCCESS)
		FAIL("LOCAL_INV of a bound type 2 window: %s", ibv_wc_status_str(wc.status));
	return 0;
}

/*
 * An RDMA WRITE of 64 bytes from b through `rkey` at `addr` must fail with
 * REM_ACCESS_ERR, leaving `mem` (MRLEN bytes) as `saved`. Leaves the pair
 * in ERR.
 */
static int write_refused(struct pair *p, struct ibv_mr *lmr, uint8_t *lbuf, void *addr, uint32_t rkey,
			 const uint8_t *mem, const uint8_t *saved, int round)
{
	struct ibv_sge sge = { (uintptr_t)lbuf, 64, lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr = { .rdma = { .remote_addr = (uintptr_t)addr, .rkey = rkey } } }, *bad;
	struct ibv_wc wc;
	int r = ibv_post_send(p->b, &wr, &bad);

	if (r)
		FAIL("round %d: post the WRITE through the window: %s", round, strerror(r));
	if (poll1(p->bcq, &wc) || wc.wr_id != 3)
		FAIL("round %d: the WRITE through the window did not complete", round);
	if (wc.status != IBV_WC_REM_ACCESS_ERR)
		FAIL("round %d: an RDMA WRITE through window rkey 0x%x after its MR was deregistered completed with %s, not REM_ACCESS_ERR",
		     round, rkey, ibv_wc_status_str(wc.status));
	usleep(1000);
	if (memcmp(mem, saved, MRLEN))
		FAIL("round %d: a refused WRITE through window rkey 0x%x changed the memory", round, rkey);
	return 0;
}

static int mode_mw_dereg(int rounds)
{
	uint8_t *mem = malloc(MRLEN), *saved = malloc(MRLEN), *lbuf = malloc(4096);
	struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1), *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mr *lmr = lbuf ? ibv_reg_mr(pd, lbuf, 4096, IBV_ACCESS_LOCAL_WRITE) : NULL;
	unsigned int idle = 0, failed = 0, checked = 0, binds = 0;
	struct ibv_mr mr;
	bool live = false;
	struct pair p;
	pthread_t t;

	if (!mem || !saved || !lbuf || !mw1 || !mw2 || !lmr)
		FAIL("buffers, MWs, MR: %s", strerror(errno));
	memset(lbuf, 0xee, 4096);
	if (pthread_create(&t, NULL, dereg_thread, NULL))
		FAIL("pthread_create");
	pin(1);
	for (int i = 0; i < rounds; i++) {
		struct ibv_mw *mw = i % 2 ? mw1 : mw2;
		uint8_t *win = mem + 4096;
		bool bound = false, dead = false;
		enum ibv_wc_status st;

		for (int k = 0; k < MRLEN; k++)
			mem[k] = saved[k] = (uint8_t)(k * 7 + i);
		if (!live && pair_new(&p))
			return 1;
		live = true;
		race_mr = ibv_reg_mr(pd, mem, MRLEN, MR_ACCESS);
		if (!race_mr)
			FAIL("round %d: reg_mr: %s", i, strerror(errno));
		/* The binds name the MR through a copy: the dereg frees librxe's. */
		mr = *race_mr;
		__atomic_store_n(&dereg_done, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&go, i + 1, __ATOMIC_SEQ_CST);
		for (;;) {
			unsigned int s;

			if (__atomic_load_n(&dereg_done, __ATOMIC_SEQ_CST)) {
				idle++;
				break;
			}
			if (bind(p.a, p.acq, mw, &mr, win, 8192, &st))
				return 1;
			binds++;
			if (st != IBV_WC_SUCCESS) {
				/* Refused: the dereg won; the QP is in ERR. */
				failed++;
				dead = true;
				break;
			}
			/* Bound: a dereg that starts from now on must fail. */
			s = __atomic_load_n(&started, __ATOMIC_SEQ_CST);
			while (__atomic_load_n(&finished, __ATOMIC_SEQ_CST) <= s &&
			       !__atomic_load_n(&dereg_done, __ATOMIC_SEQ_CST))
				sched_yield();
			if (__atomic_load_n(&dereg_done, __ATOMIC_SEQ_CST)) {
				bound = true;
				break;
			}
			if (mw->type == IBV_MW_TYPE_1 ? bind(p.a, p.acq, mw, &mr, NULL, 0, &st) || st != IBV_WC_SUCCESS
						      : local_inv(p.a, p.acq, mw))
				FAIL("round %d: unbinding the window failed", i);
		}
		/* The dereg thread is done with this MR. */
		while (__atomic_load_n(&dereg_done, __ATOMIC_SEQ_CST) == 0)
			sched_yield();
		if (__atomic_load_n(&dereg_err, __ATOMIC_SEQ_CST))
			FAIL("round %d: ibv_dereg_mr failed with %s, not EINVAL", i,
			     strerror(__atomic_load_n(&dereg_err, __ATOMIC_SEQ_CST)));
		if (bound) {
			printf("round %d: a type %d bind completed successfully on an MR that ibv_dereg_mr deregistered\n",
			       i, mw->type == IBV_MW_TYPE_1 ? 1 : 2);
			write_refused(&p, lmr, lbuf, win, mw->rkey, mem, saved, i);
			return 1;
		}
		if (dead) {
			if (pair_free(&p))
				return 1;
			live = false;
		}
		/* Every 8th round (and the last), the window's rkey is checked. */
		if (i % 8 == 0 || i == rounds - 1) {
			if ((!live && pair_new(&p)) ||
			    write_refused(&p, lmr, lbuf, win, mw->rkey, mem, saved, i) || pair_free(&p))
				return 1;
			checked++;
			live = false;
		}
	}
	__atomic_store_n(&go, ~0u, __ATOMIC_SEQ_CST);
	pthread_join(t, NULL);
	if (live && pair_free(&p))
		return 1;
	printf("%d rounds, %u binds, %u deregs refused (a window bound); the dereg came between binds %u times, a bind after it failed %u times; %u windows checked unusable\n",
	       rounds, binds, refused, idle, failed, checked);
	if (ibv_dealloc_mw(mw1) || ibv_dealloc_mw(mw2) || ibv_dereg_mr(lmr))
		FAIL("dealloc MWs, dereg MR: %s", strerror(errno));
	free(mem);
	free(saved);
	free(lbuf);
	return 0;
}

static int mode_ud_flood(int seconds)
{
	struct ibv_qp_init_attr ia = { .cap = { .max_send_wr = 128, .max_recv_wr = 1, .max_send_sge = 1,
						.max_recv_sge = 1 }, .qp_type = IBV_QPT_UD };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x2222 };
	/* From GID 0, the link-local IPv6 address, to an IPv6 group. */
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .sgid_index = 0, .hop_limit = 64 } };
	static const uint8_t group[16] = { 0xff, 0x0e, [14] = 0x5a, [15] = 0x17 };
	struct ibv_cq *cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	char *buf = malloc(4096);
	struct ibv_mr *mr = buf ? ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	long end = now_ms() + seconds * 1000L;
	unsigned long sent = 0;

	if (!cq || !mr)
		FAIL("CQ, MR: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		FAIL("create UD QP: %s", strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		FAIL("UD QP to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		FAIL("UD QP to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		FAIL("UD QP to RTS");
	memcpy(aa.grh.dgid.raw, group, 16);
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		FAIL("AH to the multicast group: %s", strerror(errno));
	memset(buf, 0x5a, 4096);
	while (now_ms() < end) {
		struct ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
		struct ibv_send_wr wr[64], *bad;
		struct ibv_wc wc;

		for (int i = 0; i < 64; i++) {
			wr[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = &sge, .num_sge = 1,
						      .opcode = IBV_WR_SEND, .next = i < 63 ? &wr[i + 1] : NULL,
						      .wr = { .ud = { .ah = ah, .remote_qpn = 0xffffff,
								      .remote_qkey = 0x1111 } } };
		}
		wr[63].send_flags = IBV_SEND_SIGNALED;
		if (ibv_post_send(qp, wr, &bad))
			FAIL("post UD SENDs: %s", strerror(errno));
		if (poll1(cq, &wc) || wc.status != IBV_WC_SUCCESS)
			FAIL("UD SENDs did not complete");
		sent += 64;
	}
	printf("sent %lu datagrams to ff0e::5a17\n", sent);
	ibv_destroy_qp(qp);
	ibv_destroy_ah(ah);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	free(buf);
	return 0;
}

#define HOOKS "/sys/module/rrxe/parameters/"

/* Writes `v` to the test build's parameter `name`: 0, or -1. */
static int hook_set(const char *name, const char *v)
{
	char path[128];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), HOOKS "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	r = fputs(v, f) < 0;
	return fclose(f) || r ? -1 : 0;
}

/* The test build's count of holds, or -1. */
static long hook_hits(void)
{
	FILE *f = fopen(HOOKS "test_hold_hits", "r");
	long n = -1;

	if (f && fscanf(f, "%ld", &n) != 1)
		n = -1;
	if (f)
		fclose(f);
	return n;
}

/* Waits up to WAIT_MS for a hold after the count `hits`: 1 held, 0 not. */
static int held_since(long hits)
{
	long end = now_ms() + WAIT_MS;

	while (hook_hits() == hits && now_ms() < end)
		usleep(1000);
	return hook_hits() != hits;
}

struct held_op {
	struct pair *p;
	struct ibv_mr *lmr;
	uint8_t *lbuf, *addr;
	uint32_t rkey;
	int posted;
	struct ibv_wc wc;
	int polled;
};

static void *held_op_thread(void *arg)
{
	struct held_op *h = arg;
	struct ibv_sge sge = { (uintptr_t)h->lbuf, 8, h->lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .send_flags = IBV_SEND_SIGNALED,
				  .wr = { .atomic = { .remote_addr = (uintptr_t)h->addr, .compare_add = 0x1111,
						      .rkey = h->rkey } } }, *bad;

	pin(0);
	h->posted = ibv_post_send(h->p->b, &wr, &bad);
	if (!h->posted)
		h->polled = poll1(h->p->bcq, &h->wc);
	return NULL;
}

static int mode_mw_rebind(void)
{
	uint8_t *mem = malloc(MRLEN), *saved = malloc(MRLEN), *lbuf = malloc(4096);
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mr *lmr = lbuf ? ibv_reg_mr(pd, lbuf, 4096, IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_mr *mr = mem ? ibv_reg_mr(pd, mem, MRLEN, MR_ACCESS) : NULL;
	struct held_op h = { 0 };
	enum ibv_wc_status st;
	uint32_t old_key;
	struct pair p;
	long hits;
	pthread_t t;

	if (!mem || !saved || !lbuf || !mw || !lmr || !mr)
		FAIL("buffers, MW, MRs: %s", strerror(errno));
	hits = hook_hits();
	if (hits < 0)
		FAIL("no " HOOKS "test_hold_hits: not the test build of rrxe");
	memset(lbuf, 0xee, 4096);
	for (int k = 0; k < MRLEN; k++)
		mem[k] = saved[k] = (uint8_t)(k * 13 + 1);
	bind_access = QP_ACCESS;
	if (pair_new(&p))
		return 1;
	pin(1);
	if (bind(p.a, p.acq, mw, mr, mem + 4096, 4096, &st))
		return 1;
	if (st != IBV_WC_SUCCESS)
		FAIL("bind the type 2 window: %s", ibv_wc_status_str(st));
	old_key = mw->rkey;
	if (hook_set("test_hold_site", "1"))
		FAIL("cannot set test_hold_site: %s", strerror(errno));
	h = (struct held_op){ .p = &p, .lmr = lmr, .lbuf = lbuf, .addr = mem + 4096 + 64,
			      .rkey = old_key };
	if (pthread_create(&t, NULL, held_op_thread, &h)) {
		hook_set("test_hold_site", "0");
		FAIL("pthread_create");
	}
	/* The atomic found the window and is held before it looks at the binding. */
	if (!held_since(hits)) {
		hook_set("test_hold_site", "0");
		pthread_join(t, NULL);
		FAIL("the atomic through rkey 0x%x never reached its key resolution (post: %s)", old_key,
		     strerror(h.posted));
	}
	if (local_inv(p.a, p.acq, mw) || bind(p.a, p.acq, mw, mr, mem + 4096, 4096, &st)) {
		hook_set("test_hold_site", "0");
		pthread_join(t, NULL);
		return 1;
	}
	hook_set("test_hold_site", "0");
	pthread_join(t, NULL);
	if (st != IBV_WC_SUCCESS)
		FAIL("bind the window again: %s", ibv_wc_status_str(st));
	if (h.posted)
		FAIL("post the atomic through the window: %s", strerror(h.posted));
	if (h.polled || h.wc.wr_id != 3)
		FAIL("the held atomic did not complete");
	if (h.wc.status != IBV_WC_REM_ACCESS_ERR)
		FAIL("a FETCH_AND_ADD through rkey 0x%x, held while the window was invalidated and bound again as 0x%x, completed with %s, not REM_ACCESS_ERR",
		     old_key, mw->rkey, ibv_wc_status_str(h.wc.status));
	usleep(1000);
	if (memcmp(mem, saved, MRLEN))
		FAIL("a FETCH_AND_ADD through the window's old rkey 0x%x reached its new binding (0x%x): the memory changed",
		     old_key, mw->rkey);
	printf("mw_rebind: the FETCH_AND_ADD through old rkey 0x%x was refused (%s) after the window was bound again as 0x%x; memory unchanged\n",
	       old_key, ibv_wc_status_str(h.wc.status), mw->rkey);
	return 0;
}

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

#define FLUSH_WQES 32000

/* CPU 0's local timer interrupts so far (the LOC line of
 * /proc/interrupts), or -1. */
static long loc_cpu0(void)
{
	char line[4096];
	FILE *f = fopen("/proc/interrupts", "r");
	long n = -1;

	while (f && fgets(line, sizeof(line), f)) {
		char *p = line;

		while (*p == ' ')
			p++;
		if (!strncmp(p, "LOC:", 4)) {
			n = strtol(p + 4, NULL, 10);
			break;
		}
	}
	if (f)
		fclose(f);
	return n;
}

/* Flushes FLUSH_WQES receives of a fresh QP; adds the time ibv_modify_qp
 * took and the ticks CPU 0 handled meanwhile. */
static int flush_round(long *us, long *ticks)
{
	struct ibv_qp_init_attr ia = { .cap = { .max_send_wr = 16, .max_recv_wr = FLUSH_WQES, .max_send_sge = 1,
						.max_recv_sge = 1 }, .qp_type = IBV_QPT_RC };
	struct ibv_cq *scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 32767, NULL, NULL, 0);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	static struct ibv_wc wc[256];
	static unsigned char seen[FLUSH_WQES];
	static uint8_t buf[64];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)buf, 64, mr ? mr->lkey : 0 };
	struct ibv_recv_wr rw = { .sg_list = &sge, .num_sge = 1 }, *bad;
	long t0, t1, l0, l1;
	unsigned int got = 0;
	struct ibv_qp *qp;
	int r;

	if (!scq || !rcq || !mr)
		FAIL("CQs, MR: %s", strerror(errno));
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		FAIL("an RC QP with %d receive WQEs: %s", FLUSH_WQES, strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		FAIL("QP to INIT: %s", strerror(errno));
	for (unsigned int i = 0; i < FLUSH_WQES; i++) {
		rw.wr_id = i;
		if ((r = ibv_post_recv(qp, &rw, &bad)))
			FAIL("post receive %u: %s", i, strerror(r));
	}
	memset(seen, 0, sizeof(seen));
	a.qp_state = IBV_QPS_ERR;
	l0 = loc_cpu0();
	t0 = now_us();
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	t1 = now_us();
	l1 = loc_cpu0();
	if (r)
		FAIL("QP to ERR: %s", strerror(r));
	if (l0 < 0 || l1 < 0)
		FAIL("no LOC line in /proc/interrupts");
	*us += t1 - t0;
	*ticks += l1 - l0;
	while (got < FLUSH_WQES && now_us() - t0 < WAIT_MS * 1000L) {
		int n = ibv_poll_cq(rcq, 256, wc);

		if (n < 0)
			break;
		for (int k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_WR_FLUSH_ERR || wc[k].wr_id >= FLUSH_WQES ||
			    seen[wc[k].wr_id]++)
				FAIL("flush completion %u: wr_id %llu, %s", got, (unsigned long long)wc[k].wr_id,
				     ibv_wc_status_str(wc[k].status));
			got++;
		}
	}
	if (got != FLUSH_WQES)
		FAIL("%u of %d receives flushed", got, FLUSH_WQES);
	if (ibv_destroy_qp(qp) || ibv_dereg_mr(mr) || ibv_destroy_cq(scq) || ibv_destroy_cq(rcq))
		FAIL("teardown: %s", strerror(errno));
	return 0;
}

static int mode_flush_irqs(void)
{
	struct perf_event_attr pa = { .type = PERF_TYPE_SOFTWARE, .size = sizeof(pa),
				      .config = PERF_COUNT_SW_CPU_CLOCK, .sample_period = 200000 };
	long us = 0, ticks = 0, l0, t0, hz;
	volatile unsigned long spin = 0;
	double expected = 0;
	int rounds = 0, tries = 0, pfd;

	/* An hrtimer on CPU 0 every 200 us, whatever runs there. */
	pfd = syscall(__NR_perf_event_open, &pa, -1, 0, -1, 0);
	if (pfd < 0)
		FAIL("a perf cpu-clock event on CPU 0: %s", strerror(errno));
	pin(0);
	/* The tick rate, from a busy second of this CPU. */
	l0 = loc_cpu0();
	t0 = now_us();
	while (now_us() - t0 < 1000000)
		spin++;
	hz = (loc_cpu0() - l0) * 1000000L / (now_us() - t0);
	if (l0 < 0 || hz < 50)
		FAIL("CPU 0's timer interrupts: %ld a second", hz);
	/* A round counts if its flush spans 3 interrupts: with interrupts
	 * off, it gets at most about one of them. */
	while ((expected < 12 || rounds < 4) && tries++ < 40) {
		long u = 0, t = 0;

		if (flush_round(&u, &t))
			return 1;
		if ((double)u * hz / 1e6 < 3)
			continue;
		us += u;
		ticks += t;
		rounds++;
		expected = (double)us * hz / 1e6;
	}
	close(pfd);
	printf("flush_irqs: %d rounds of %d receives flushed; ibv_modify_qp took %ld us in all, spanning %.1f timer interrupts at %ld Hz, and CPU 0 handled %ld\n",
	       rounds, FLUSH_WQES, us, expected, hz, ticks);
	if (expected < 12 || rounds < 4)
		FAIL("the flushes were too quick (%d of %d spanned 3 timer interrupts) to tell", rounds, tries);
	if (ticks * 3 < expected)
		FAIL("CPU 0 handled %ld timer interrupts during flushes spanning %.1f ticks: interrupts were off for most of them",
		     ticks, expected);
	return 0;
}

#define DM_LEN 65536
#define DM_READ 4096

static uint8_t dm_pattern(size_t i)
{
	return (uint8_t)(i * 29 + 5);
}

/* The DM owner: sends its QPN and rkey on `wfd`, connects to the QPN read
 * from `rfd`, says "ready" and waits to be killed. */
static int dm_owner(int rfd, int wfd)
{
	struct ibv_alloc_dm_attr da = { .length = DM_LEN };
	struct ibv_qp_init_attr ia = { .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						.max_recv_sge = 1 }, .qp_type = IBV_QPT_RC };
	struct ibv_context *c = rrxe_open(ibv_get_device_name(ctx->device));
	uint8_t *fill = malloc(DM_LEN);
	uint32_t msg[2], peer;
	union ibv_gid g;
	struct ibv_pd *opd;
	struct ibv_cq *cq;
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	struct ibv_qp *q;
	int gi;

	if (!c || !fill)
		FAIL("owner: open the device: %s", strerror(errno));
	opd = ibv_alloc_pd(c);
	gi = rrxe_ipv4_gid(c, &g);
	dm = ibv_alloc_dm(c, &da);
	if (!opd || gi < 0 || !dm)
		FAIL("owner: PD, GID or DM: %s", strerror(errno));
	for (size_t i = 0; i < DM_LEN; i++)
		fill[i] = dm_pattern(i);
	if (ibv_memcpy_to_dm(dm, 0, fill, DM_LEN))
		FAIL("owner: fill the DM");
	mr = ibv_reg_dm_mr(opd, dm, 0, DM_LEN, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(c, 8, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = cq;
	q = cq ? ibv_create_qp(opd, &ia) : NULL;
	if (!mr || !q)
		FAIL("owner: DM MR, CQ or QP: %s", strerror(errno));
	msg[0] = q->qp_num;
	msg[1] = mr->rkey;
	if (write(wfd, msg, sizeof(msg)) != sizeof(msg) || rrxe_readall(rfd, &peer, sizeof(peer)))
		FAIL("owner: pipe");
	if (rrxe_connect(q, peer, &g, gi, IBV_MTU_1024, QP_ACCESS, 7))
		return 1;
	if (write(wfd, "r", 1) != 1)
		FAIL("owner: pipe");
	for (;;)
		pause();
}

struct dm_read {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *lmr;
	uint32_t rkey;
	int posted, polled;
	struct ibv_wc wc;
};

static void *dm_read_thread(void *arg)
{
	struct dm_read *r = arg;
	struct ibv_sge sge = { (uintptr_t)r->lmr->addr, DM_READ, r->lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr = { .rdma = { .remote_addr = 0, .rkey = r->rkey } } }, *bad;

	r->posted = ibv_post_send(r->qp, &wr, &bad);
	if (!r->posted)
		r->polled = poll1(r->cq, &r->wc);
	return NULL;
}

/* Polls for child `pid`'s exit for up to `ms`: 1 reaped, 0 not yet. */
static int reaped_within(pid_t pid, long ms)
{
	long end = now_ms() + ms;

	do {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return 1;
		usleep(1000);
	} while (now_ms() < end);
	return 0;
}

static int mode_dm_exit(void)
{
	struct ibv_qp_init_attr ia = { .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						.max_recv_sge = 1 }, .qp_type = IBV_QPT_RC };
	uint8_t *lbuf = malloc(DM_READ);
	struct dm_read r = { 0 };
	int to_owner[2], from_owner[2];
	uint32_t msg[2];
	long hits, held_ms;
	pthread_t t;
	pid_t pid;
	char ok;

	if (!lbuf || pipe(to_owner) || pipe(from_owner))
		FAIL("buffers, pipes");
	hits = hook_hits();
	if (hits < 0)
		FAIL("no " HOOKS "test_hold_hits: not the test build of rrxe");
	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (!pid) {
		close(to_owner[1]);
		close(from_owner[0]);
		_exit(dm_owner(to_owner[0], from_owner[1]));
	}
	/* The owner's exit closes its end: a read then fails at once. */
	close(to_owner[0]);
	close(from_owner[1]);
	memset(lbuf, 0xee, DM_READ);
	r.cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = r.cq;
	r.qp = r.cq ? ibv_create_qp(pd, &ia) : NULL;
	r.lmr = ibv_reg_mr(pd, lbuf, DM_READ, IBV_ACCESS_LOCAL_WRITE);
	if (!r.qp || !r.lmr)
		FAIL("CQ, QP, MR: %s", strerror(errno));
	if (rrxe_readall(from_owner[0], msg, sizeof(msg)) ||
	    write(to_owner[1], &r.qp->qp_num, sizeof(r.qp->qp_num)) != sizeof(r.qp->qp_num))
		FAIL("the owner did not set up (see its error above)");
	r.rkey = msg[1];
	if (rc_connect(r.qp, msg[0]) || rrxe_readall(from_owner[0], &ok, 1))
		FAIL("connect to the owner");
	if (hook_set("test_hold_site", "2"))
		FAIL("cannot set test_hold_site: %s", strerror(errno));
	if (pthread_create(&t, NULL, dm_read_thread, &r)) {
		hook_set("test_hold_site", "0");
		FAIL("pthread_create");
	}
	if (!held_since(hits)) {
		hook_set("test_hold_site", "0");
		kill(pid, SIGKILL);
		pthread_join(t, NULL);
		FAIL("the READ of the DM never reached its copy (post: %s)", strerror(r.posted));
	}
	/* The copy is held: the owner dies. */
	held_ms = now_ms();
	kill(pid, SIGKILL);
	if (reaped_within(pid, 1000)) {
		hook_set("test_hold_site", "0");
		pthread_join(t, NULL);
		FAIL("the DM owner's exit ended %ld ms after SIGKILL, while a copy from its DM MR was still held: its MR was deregistered under an access",
		     now_ms() - held_ms);
	}
	hook_set("test_hold_site", "0");
	held_ms = now_ms() - held_ms;
	if (!reaped_within(pid, WAIT_MS))
		FAIL("the DM owner was not reaped within %d ms of the copy's release", WAIT_MS);
	pthread_join(t, NULL);
	if (r.posted || r.polled)
		FAIL("the READ: post %s, %s", strerror(r.posted), r.polled ? "no completion" : "completed");
	if (r.wc.status == IBV_WC_SUCCESS)
		for (size_t i = 0; i < DM_READ; i++)
			if (lbuf[i] != dm_pattern(i))
				FAIL("the READ of the DM succeeded with byte %zu = 0x%02x, not 0x%02x", i, lbuf[i],
				     dm_pattern(i));
	printf("dm_exit: the owner's exit waited for the held copy (%ld ms); the READ completed with %s\n",
	       held_ms, ibv_wc_status_str(r.wc.status));
	ibv_destroy_qp(r.qp);
	ibv_destroy_cq(r.cq);
	ibv_dereg_mr(r.lmr);
	return 0;
}

struct failed_send {
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int posted;
};

static void *failed_send_thread(void *arg)
{
	struct failed_send *f = arg;
	struct ibv_sge sge = { (uintptr_t)f->buf, 64, rrxe_wrong_key(f->mr->lkey) };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	f->posted = ibv_post_send(f->qp, &wr, &bad);
	return NULL;
}

static int mode_send_err(void)
{
	struct ibv_qp_init_attr ia = { .cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
						.max_recv_sge = 1 }, .qp_type = IBV_QPT_UC };
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr got_init;
	struct ibv_qp_attr got;
	struct failed_send f = { .buf = malloc(4096) };
	struct ibv_qp *a, *b;
	struct ibv_wc wc;
	int polled, queried;
	long hits;
	pthread_t t;

	hits = hook_hits();
	if (hits < 0)
		FAIL("no " HOOKS "test_hold_hits: not the test build of rrxe");
	if (!cq || !f.buf)
		FAIL("CQ, buffer: %s", strerror(errno));
	f.mr = ibv_reg_mr(pd, f.buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	ia.send_cq = ia.recv_cq = cq;
	a = ibv_create_qp(pd, &ia);
	b = ibv_create_qp(pd, &ia);
	if (!f.mr || !a || !b)
		FAIL("MR, UC QPs: %s", strerror(errno));
	if (rrxe_connect(a, b->qp_num, &gid, gid_index, IBV_MTU_1024, 0, 9) ||
	    rrxe_connect(b, a->qp_num, &gid, gid_index, IBV_MTU_1024, 0, 9))
		return 1;
	f.qp = a;
	if (hook_set("test_hold_site", "4"))
		FAIL("cannot set test_hold_site: %s", strerror(errno));
	if (pthread_create(&t, NULL, failed_send_thread, &f)) {
		hook_set("test_hold_site", "0");
		FAIL("pthread_create");
	}
	/* The completion is posted before the hold: poll it, then ask. */
	polled = poll1(cq, &wc);
	queried = ibv_query_qp(a, &got, IBV_QP_STATE, &got_init);
	if (!held_since(hits)) {
		hook_set("test_hold_site", "0");
		pthread_join(t, NULL);
		FAIL("the failed SEND was never held after its completion (post: %s)",
		     strerror(f.posted));
	}
	hook_set("test_hold_site", "0");
	pthread_join(t, NULL);
	if (f.posted)
		FAIL("post the SEND: %s", strerror(f.posted));
	if (polled)
		FAIL("no completion for the SEND with a wrong lkey");
	if (wc.wr_id != 7 || wc.status != IBV_WC_LOC_PROT_ERR)
		FAIL("the SEND completed as wr_id %llu, %s, not 7, LOC_PROT_ERR",
		     (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
	if (queried)
		FAIL("query the QP: %s", strerror(queried));
	if (got.qp_state != IBV_QPS_ERR)
		FAIL("the QP is in state %d once its failed SEND's completion is seen, not ERR (%d)",
		     got.qp_state, IBV_QPS_ERR);
	if (ibv_destroy_qp(a) || ibv_destroy_qp(b) || ibv_dereg_mr(f.mr) || ibv_destroy_cq(cq))
		FAIL("destroy: %s", strerror(errno));
	free(f.buf);
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc < 3)
		FAIL("usage: %s DEV mw_dereg ROUNDS | mw_rebind | flush_irqs | dm_exit | send_err | ud_flood SECONDS",
		     argv[0]);
	ctx = rrxe_open(argv[1]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	pd = ibv_alloc_pd(ctx);
	gid_index = rrxe_ipv4_gid(ctx, &gid);
	if (!pd || gid_index < 0)
		FAIL("PD or IPv4 GID");
	if (!strcmp(argv[2], "mw_dereg") && argc > 3)
		rc = mode_mw_dereg(atoi(argv[3]));
	else if (!strcmp(argv[2], "mw_rebind"))
		rc = mode_mw_rebind();
	else if (!strcmp(argv[2], "flush_irqs"))
		rc = mode_flush_irqs();
	else if (!strcmp(argv[2], "dm_exit"))
		rc = mode_dm_exit();
	else if (!strcmp(argv[2], "send_err"))
		rc = mode_send_err();
	else if (!strcmp(argv[2], "ud_flood") && argc > 3)
		rc = mode_ud_flood(atoi(argv[3]));
	else
		FAIL("unknown mode %s", argv[2]);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return rc;
}
