// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_hostile_storm DEV TOTAL [SEED]: posts at least TOTAL random work
 * requests to RC, UC and UD QPs and an SRQ of one context, and leaves the
 * rest to the kernel's cleanup when it exits.
 *
 *   - WQEs written straight into the mapped send, receive and SRQ rings
 *     (the rings librxe mapped; found in /proc/self/maps), then the raw
 *     doorbell (librxe's zero-WR POST_SEND command): every opcode number
 *     (valid for the QP type, invalid, past the table, random), random
 *     flags, SGE lists of 0..max and beyond, SGEs of length 0, 2^31 and
 *     2^32-1, addresses near 2^64, overlapping SGEs, lkeys that are
 *     valid, random or of another PD, inline data of every size around
 *     the limit, remote addresses and rkeys good and bad, UD AH numbers
 *     good and bogus (and the legacy embedded address vector), MW binds
 *     and invalidations, and the WQE's kernel fields scribbled;
 *   - random chains of work requests through ibv_post_send,
 *     ibv_post_recv and ibv_post_srq_recv (bogus AH handles for UD);
 *   - a thread rewriting the rings' producer and consumer indices while
 *     the doorbell rings, while a QP is moved to ERR (the flush), while
 *     the CQ is resized (ibv_resize_cq) and while the SRQ is resized or
 *     armed (ibv_modify_srq);
 *   - QPs that fell into ERR are taken back to RTS with random attributes
 *     (timeouts, retries, MTU, access flags).
 *
 * A watchdog thread fails the run (exit 3, with the kernel stacks of the
 * threads) if any call into the kernel takes longer than RRXE_STORM_LIMIT
 * seconds (default 10). Prints "# posted N hostile WQEs" and exits 1 if N
 * is below TOTAL or some opcode number was never posted on some QP type.
 *
 * rrxe_hostile_storm DEV verify: verified RC, UC and UD transfers on DEV
 * (rrxe_verify.h), for after the storm.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rrxe_test.h"
#include "rrxe_verify.h"

/* One MR over `mem`: local buffers in the first half, remote targets in
 * the second. */
#define MEM (64 * 1024)
#define HALF (MEM / 2)
#define NOPS 33 /* opcode numbers counted: 0..31, and "larger" */
#define VSGE 64 /* SGEs per work request through the verbs, at most */

static uint64_t seed;
static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The watchdog: `op` names the call under way, `op_t0` when it began (0:
 * none). */
static const char *volatile op = "setup";
static volatile double op_t0;
static double limit_s = 10;
static double slowest;
static const char *slowest_op = "none";

#define CALL(name, expr) ({				\
	op = (name);					\
	op_t0 = now();					\
	__typeof__(expr) r_ = (expr);			\
	double d_ = now() - op_t0;			\
	op_t0 = 0;					\
	if (d_ > slowest) {				\
		slowest = d_;				\
		slowest_op = (name);			\
	}						\
	r_;						\
})

static void dump_stacks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], line[256];

	while (d && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stack", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		fprintf(stderr, "task %s:\n", e->d_name);
		while (fgets(line, sizeof(line), f))
			fprintf(stderr, "  %s", line);
		fclose(f);
	}
	if (d)
		closedir(d);
}

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		double t0 = op_t0;

		if (t0 && now() - t0 > limit_s) {
			fprintf(stderr, "watchdog: %s has not returned after %.0f s\n", op, limit_s);
			dump_stacks();
			fflush(stderr);
			_exit(3);
		}
		usleep(100000);
	}
	return NULL;
}

/* Mappings of the uverbs device, to find the rings librxe mapped. */
#define MAXMAP 64
static uintptr_t known[MAXMAP];
static int nknown;

/* The uverbs mappings that appeared since the last call. */
static int new_rings(uintptr_t *out, int max)
{
	uintptr_t cur[MAXMAP];
	int ncur = 0, nout = 0;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && ncur < MAXMAP) {
		unsigned long lo;

		if (!strstr(line, "/dev/infiniband/uverbs") || sscanf(line, "%lx-", &lo) != 1)
			continue;
		cur[ncur++] = lo;
	}
	fclose(f);
	for (int i = 0; i < ncur; i++) {
		int old = 0;

		for (int k = 0; k < nknown; k++)
			old |= known[k] == cur[i];
		if (!old && nout < max)
			out[nout++] = cur[i];
	}
	memcpy(known, cur, sizeof(cur[0]) * ncur);
	nknown = ncur;
	return nout;
}

static struct ibv_context *ctx;
static struct ibv_pd *pd, *pd2;
static struct ibv_mr *mr, *mr2;
static struct ibv_mw *mw1, *mw2;
static struct ibv_cq *cqs[2];
static struct rxe_queue_buf *cq_ring[2];
static struct ibv_srq *srq;
static struct rxe_queue_buf *srq_ring;
static struct ibv_ah *ah;
static uint32_t ah_num;
static struct rxe_av good_av;
static union ibv_gid gid;
static int gid_index = -1;
static uint8_t *mem, *mem2;
/* A bogus AH for ibv_post_send: random bytes where librxe reads one. */
static uint8_t fake_ah[512] __attribute__((aligned(64)));

struct hq {
	const char *name;
	struct ibv_qp *qp;
	int type; /* 0 RC, 1 UC, 2 UD */
	int peer;
	struct rxe_queue_buf *sq, *rq;
	uint32_t max_sge, max_inline, max_rsge;
	uint64_t ring_wqes, verbs_wrs, recv_wqes, recycles;
};

static struct hq qs[6] = {
	{ "RC A", .type = 0, .peer = 1 }, { "RC B", .type = 0, .peer = 0 },
	{ "UC A", .type = 1, .peer = 3 }, { "UC B", .type = 1, .peer = 2 },
	{ "UD A", .type = 2, .peer = -1 }, { "UD B", .type = 2, .peer = -1 },
};

/* Completions seen on the send and receive CQs: successful, flushed,
 * other errors (some slots hold what the racer made of them). */
static uint64_t wcs[2][3];
static uint64_t posted, opcode_seen[3][NOPS], srq_wqes, flushes, resizes, srq_mods, raced, doorbells;

static uint32_t load_idx(volatile uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store_idx(volatile uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* ---- The racing thread ---- */

static struct {
	pthread_mutex_t m;
	pthread_cond_t c;
	unsigned gen;
	atomic_int on;
	atomic_uint acked, writes;
	struct rxe_queue_buf *t[8];
	int n;
} race = { .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER };

static __thread sigjmp_buf *guard;

/* A fault outside the racer's guarded writes: the default action. */
__attribute__((noinline)) static void fatal_fault(int sig)
{
	signal(sig, SIG_DFL);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (guard)
		siglongjmp(*guard, 1);
	fatal_fault(sig);
}

static void *racer(void *arg)
{
	/* Kept across the longjmp out of a fault. */
	static volatile unsigned gen;
	static volatile uint64_t s;
	sigjmp_buf jb;

	s = 0x9e3779b97f4a7c15ull ^ (uintptr_t)arg;
	for (;;) {
		pthread_mutex_lock(&race.m);
		while (race.gen == gen)
			pthread_cond_wait(&race.c, &race.m);
		gen = race.gen;
		pthread_mutex_unlock(&race.m);
		/* A ring that librxe unmapped under us (resize) faults:
		 * stop writing until the next race. */
		guard = &jb;
		if (!sigsetjmp(jb, 1)) {
			while (atomic_load(&race.on)) {
				struct rxe_queue_buf *q;
				uint32_t mask, other, v;
				volatile uint32_t *w;

				s ^= s << 13;
				s ^= s >> 7;
				s ^= s << 17;
				q = race.t[s % race.n];
				mask = q->index_mask;
				w = (s >> 8) & 1 ? &q->producer_index : &q->consumer_index;
				other = (s >> 8) & 1 ? q->consumer_index : q->producer_index;
				switch ((s >> 9) & 7) {
				case 0:
					/* Masked, as librxe needs. */
					v = (uint32_t)(s >> 20) & mask;
					break;
				case 1:
				case 2:
					v = (other - 1) & mask; /* full */
					break;
				case 3:
					v = other; /* empty */
					break;
				default:
					v = (other + 1 + ((s >> 12) & 7)) & mask;
					break;
				}
				*w = v;
				atomic_fetch_add(&race.writes, 1);
			}
		}
		guard = NULL;
		atomic_store(&race.acked, gen);
	}
	return NULL;
}

/* Starts the racer on rings `t` and waits until it has written. */
static void race_begin(struct rxe_queue_buf **t, int n)
{
	unsigned w;

	pthread_mutex_lock(&race.m);
	memcpy(race.t, t, sizeof(*t) * n);
	race.n = n;
	w = atomic_load(&race.writes);
	atomic_store(&race.on, 1);
	race.gen++;
	pthread_cond_signal(&race.c);
	pthread_mutex_unlock(&race.m);
	while (atomic_load(&race.writes) - w < 16 && atomic_load(&race.acked) != race.gen)
		sched_yield();
	raced++;
}

static void race_end(void)
{
	atomic_store(&race.on, 0);
	while (atomic_load(&race.acked) != race.gen)
		sched_yield();
}

/* ---- Random work requests ---- */

/* Whether to make this field hostile, at the batch's rate h (percent). */
#define H (rnd() % 100 < (unsigned)h)

static uint64_t edge_addr(void)
{
	switch (rnd() % 8) {
	case 0: return 0;
	case 1: return ~0ull - rnd() % 4096;
	case 2: return 1ull << 63;
	case 3: return (uintptr_t)mem + MEM - 1 - rnd() % 16;
	case 4: return (uintptr_t)mem - 1 - rnd() % 4096;
	case 5: return (uintptr_t)mem2 + rnd() % MEM;
	case 6: return (uintptr_t)mem + rnd() % MEM;
	default: return rnd();
	}
}

static uint32_t edge_len(void)
{
	static const uint32_t l[] = { 0, 1, 0x80000000u, 0xffffffffu, 0x7fffffffu, 0x80000001u, MEM, MEM + 1,
				      4096, 65535 };

	return rnd() % 4 ? l[rnd() % (sizeof(l) / sizeof(l[0]))] : (uint32_t)rnd();
}

static uint32_t edge_key(void)
{
	switch (rnd() % 7) {
	case 0: return mr2->lkey;
	case 1: return 0;
	case 2: return mr->lkey ^ (1 + rnd() % 255);
	case 3: return mw1->rkey;
	case 4: return mw2->rkey;
	case 5: return mr->lkey + 0x100;
	default: return (uint32_t)rnd();
	}
}

/* A short local buffer inside the MR (length mostly small). */
static void local_sge(struct rxe_sge *s, int h)
{
	uint32_t len = rnd() % 8 ? rnd() % 512 : rnd() % 8192;
	uint32_t off = rnd() % (HALF - len);

	s->addr = (uintptr_t)mem + off;
	s->length = len;
	s->lkey = mr->lkey;
	if (H)
		s->addr = edge_addr();
	if (H)
		s->length = edge_len();
	if (H)
		s->lkey = edge_key();
}

static uint64_t remote_addr(int h, int align)
{
	uint64_t a = (uintptr_t)mem + HALF + rnd() % (HALF - 8192);

	if (align)
		a &= ~7ull;
	return H ? edge_addr() : a;
}

static uint32_t rkey(int h)
{
	return H ? edge_key() : mr->rkey;
}

static const uint32_t valid_ops[3][10] = {
	{ IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ,
	  IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV, IBV_WR_BIND_MW,
	  IBV_WR_SEND_WITH_INV },
	{ IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_BIND_MW,
	  IBV_WR_SEND_WITH_INV, IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM },
	{ IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND,
	  IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND },
};

static uint32_t pick_opcode(int type, int h)
{
	uint32_t o = valid_ops[type][rnd() % 10];

	if (H)
		o = rnd() % 4 ? rnd() % 32 : (uint32_t)rnd();
	opcode_seen[type][o < 32 ? o : 32]++;
	return o;
}

static uint32_t pick_flags(int h)
{
	uint32_t f = (rnd() % 2 ? IBV_SEND_SIGNALED : 0) | (rnd() % 8 ? 0 : IBV_SEND_SOLICITED) |
		     (rnd() % 8 ? 0 : IBV_SEND_FENCE);

	if (H)
		f = rnd() % 2 ? (uint32_t)rnd() : f ^ (1u << (rnd() % 8));
	return f;
}

static void fill_random(void *p, size_t n)
{
	for (size_t b = 0; b < n; b += 8) {
		uint64_t r = rnd();

		memcpy((uint8_t *)p + b, &r, n - b < 8 ? n - b : 8);
	}
}

/* A send WQE for QP `q` in `w` (a slot of `elem` bytes), hostile at rate h. */
static void gen_send(struct hq *q, struct rxe_send_wqe *w, size_t elem, int h)
{
	size_t room = elem - sizeof(*w);
	uint32_t max_sges = room / sizeof(struct rxe_sge), nsge, len = 0;
	uint32_t o;

	if (h == 100 && rnd() % 4 == 0) {
		fill_random(w, elem);
		opcode_seen[q->type][w->wr.opcode < 32 ? w->wr.opcode : 32]++;
		return;
	}
	memset(w, 0, sizeof(*w));
	o = pick_opcode(q->type, h);
	w->wr.wr_id = rnd();
	w->wr.opcode = o;
	w->wr.send_flags = pick_flags(h);
	w->wr.ex.imm_data = (uint32_t)rnd();
	switch (o) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		w->wr.wr.rdma.remote_addr = remote_addr(h, 0);
		w->wr.wr.rdma.rkey = rkey(h);
		w->iova = w->wr.wr.rdma.remote_addr;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w->wr.wr.atomic.remote_addr = remote_addr(h, 1);
		w->wr.wr.atomic.compare_add = rnd();
		w->wr.wr.atomic.swap = rnd();
		w->wr.wr.atomic.rkey = rkey(h);
		w->iova = w->wr.wr.atomic.remote_addr;
		break;
	case IBV_WR_LOCAL_INV:
	case IBV_WR_SEND_WITH_INV:
		w->wr.ex.invalidate_rkey = rnd() % 2 ? mw2->rkey : edge_key();
		break;
	case IBV_WR_BIND_MW: {
		struct ibv_mw *m = rnd() % 2 ? mw1 : mw2;

		w->wr.wr.mw.addr = (uintptr_t)mem + rnd() % HALF;
		w->wr.wr.mw.length = rnd() % HALF;
		w->wr.wr.mw.mr_lkey = H ? edge_key() : mr->lkey;
		w->wr.wr.mw.mw_rkey = H ? edge_key() : m->rkey;
		w->wr.wr.mw.rkey = H ? (uint32_t)rnd() : (m->rkey & ~0xffu) | ((m->rkey + 1) & 0xff);
		w->wr.wr.mw.access = H ? (uint32_t)rnd() : IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		if (H)
			w->wr.wr.mw.addr = edge_addr();
		if (H)
			w->wr.wr.mw.length = rnd() % 2 ? ~0ull : rnd();
		break;
	}
	default:
		break;
	}
	if (q->type == 2) {
		static const uint32_t qpns[] = { 0, 1, 0xffffff, 0x800000 };

		w->wr.wr.ud.remote_qpn = rnd() % 4 ? qs[4 + rnd() % 2].qp->qp_num : qs[rnd() % 4].qp->qp_num;
		w->wr.wr.ud.remote_qkey = rnd() % 8 ? 0x1234 : 0x80000000u;
		w->wr.wr.ud.ah_num = ah_num;
		if (H)
			w->wr.wr.ud.remote_qpn = rnd() % 2 ? qpns[rnd() % 4] : (uint32_t)rnd();
		if (H)
			w->wr.wr.ud.remote_qkey = (uint32_t)rnd();
		if (H)
			w->wr.wr.ud.pkey_index = (uint16_t)rnd();
		if (rnd() % 8 == 0) {
			/* The legacy address vector, good or random. */
			w->wr.wr.ud.ah_num = 0;
			w->wr.wr.ud.av = good_av;
			if (H)
				fill_random(&w->wr.wr.ud.av, sizeof(w->wr.wr.ud.av));
		} else if (H) {
			static const uint32_t nums[] = { 0, 32767, 32768, 0xffffffffu, 2 };

			w->wr.wr.ud.ah_num = rnd() % 2 ? nums[rnd() % 5] : (uint32_t)rnd();
		}
	}
	if ((o <= IBV_WR_SEND_WITH_IMM || o == IBV_WR_SEND_WITH_INV) && rnd() % 6 == 0)
		w->wr.send_flags |= IBV_SEND_INLINE;
	if (w->wr.send_flags & IBV_SEND_INLINE) {
		const uint32_t l[] = { 0, 1, 17, q->max_inline, q->max_inline + 1, room, room + 1, 512, 513 };

		len = H ? (rnd() % 2 ? l[rnd() % 9] : (uint32_t)rnd()) : rnd() % (q->max_inline + 1);
		fill_random(w->dma.inline_data, len < room ? len : room);
	} else if (o == IBV_WR_ATOMIC_CMP_AND_SWP || o == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		nsge = 1;
		local_sge(&w->dma.sge[0], h);
		w->dma.sge[0].length = H ? edge_len() : 8;
		w->dma.sge[0].addr &= H ? ~0ull : ~7ull;
		len = w->dma.sge[0].length;
		w->dma.num_sge = H ? (uint32_t)rnd() % 4 : 1;
	} else if (o != IBV_WR_BIND_MW && o != IBV_WR_LOCAL_INV) {
		nsge = rnd() % (q->max_sge + 1);
		if (H) {
			const uint32_t n[] = { 0, q->max_sge, q->max_sge + 1, max_sges, max_sges + 1, 32, 33, 0xffffffffu };

			nsge = n[rnd() % 8];
		}
		for (uint32_t i = 0; i < nsge && i < max_sges; i++) {
			local_sge(&w->dma.sge[i], h);
			len += w->dma.sge[i].length;
		}
		w->dma.num_sge = nsge;
	}
	w->dma.length = H ? (uint32_t)rnd() : len;
	w->dma.resid = H ? (uint32_t)rnd() : w->dma.length;
	if (H)
		w->dma.cur_sge = rnd() % 2 ? (uint32_t)rnd() : rnd() % 40;
	if (H)
		w->dma.sge_offset = (uint32_t)rnd();
	if (H) {
		w->status = (uint32_t)rnd();
		w->state = (uint32_t)rnd();
		w->mask = (uint32_t)rnd();
		w->first_psn = (uint32_t)rnd();
		w->last_psn = (uint32_t)rnd();
		w->ssn = (uint32_t)rnd();
		w->has_rd_atomic = (uint32_t)rnd();
	}
	if (H)
		w->wr.reserved = (uint32_t)rnd();
}

/* A receive WQE in `w` (a slot of `elem` bytes) for `max_sge` entries. */
static void gen_recv(struct rxe_recv_wqe *w, size_t elem, uint32_t max_sge, int h)
{
	uint32_t room = (elem - sizeof(*w)) / sizeof(struct rxe_sge), nsge, len = 0;

	if (h == 100 && rnd() % 4 == 0) {
		fill_random(w, elem);
		return;
	}
	memset(w, 0, sizeof(*w));
	w->wr_id = rnd();
	nsge = 1 + rnd() % max_sge;
	if (H) {
		const uint32_t n[] = { 0, max_sge + 1, room, room + 1, 0xffffffffu, 32 };

		nsge = n[rnd() % 6];
	}
	for (uint32_t i = 0; i < nsge && i < room; i++) {
		/* Receives land in the first half, overlapping each other. */
		local_sge(&w->dma.sge[i], h);
		if (!H)
			w->dma.sge[i].length = 256 + rnd() % 4096;
		len += w->dma.sge[i].length;
	}
	w->dma.num_sge = nsge;
	w->dma.length = H ? (uint32_t)rnd() : len;
	w->dma.resid = H ? (uint32_t)rnd() : len;
	if (H)
		w->dma.cur_sge = (uint32_t)rnd();
	if (H)
		w->dma.sge_offset = (uint32_t)rnd();
}

/* ---- Rings ---- */

static void *slot(struct rxe_queue_buf *r, uint32_t i)
{
	return r->data + ((size_t)(i & r->index_mask) << r->log2_elem_size);
}

/* Writes up to n WQEs at the producer index and publishes them. */
static uint32_t ring_post(struct rxe_queue_buf *r, int kind, struct hq *q, uint32_t n, int h)
{
	uint32_t mask = r->index_mask, prod = load_idx(&r->producer_index) & mask;
	uint32_t room = (load_idx(&r->consumer_index) - prod - 1) & mask;
	size_t elem = (size_t)1 << r->log2_elem_size;

	/* Now and then past the consumer (the ring overfull). */
	if (n > room && rnd() % 8)
		n = room;
	if (n > mask)
		n = mask;
	for (uint32_t i = 0; i < n; i++) {
		if (kind == 0)
			gen_send(q, slot(r, prod + i), elem, h);
		else
			gen_recv(slot(r, prod + i), elem, q ? q->max_rsge : 8, h);
	}
	/* Now and then anywhere (masked: librxe indexes the ring with it
	 * unmasked, in this process). */
	store_idx(&r->producer_index, (rnd() % 64 ? prod + n : (uint32_t)rnd()) & mask);
	posted += n;
	return n;
}

/* librxe's doorbell, counted and timed by the watchdog. */
static int doorbell(struct ibv_qp *qp)
{
	doorbells++;
	return CALL("doorbell", rrxe_doorbell(ctx, qp->handle));
}

/* ---- Work requests through the verbs ---- */

static void verbs_sge(struct ibv_sge *s, int h, int inl)
{
	struct rxe_sge r;

	local_sge(&r, h);
	s->addr = r.addr;
	s->length = r.length;
	s->lkey = r.lkey;
	/* Inline data is copied by librxe from these addresses: keep them
	 * inside the buffer. */
	if (inl) {
		s->addr = (uintptr_t)mem + rnd() % (HALF - 1024);
		s->length = rnd() % 4 ? rnd() % 64 : rnd() % 1024;
	}
}

static void verbs_send(struct hq *q, int h)
{
	struct ibv_send_wr wr[8], *bad = NULL;
	static struct ibv_sge sge[8][VSGE];
	int n = 1 + rnd() % 8, ok;

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < n; i++) {
		struct ibv_send_wr *w = &wr[i];
		uint32_t o = pick_opcode(q->type, h);
		int inl;

		w->wr_id = rnd();
		w->opcode = o;
		w->send_flags = pick_flags(h);
		if ((o <= IBV_WR_SEND_WITH_IMM || o == IBV_WR_SEND_WITH_INV) && rnd() % 6 == 0)
			w->send_flags |= IBV_SEND_INLINE;
		inl = !!(w->send_flags & IBV_SEND_INLINE);
		w->imm_data = (uint32_t)rnd();
		/* librxe reads num_sge entries (a negative count would
		 * make it copy past its WQE, in this process). */
		w->num_sge = rnd() % (q->max_sge + 1);
		if (H)
			w->num_sge = rnd() % 2 ? q->max_sge + 1 : (int)(rnd() % VSGE);
		for (int k = 0; k < VSGE; k++)
			verbs_sge(&sge[i][k], h, inl);
		w->sg_list = sge[i];
		w->wr.rdma.remote_addr = remote_addr(h, o == IBV_WR_ATOMIC_CMP_AND_SWP ||
						      o == IBV_WR_ATOMIC_FETCH_AND_ADD);
		w->wr.rdma.rkey = rkey(h);
		if (o == IBV_WR_ATOMIC_CMP_AND_SWP || o == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			w->wr.atomic.rkey = rkey(h);
			w->wr.atomic.compare_add = rnd();
			w->wr.atomic.swap = rnd();
		}
		if (q->type == 2) {
			/* A real AH or random bytes where librxe looks for one
			 * (it does for every opcode on a UD QP). */
			w->wr.ud.ah = rnd() % 3 ? ah : (struct ibv_ah *)fake_ah;
			fill_random(fake_ah, sizeof(fake_ah));
			w->wr.ud.remote_qpn = qs[4 + rnd() % 2].qp->qp_num;
			w->wr.ud.remote_qkey = H ? (uint32_t)rnd() : 0x1234;
		}
		if (o == IBV_WR_BIND_MW) {
			w->bind_mw.mw = rnd() % 2 ? mw1 : mw2;
			w->bind_mw.rkey = H ? (uint32_t)rnd() : ibv_inc_rkey(w->bind_mw.mw->rkey);
			w->bind_mw.bind_info.mr = rnd() % 4 ? mr : mr2;
			w->bind_mw.bind_info.addr = H ? edge_addr() : (uintptr_t)mem + rnd() % HALF;
			w->bind_mw.bind_info.length = H ? rnd() : rnd() % HALF;
			w->bind_mw.bind_info.mw_access_flags = H ? (unsigned)rnd() : IBV_ACCESS_REMOTE_WRITE;
			if (!H)
				w->num_sge = 0;
		}
		if (o == IBV_WR_LOCAL_INV || o == IBV_WR_SEND_WITH_INV)
			w->invalidate_rkey = rnd() % 2 ? mw2->rkey : edge_key();
		w->next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	CALL("ibv_post_send", ibv_post_send(q->qp, wr, &bad));
	ok = bad ? (int)(bad - wr) : n;
	posted += ok;
	q->verbs_wrs += ok;
}

static void verbs_recv(struct hq *q, int h)
{
	struct ibv_recv_wr wr[8], *bad = NULL;
	static struct ibv_sge sge[8][VSGE];
	uint32_t max = q ? q->max_rsge : 8;
	int n = 1 + rnd() % 8, ok;

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < n; i++) {
		wr[i].wr_id = rnd();
		wr[i].num_sge = 1 + rnd() % max;
		if (H)
			wr[i].num_sge = rnd() % 2 ? (int)max + 1 : (int)(rnd() % VSGE);
		for (int k = 0; k < VSGE; k++) {
			verbs_sge(&sge[i][k], h, 0);
			if (!H)
				sge[i][k].length = 256 + rnd() % 4096;
		}
		wr[i].sg_list = sge[i];
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	if (q)
		CALL("ibv_post_recv", ibv_post_recv(q->qp, wr, &bad));
	else
		CALL("ibv_post_srq_recv", ibv_post_srq_recv(srq, wr, &bad));
	ok = bad ? (int)(bad - wr) : n;
	posted += ok;
	if (q)
		q->recv_wqes += ok;
	else
		srq_wqes += ok;
}

/* ---- QP states ---- */

static int qp_state(struct hq *q)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (CALL("ibv_query_qp", ibv_query_qp(q->qp, &a, IBV_QP_STATE, &ia)))
		return -1;
	return a.qp_state;
}

/* RESET, INIT, RTR, RTS with random transport attributes. */
static int bring_up(struct hq *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int ud = q->type == 2, rc = q->type == 0;
	const int access[] = { IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
			       IBV_ACCESS_REMOTE_WRITE, 0, IBV_ACCESS_REMOTE_READ };

	if (CALL("modify_qp RESET", ibv_modify_qp(q->qp, &a, IBV_QP_STATE)))
		FAIL("%s: RESET: %s", q->name, strerror(errno));
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x1234,
				  .qp_access_flags = access[rnd() % 8 ? 0 : rnd() % 4] };
	if (CALL("modify_qp INIT", ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS))))
		FAIL("%s: INIT: %s", q->name, strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_256 + rnd() % 5;
	a.dest_qp_num = ud ? 0 : qs[q->peer].qp->qp_num;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1 + rnd() % 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (CALL("modify_qp RTR", ibv_modify_qp(q->qp, &a, IBV_QP_STATE |
					(ud ? 0 : IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN) |
					(rc ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0))))
		FAIL("%s: RTR: %s", q->name, strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	/* A lost packet is given up on after a retry or two of 8..64 us. */
	a.timeout = 1 + rnd() % 4;
	a.retry_cnt = rnd() % 2;
	a.rnr_retry = rnd() % 2;
	a.max_rd_atomic = 1 + rnd() % 16;
	if (CALL("modify_qp RTS", ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					(rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						      IBV_QP_MAX_QP_RD_ATOMIC : 0))))
		FAIL("%s: RTS: %s", q->name, strerror(errno));
	q->recycles++;
	return 0;
}

/* Takes QP i (and its peer) back to RTS when either is not there. */
static int ensure_rts(int i)
{
	struct hq *q = &qs[i], *p = q->peer >= 0 ? &qs[q->peer] : NULL;

	if (qp_state(q) == IBV_QPS_RTS && (!p || qp_state(p) == IBV_QPS_RTS))
		return 0;
	if (bring_up(q) || (p && bring_up(p)))
		return 1;
	return 0;
}

static void drain(void)
{
	struct ibv_wc wc[64];
	struct ibv_async_event ev;

	for (int c = 0; c < 2; c++)
		for (int k = 0, n; k < 64 && (n = ibv_poll_cq(cqs[c], 64, wc)) > 0; k++)
			for (int i = 0; i < n; i++)
				wcs[c][wc[i].status == IBV_WC_SUCCESS ? 0 : wc[i].status == IBV_WC_WR_FLUSH_ERR ? 1 : 2]++;
	while (CALL("ibv_get_async_event", ibv_get_async_event(ctx, &ev)) == 0)
		ibv_ack_async_event(&ev);
}

/* ---- Setup ---- */

static int setup(const char *dev)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 255, .max_sge = 8 } };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	uintptr_t m[4];
	int n;

	ctx = rrxe_open(dev);
	if (!ctx)
		FAIL("cannot open %s", dev);
	for (int i = 0; i < 16 && gid_index < 0; i++) {
		if (ibv_query_gid(ctx, 1, i, &gid))
			break;
		if (!memcmp(gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
			gid_index = i;
	}
	if (gid_index < 0)
		FAIL("no IPv4 GID on %s", dev);
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	mem = aligned_alloc(4096, MEM);
	mem2 = aligned_alloc(4096, MEM);
	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	if (!mem || !mem2 || !pd || !pd2)
		FAIL("setup: %s", strerror(errno));
	mr = ibv_reg_mr(pd, mem, MEM, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND);
	mr2 = ibv_reg_mr(pd2, mem2, MEM, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (!mr || !mr2 || !mw1 || !mw2)
		FAIL("MRs and MWs: %s", strerror(errno));
	new_rings(m, 4);
	for (int c = 0; c < 2; c++) {
		cqs[c] = ibv_create_cq(ctx, 4096, NULL, NULL, 0);
		if (!cqs[c] || new_rings(m, 4) != 1)
			FAIL("CQ %d: %s", c, strerror(errno));
		cq_ring[c] = (void *)m[0];
	}
	srq = ibv_create_srq(pd, &sa);
	if (!srq || new_rings(m, 4) != 1)
		FAIL("SRQ: %s", strerror(errno));
	srq_ring = (void *)m[0];
	for (int i = 0; i < 6; i++) {
		struct hq *q = &qs[i];

		ia.qp_type = q->type == 0 ? IBV_QPT_RC : q->type == 1 ? IBV_QPT_UC : IBV_QPT_UD;
		ia.send_cq = cqs[0];
		ia.recv_cq = cqs[1];
		ia.srq = i == 1 || i == 5 ? srq : NULL;
		ia.cap = (struct ibv_qp_cap){ .max_send_wr = 255, .max_recv_wr = 255, .max_send_sge = 8,
					      .max_recv_sge = 8, .max_inline_data = 256 };
		q->qp = ibv_create_qp(pd, &ia);
		if (!q->qp)
			FAIL("%s: create: %s", q->name, strerror(errno));
		q->max_sge = ia.cap.max_send_sge;
		q->max_inline = ia.cap.max_inline_data;
		q->max_rsge = ia.cap.max_recv_sge;
		n = new_rings(m, 4);
		if (n != (ia.srq ? 1 : 2))
			FAIL("%s: %d new mappings", q->name, n);
		for (int k = 0; k < n; k++) {
			struct rxe_queue_buf *r = (void *)m[k];

			/* The send ring has the larger slots (208 bytes and more). */
			if (n == 1 || r->log2_elem_size > ((struct rxe_queue_buf *)m[1 - k])->log2_elem_size)
				q->sq = r;
			else
				q->rq = r;
		}
	}
	for (int i = 0; i < 6; i++)
		if (bring_up(&qs[i]))
			return 1;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = gid_index;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		FAIL("AH: %s", strerror(errno));
	/* The AH's number: librxe writes it into the WQE. */
	{
		struct ibv_sge s = { (uintptr_t)mem, 16, mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;
		struct rxe_queue_buf *r = qs[4].sq;
		struct rxe_send_wqe *w;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qs[5].qp->qp_num;
		wr.wr.ud.remote_qkey = 0x1234;
		if (ibv_post_send(qs[4].qp, &wr, &bad))
			FAIL("first UD send: %s", strerror(errno));
		w = slot(r, load_idx(&r->producer_index) - 1);
		ah_num = w->wr.wr.ud.ah_num;
		if (!ah_num)
			FAIL("the AH has no number");
	}
	/* The address vector librxe embeds for an old kernel. */
	good_av.port_num = 1;
	good_av.network_type = RXE_NETWORK_TYPE_IPV4;
	memcpy(good_av.grh.dgid.raw, gid.raw, 16);
	good_av.grh.sgid_index = gid_index;
	good_av.grh.hop_limit = 64;
	good_av.sgid_addr._sockaddr_in.sin_family = AF_INET;
	memcpy(&good_av.sgid_addr._sockaddr_in.sin_addr, gid.raw + 12, 4);
	good_av.dgid_addr._sockaddr_in = good_av.sgid_addr._sockaddr_in;
	return 0;
}

/* Resizes CQ c with the racer on its ring; finds the new ring. */
static void resize_cq(int c)
{
	struct rxe_queue_buf *t[1] = { cq_ring[c] };
	int cqe = rnd() % 2 ? 1 + rnd() % 64 : 1024 + rnd() % 7168;
	uintptr_t m[4];

	race_begin(t, 1);
	CALL("ibv_resize_cq", ibv_resize_cq(cqs[c], cqe));
	race_end();
	/* librxe maps the new ring, often where the old one was. */
	if (new_rings(m, 4) == 1)
		cq_ring[c] = (void *)m[0];
	resizes++;
}

static void modify_srq(void)
{
	struct rxe_queue_buf *t[1] = { srq_ring };
	struct ibv_srq_attr a = { .max_wr = rnd() % 2 ? 1 + rnd() % 64 : 128 + rnd() % 1024,
				  .srq_limit = rnd() % 300 };
	int mask = rnd() % 3 == 0 ? IBV_SRQ_LIMIT : rnd() % 2 ? IBV_SRQ_MAX_WR : IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT;
	uintptr_t m[4];

	race_begin(t, 1);
	CALL("ibv_modify_srq", ibv_modify_srq(srq, &a, mask));
	race_end();
	if (new_rings(m, 4) == 1)
		srq_ring = (void *)m[0];
	srq_mods++;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER };
	pthread_t wt, rt;
	uint64_t total, missing = 0;
	double t0;
	int rc = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: %s DEV TOTAL [SEED] | %s DEV verify\n", argv[0], argv[0]);
		return 2;
	}
	if (!strcmp(argv[2], "verify"))
		return rrxe_verify_dev(argv[1]);
	total = strtoull(argv[2], NULL, 0);
	seed = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
	if (!seed)
		seed = 1;
	if (getenv("RRXE_STORM_LIMIT"))
		limit_s = atof(getenv("RRXE_STORM_LIMIT"));
	printf("# seed %llu\n", (unsigned long long)seed);
	fflush(stdout);
	sigaction(SIGSEGV, &sa, NULL);
	if (pthread_create(&wt, NULL, watchdog, NULL) || pthread_create(&rt, NULL, racer, NULL))
		FAIL("threads");
	if (setup(argv[1]))
		return 1;
	t0 = now();
	for (uint64_t b = 0; posted < total; b++) {
		/* Hostility of this batch: all-valid, a few bad fields, or mostly bad. */
		static const int hs[] = { 0, 2, 5, 10, 30, 60, 100, 100 };
		int h = hs[rnd() % 8], i = rnd() % 6, what = rnd() % 100;
		struct hq *q = &qs[i];

		if (ensure_rts(i))
			return 1;
		if (what < 50) {
			/* Send WQEs into the ring, the doorbell, now and
			 * then with the racer on the rings. */
			q->ring_wqes += ring_post(q->sq, 0, q, 1 + rnd() % 255, h);
			if (rnd() % 8 == 0) {
				struct rxe_queue_buf *t[3] = { q->sq, cq_ring[0], q->rq ? q->rq : srq_ring };

				race_begin(t, 3);
				doorbell(q->qp);
				race_end();
			} else {
				doorbell(q->qp);
			}
		} else if (what < 65) {
			verbs_send(q, h);
		} else if (what < 75) {
			/* Receive WQEs into a QP's receive ring or the SRQ. */
			if (q->rq)
				q->recv_wqes += ring_post(q->rq, 1, q, 1 + rnd() % 255, h);
			else
				srq_wqes += ring_post(srq_ring, 1, NULL, 1 + rnd() % 255, h);
		} else if (what < 85) {
			if (q->rq && rnd() % 2)
				verbs_recv(q, h);
			else
				verbs_recv(NULL, h);
		} else if (what < 91) {
			/* Full rings moved to ERR with the racer on them: the
			 * flush. */
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
			struct rxe_queue_buf *t[4] = { q->sq, q->rq ? q->rq : srq_ring, cq_ring[0], cq_ring[1] };

			ring_post(q->sq, 0, q, 255, h);
			if (q->rq)
				ring_post(q->rq, 1, q, 255, h);
			race_begin(t, 4);
			CALL("modify_qp ERR", ibv_modify_qp(q->qp, &a, IBV_QP_STATE));
			doorbell(q->qp);
			race_end();
			flushes++;
		} else if (what < 95) {
			resize_cq(rnd() % 2);
		} else {
			modify_srq();
		}
		if (b % 4 == 0 || what >= 85)
			drain();
	}
	/* The racer's writes landed where they should: it ran. */
	printf("# posted %llu hostile WQEs in %.1f s (%llu doorbells; %llu raced calls: %llu ERR flushes, %llu CQ resizes, %llu SRQ modifies)\n",
	       (unsigned long long)posted, now() - t0, (unsigned long long)doorbells, (unsigned long long)raced,
	       (unsigned long long)flushes, (unsigned long long)resizes, (unsigned long long)srq_mods);
	for (int i = 0; i < 6; i++)
		printf("# %s: %llu WRs through ibv_post_send, %llu receives, back to RTS %llu times\n", qs[i].name,
		       (unsigned long long)qs[i].verbs_wrs, (unsigned long long)qs[i].recv_wqes,
		       (unsigned long long)qs[i].recycles);
	printf("# SRQ: %llu receives; slowest call: %s, %.3f s\n", (unsigned long long)srq_wqes, slowest_op,
	       slowest);
	printf("# send completions: %llu successful, %llu flushed, %llu other; receive: %llu, %llu, %llu\n",
	       (unsigned long long)wcs[0][0], (unsigned long long)wcs[0][1], (unsigned long long)wcs[0][2],
	       (unsigned long long)wcs[1][0], (unsigned long long)wcs[1][1], (unsigned long long)wcs[1][2]);
	for (int t = 0; t < 3; t++)
		for (int o = 0; o < NOPS; o++)
			if (!opcode_seen[t][o]) {
				fprintf(stderr, "opcode %d was never posted on a %s QP\n", o,
					t == 0 ? "RC" : t == 1 ? "UC" : "UD");
				missing++;
			}
	if (posted < total)
		FAIL("only %llu WQEs posted", (unsigned long long)posted);
	if (missing)
		rc = 1;
	/* The objects are left to the kernel's cleanup at exit. */
	return rc;
}
