// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_rc_test DEV MODE: RC (reliable connected) traffic between QPs of one
 * device, connected to each other in loopback through the device's
 * IPv4-mapped GID, through stock libibverbs + librxe only. Data is compared
 * byte for byte and every completion's status, opcode, wr_id, byte_len and
 * immediate is checked; a rejected operation must leave its target exactly
 * as it was. An error moves a QP to ERR, so each error case runs on a fresh
 * pair of QPs. Each mode prints what went wrong and exits non-zero on
 * failure, 0 on success.
 *
 *   send        SEND gathered from two SGEs and scattered into a 3-SGE
 *               receive; SEND with immediate; a 0-byte SEND; 100 SENDs
 *               (half of them inline) with one signaled per 10
 *   write_read  RDMA WRITE of 64 KiB; WRITE with immediate; RDMA READ of
 *               64 KiB + 1, of 1 byte and into two SGEs; zero-length WRITE
 *               and READ with a key that names nothing
 *   atomic      FETCH_AND_ADD, CMP_AND_SWP that swaps and one that does
 *               not; two QP pairs racing 200 fetch_add(1) each on one word
 *   rnr         a SEND with no receive posted: RNR retries exhausted at
 *               rnr_retry 0; with rnr_retry 7 it waits for the receive
 *   retry       a WRITE to a QP that was destroyed: three transport
 *               retries on a timer that backs off, then RETRY_EXC_ERR
 *               and the QP in ERR; the port counters count them. Then
 *               at retry_cnt 7: seven retries, not retries for ever (7
 *               means "without limit" for RNR retries alone)
 *   flush_err   after a failed WRITE both QPs are in ERR and every WQE
 *               behind it, later ones and the receives flush
 *   security    remote access violations (foreign PD, wrong key, past the
 *               MR, u64 wrap, MR or QP without the right, misaligned
 *               atomic, an invalidated window, another QP's window)
 *   mw          memory windows: type 1 bound with ibv_bind_mw, at its
 *               bounds and one byte out, unbound; a zero-based type 2
 *               window; SEND_WITH_INV; failing binds; a deallocated window
 *   atomic_align atomics and ATOMIC WRITE whose VA is aligned but whose
 *               target in memory is not (zero-based windows and MRs at an
 *               address 4 mod 8), and the other way round: invalid requests
 *   flush       FLUSH (written into the send ring: librxe 44 cannot post
 *               it) needs the MR's and the responder QP's flush rights; a
 *               FLUSH of no placement type is an invalid request whatever
 *               its rkey
 *   reset       RESET drops what is in flight without a completion: a SEND
 *               RNR-looping (RTS -> RESET); a SEND failed halfway, the
 *               requester in ERR and the responder holding its receive
 *               mid-message (ERR and RTS -> RESET), RC and UC; receives
 *               posted before. Reconnected with new PSNs, only the new
 *               SEND (and an RC READ) completes, into a new receive
 *   ack_destroy the responder destroys its QP the moment its receive
 *               completes (woken by the completion event, it preempts the
 *               requester's doorbell), 100 times: the ACK of that SEND
 *               must still reach the requester, whose SEND completes with
 *               SUCCESS (rdma_rxe's destroy waits for its responder, which
 *               sends the ACK; rdma_client destroys its QP so, and
 *               rdma_server's SEND, which arrived, would fail with
 *               RETRY_EXC_ERR)
 *   ack_error   the same, the responder moving its QP to ERR instead (as
 *               rdma_disconnect does, which rdma_client calls the moment
 *               its receive completes): the ACK still goes out
 *
 * The PSN of the first direction starts just below the 24-bit wrap, so the
 * bigger transfers cross it.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rrxe_test.h"

#define BUF (1 << 20)
#define CQE 512
#define WAIT_MS 10000		/* per completion; the guest may be emulated */
#define PSN_A 0xffffc0		/* requester -> responder: wraps after 64 packets */
#define PSN_B 0x000123		/* responder -> requester */

#define REMOTE_ALL (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define MR_ALL (IBV_ACCESS_LOCAL_WRITE | REMOTE_ALL | IBV_ACCESS_MW_BIND)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint8_t *src, *dst, *saved;
static struct ibv_mr *smr, *dmr;
static union ibv_gid gid;
static int gid_index = -1;
static struct ibv_wc last;	/* the completion expect() accepted last */

/* One QP with its own send and receive CQs. */
struct end {
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_cq *scq, *rcq;
	struct rxe_queue_buf *sq;	/* librxe's mapping of the send ring */
};

/* a is the requester, b the responder; they are connected both ways. */
struct pair {
	struct end a, b;
};

struct popt {
	int b_access;		/* b's qp_access_flags */
	uint8_t rnr_retry;	/* both QPs' RNR retry count */
	uint8_t min_rnr_timer;	/* both QPs' RNR NAK timer */
	bool ex;		/* a made with ibv_create_qp_ex (atomic send ops) */
	uint8_t timeout;	/* both QPs' local ACK timeout */
	uint8_t retry_cnt;	/* both QPs' transport retry count */
	bool uc;		/* UC QPs instead of RC (not with ex) */
};

static const struct popt def = { .b_access = REMOTE_ALL, .rnr_retry = 7, .min_rnr_timer = 12,
				 .timeout = 14, .retry_cnt = 7 };

static int find_gid(void)
{
	for (int i = 0; i < 16; i++) {
		if (ibv_query_gid(ctx, 1, i, &gid))
			break;
		if (!memcmp(gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
			gid_index = i;
			return 0;
		}
	}
	return -1;
}

static void pattern(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 29 + seed * 101 + (i >> 9) + 1);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Waits up to `ms` for one completion: 1 got one, 0 none, -1 poll error. */
static int poll_wc(struct ibv_cq *cq, struct ibv_wc *wc, long ms)
{
	long end = now_ms() + ms;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n < 0 ? -1 : 1;
		if (now_ms() > end)
			return 0;
		usleep(100);
	}
}

/*
 * The next completion on `cq` must be `id` with status `st`; on success
 * also opcode `op` and byte_len `len` unless they are -1. It is left in
 * `last` for further checks.
 */
static int expect(struct ibv_cq *cq, const char *what, uint64_t id, enum ibv_wc_status st, int op, long len)
{
	struct ibv_wc wc;
	int n = poll_wc(cq, &wc, WAIT_MS);

	if (n < 0)
		FAIL("%s: ibv_poll_cq failed", what);
	if (!n)
		FAIL("%s: no completion (wr_id %llu) within %d ms", what, (unsigned long long)id, WAIT_MS);
	if (wc.wr_id != id || wc.status != st ||
	    (st == IBV_WC_SUCCESS && op >= 0 && (int)wc.opcode != op) ||
	    (st == IBV_WC_SUCCESS && len >= 0 && (long)wc.byte_len != len))
		FAIL("%s: completion wr_id %llu status %s (%d) opcode %d byte_len %u; expected wr_id %llu status %s opcode %d byte_len %ld",
		     what, (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.status, wc.opcode,
		     wc.byte_len, (unsigned long long)id, ibv_wc_status_str(st), op, len);
	last = wc;
	return 0;
}

/* Nothing completes on `cq` for `ms`. */
static int quiet(struct ibv_cq *cq, const char *what, long ms)
{
	struct ibv_wc wc;
	int n = poll_wc(cq, &wc, ms);

	if (n < 0)
		FAIL("%s: ibv_poll_cq failed", what);
	if (n)
		FAIL("%s: unexpected completion wr_id %llu status %s opcode %d", what,
		     (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode);
	return 0;
}

/*
 * The mappings of the uverbs device that appeared since the last call (a
 * QP's rings, to write WQEs librxe 44 cannot post: FLUSH, ATOMIC WRITE).
 */
#define MAXMAP 64
static uintptr_t known_maps[MAXMAP];
static int nknown_maps;

static int new_maps(uintptr_t *out, int max)
{
	uintptr_t cur[MAXMAP];
	int ncur = 0, nout = 0;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && ncur < MAXMAP) {
		unsigned long lo;

		if (strstr(line, "/dev/infiniband/uverbs") && sscanf(line, "%lx-", &lo) == 1)
			cur[ncur++] = lo;
	}
	fclose(f);
	for (int i = 0; i < ncur; i++) {
		bool old = false;

		for (int k = 0; k < nknown_maps; k++)
			old |= known_maps[k] == cur[i];
		if (!old && nout < max)
			out[nout++] = cur[i];
	}
	memcpy(known_maps, cur, sizeof(cur[0]) * ncur);
	nknown_maps = ncur;
	return nout;
}

/* The completion channel of the next make_end()'s receive CQ, if any. */
static struct ibv_comp_channel *rcq_channel;

static int make_end(struct end *e, bool ex, enum ibv_qp_type type)
{
	uintptr_t m[4];
	int n;
	struct ibv_qp_cap cap = { .max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = 4,
				  .max_recv_sge = 4, .max_inline_data = 64 };

	memset(e, 0, sizeof(*e));
	e->scq = ibv_create_cq(ctx, CQE, NULL, NULL, 0);
	e->rcq = ibv_create_cq(ctx, CQE, NULL, rcq_channel, 0);
	if (!e->scq || !e->rcq)
		FAIL("create CQs: %s", strerror(errno));
	if (ex) {
		struct ibv_qp_init_attr_ex ia = {
			.send_cq = e->scq, .recv_cq = e->rcq, .cap = cap, .qp_type = IBV_QPT_RC,
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = pd,
			.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_RDMA_WRITE |
					  IBV_QP_EX_WITH_SEND,
		};

		e->qp = ibv_create_qp_ex(ctx, &ia);
		if (e->qp)
			e->qpx = ibv_qp_to_qp_ex(e->qp);
		if (!e->qp || !e->qpx)
			FAIL("ibv_create_qp_ex with atomic send ops: %s", strerror(errno));
	} else {
		struct ibv_qp_init_attr ia = { .send_cq = e->scq, .recv_cq = e->rcq, .cap = cap,
					       .qp_type = type };

		new_maps(m, 4);
		e->qp = ibv_create_qp(pd, &ia);
		if (!e->qp)
			FAIL("create %s QP: %s", type == IBV_QPT_UC ? "UC" : "RC", strerror(errno));
		/* Its send and receive rings; the send ring has the larger slots. */
		n = new_maps(m, 4);
		if (n != 2)
			FAIL("create RC QP: %d new mappings of the device, not 2", n);
		e->sq = (struct rxe_queue_buf *)m[0];
		if (e->sq->log2_elem_size < ((struct rxe_queue_buf *)m[1])->log2_elem_size)
			e->sq = (struct rxe_queue_buf *)m[1];
	}
	return 0;
}

/*
 * Writes a signaled WQE with `wr_id` and `opcode` into `e`'s send ring
 * (its wr.wr union and the first 8 bytes of its data from `wr` and `data`)
 * and rings the doorbell as librxe does: POST_SEND without work requests.
 */
/* dma.length (and resid) of the next post_raw() WQEs. */
static uint32_t raw_dma_len;

static int post_raw(struct end *e, uint64_t wr_id, uint32_t opcode, const void *wr, size_t wr_len,
		    const void *data)
{
	struct rxe_queue_buf *q = e->sq;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} req;
	struct ib_uverbs_post_send_resp resp;
	struct rxe_send_wqe *w;
	uint32_t prod;

	if (!q)
		FAIL("no send ring mapped for QP %u", e->qp->qp_num);
	prod = __atomic_load_n(&q->producer_index, __ATOMIC_RELAXED) & q->index_mask;
	w = (void *)(q->data + ((size_t)prod << q->log2_elem_size));
	memset(w, 0, sizeof(*w));
	w->wr.wr_id = wr_id;
	w->wr.opcode = opcode;
	w->wr.send_flags = IBV_SEND_SIGNALED;
	memcpy(&w->wr.wr, wr, wr_len);
	/* librxe puts a FLUSH's length in dma.length and dma.resid. */
	w->dma.length = w->dma.resid = raw_dma_len;
	if (data)
		memcpy(w->dma.inline_data, data, 8);
	__atomic_store_n(&q->producer_index, (prod + 1) & q->index_mask, __ATOMIC_RELEASE);
	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.qp_handle = e->qp->handle;
	req.cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	if (write(ctx->cmd_fd, &req, sizeof(req)) != sizeof(req))
		FAIL("doorbell of QP %u: %s", e->qp->qp_num, strerror(errno));
	return 0;
}

/*
 * Takes `q` through INIT and RTR to RTS, connected to QP number `peer` (a
 * UC QP with the attributes UC takes, and remote write access at most).
 */
static int connect_qp(struct ibv_qp *q, uint32_t peer, int access, uint32_t sq_psn, uint32_t rq_psn,
		      const struct popt *o)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
				 .qp_access_flags = o->uc ? access & IBV_ACCESS_REMOTE_WRITE : access };
	int rc_rtr = o->uc ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	int rc_rts = o->uc ? 0 : IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	int ret;

	ret = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		FAIL("QP %u to INIT: %s", q->qp_num, strerror(ret));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = o->min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	ret = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | rc_rtr);
	if (ret)
		FAIL("QP %u to RTR: %s", q->qp_num, strerror(ret));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = o->rnr_retry;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 16;
	ret = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | rc_rts);
	if (ret)
		FAIL("QP %u to RTS: %s", q->qp_num, strerror(ret));
	return 0;
}

static int pair_new(struct pair *p, const struct popt *o)
{
	enum ibv_qp_type t = o->uc ? IBV_QPT_UC : IBV_QPT_RC;

	if (make_end(&p->a, o->ex, t) || make_end(&p->b, false, t))
		return 1;
	if (connect_qp(p->a.qp, p->b.qp->qp_num, REMOTE_ALL, PSN_A, PSN_B, o) ||
	    connect_qp(p->b.qp, p->a.qp->qp_num, o->b_access, PSN_B, PSN_A, o))
		return 1;
	return 0;
}

static int end_free(struct end *e)
{
	int ret;

	if (e->qp && (ret = ibv_destroy_qp(e->qp)))
		FAIL("destroy QP: %s", strerror(ret));
	if (e->scq && (ret = ibv_destroy_cq(e->scq)))
		FAIL("destroy CQ: %s", strerror(ret));
	if (e->rcq && (ret = ibv_destroy_cq(e->rcq)))
		FAIL("destroy CQ: %s", strerror(ret));
	memset(e, 0, sizeof(*e));
	return 0;
}

static int pair_free(struct pair *p)
{
	return end_free(&p->a) || end_free(&p->b);
}

static enum ibv_qp_state qp_state(struct ibv_qp *q)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(q, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

static const char *op_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM: return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_RDMA_READ: return "RDMA_READ";
	case IBV_WR_SEND: return "SEND";
	case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
	case IBV_WR_SEND_WITH_INV: return "SEND_WITH_INV";
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return "FETCH_AND_ADD";
	case IBV_WR_ATOMIC_CMP_AND_SWP: return "CMP_AND_SWP";
	default: return "opcode";
	}
}

/* RDMA WRITE (with immediate) or READ of `len` bytes at local `l` (no SGE if 0). */
static int post_rdma(struct ibv_qp *q, enum ibv_wr_opcode op, uint64_t id, void *l, uint32_t len, uint32_t lkey,
		     uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct ibv_sge sge = { (uintptr_t)l, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = len ? 1 : 0, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(imm),
		.wr = { .rdma = { .remote_addr = raddr, .rkey = rkey } },
	}, *bad;
	int ret = ibv_post_send(q, &wr, &bad);

	if (ret)
		FAIL("post %s wr_id %llu: %s", op_name(op), (unsigned long long)id, strerror(ret));
	return 0;
}

/* A signaled SEND (op SEND, SEND_WITH_IMM or SEND_WITH_INV; `x` is imm or rkey). */
static int post_send1(struct ibv_qp *q, enum ibv_wr_opcode op, uint64_t id, void *l, uint32_t len, uint32_t x)
{
	struct ibv_sge sge = { (uintptr_t)l, len, smr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = len ? 1 : 0, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int ret;

	if (op == IBV_WR_SEND_WITH_IMM)
		wr.imm_data = htobe32(x);
	else if (op == IBV_WR_SEND_WITH_INV)
		wr.invalidate_rkey = x;
	ret = ibv_post_send(q, &wr, &bad);
	if (ret)
		FAIL("post %s wr_id %llu: %s", op_name(op), (unsigned long long)id, strerror(ret));
	return 0;
}

static int post_recv1(struct ibv_qp *q, uint64_t id, void *l, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)l, len, dmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = len ? 1 : 0 }, *bad;
	int ret = ibv_post_recv(q, &wr, &bad);

	if (ret)
		FAIL("post receive wr_id %llu: %s", (unsigned long long)id, strerror(ret));
	return 0;
}

/* A legacy atomic; the original value lands at local `res` (8 bytes in smr). */
static int post_atomic(struct ibv_qp *q, enum ibv_wr_opcode op, uint64_t id, uint64_t *res, uint64_t raddr,
		       uint32_t rkey, uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)res, 8, smr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.wr = { .atomic = { .remote_addr = raddr, .compare_add = cmp_add, .swap = swap, .rkey = rkey } },
	}, *bad;
	int ret = ibv_post_send(q, &wr, &bad);

	if (ret)
		FAIL("post %s wr_id %llu: %s", op_name(op), (unsigned long long)id, strerror(ret));
	return 0;
}

/* Binds type 2 window `mw` through `q`'s send queue; its new rkey in *rkey. */
static int bind2(struct end *e, struct ibv_mw *mw, struct ibv_mr *mr, void *addr, uint64_t len, int access,
		 uint32_t *rkey)
{
	uint32_t nk = ibv_inc_rkey(mw->rkey);
	struct ibv_send_wr wr = {
		.wr_id = 0xb1d2, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
		.bind_mw = { .mw = mw, .rkey = nk,
			     .bind_info = { .mr = mr, .addr = (uintptr_t)addr, .length = len,
					    .mw_access_flags = (unsigned int)access } },
	}, *bad;
	int ret = ibv_post_send(e->qp, &wr, &bad);

	if (ret)
		FAIL("post type 2 BIND_MW: %s", strerror(ret));
	if (expect(e->scq, "type 2 bind", 0xb1d2, IBV_WC_SUCCESS, IBV_WC_BIND_MW, -1))
		return 1;
	/* The provider does not track a type 2 window's key; the next bind names it. */
	mw->rkey = nk;
	*rkey = nk;
	return 0;
}

/* Binds type 1 window `mw` with ibv_bind_mw through `q`; status `st` expected. */
static int bind1(struct end *e, struct ibv_mw *mw, struct ibv_mr *mr, void *addr, uint64_t len, int access,
		 enum ibv_wc_status *st)
{
	struct ibv_mw_bind b = {
		.wr_id = 0xb1d1, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)addr, .length = len,
			       .mw_access_flags = (unsigned int)access },
	};
	struct ibv_wc wc;
	int ret = ibv_bind_mw(e->qp, mw, &b);

	if (ret)
		FAIL("ibv_bind_mw: %s", strerror(ret));
	ret = poll_wc(e->scq, &wc, WAIT_MS);
	if (ret <= 0)
		FAIL("ibv_bind_mw: no completion");
	if (wc.wr_id != 0xb1d1)
		FAIL("ibv_bind_mw: completion for wr_id %llu", (unsigned long long)wc.wr_id);
	if (wc.status == IBV_WC_SUCCESS && wc.opcode != IBV_WC_BIND_MW)
		FAIL("ibv_bind_mw: completion opcode %d, not BIND_MW", wc.opcode);
	*st = wc.status;
	return 0;
}

static int bind1_ok(struct end *e, struct ibv_mw *mw, struct ibv_mr *mr, void *addr, uint64_t len, int access)
{
	enum ibv_wc_status st;

	if (bind1(e, mw, mr, addr, len, access, &st))
		return 1;
	if (st != IBV_WC_SUCCESS)
		FAIL("ibv_bind_mw completed with %s", ibv_wc_status_str(st));
	return 0;
}

/* dst is byte for byte what was saved; names the first difference. */
static int dst_unchanged(const char *what)
{
	for (size_t i = 0; i < BUF; i++)
		if (dst[i] != saved[i])
			FAIL("%s: target byte %zu (dst+0x%zx) changed from 0x%02x to 0x%02x", what, i, i, saved[i],
			     dst[i]);
	return 0;
}

static void fill_dst(unsigned int seed)
{
	pattern(dst, BUF, seed);
	memcpy(saved, dst, BUF);
}

static int mode_send(void)
{
	uint32_t n = 10 * 1024 + 17;
	struct ibv_sge rs[3] = {
		{ (uintptr_t)dst, 4000, dmr->lkey },
		{ (uintptr_t)dst + 8192, 5000, dmr->lkey },
		{ (uintptr_t)dst + 20000, 4000, dmr->lkey },
	};
	struct ibv_sge ss[2] = {
		{ (uintptr_t)src + 3, 6000, smr->lkey },
		{ (uintptr_t)src + 100000, n - 6000, smr->lkey },
	};
	struct ibv_recv_wr rwr = { .wr_id = 10, .sg_list = rs, .num_sge = 3 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 1, .sg_list = ss, .num_sge = 2, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_recv_wr rw[100];
	struct ibv_sge rsg[100];
	struct ibv_send_wr sw[100];
	struct ibv_sge ssg[100];
	struct pair p;
	int ret;

	pattern(src, BUF, 1);
	memset(dst, 0xee, BUF);
	if (pair_new(&p, &def))
		return 1;

	/* 10257 bytes gathered from 6000 + 4257 and scattered 4000 + 5000 + 1257. */
	if ((ret = ibv_post_recv(p.b.qp, &rwr, &rbad)) || (ret = ibv_post_send(p.a.qp, &swr, &sbad)))
		FAIL("post SEND: %s", strerror(ret));
	if (expect(p.a.scq, "SEND", 1, IBV_WC_SUCCESS, IBV_WC_SEND, -1) ||
	    expect(p.b.rcq, "SEND's receive", 10, IBV_WC_SUCCESS, IBV_WC_RECV, n))
		return 1;
	if (last.wc_flags & IBV_WC_WITH_IMM)
		FAIL("plain SEND's receive has WITH_IMM");
	if (last.qp_num != p.b.qp->qp_num)
		FAIL("receive completion names QP %u, not %u", last.qp_num, p.b.qp->qp_num);
	{
		uint8_t *m = malloc(n);

		if (!m)
			FAIL("malloc");
		memcpy(m, src + 3, 6000);
		memcpy(m + 6000, src + 100000, n - 6000);
		if (memcmp(dst, m, 4000) || memcmp(dst + 8192, m + 4000, 5000) || memcmp(dst + 20000, m + 9000, n - 9000))
			FAIL("SEND data scattered wrongly");
		free(m);
	}
	if (dst[4000] != 0xee || dst[8192 + 5000] != 0xee || dst[20000 + n - 9000] != 0xee || dst[8191] != 0xee)
		FAIL("SEND wrote outside the receive SGEs");

	/* SEND with immediate. */
	if (post_recv1(p.b.qp, 11, dst + 40000, 2048) ||
	    post_send1(p.a.qp, IBV_WR_SEND_WITH_IMM, 2, src + 7, 1000, 0x12345678))
		return 1;
	if (expect(p.a.scq, "SEND_WITH_IMM", 2, IBV_WC_SUCCESS, IBV_WC_SEND, -1) ||
	    expect(p.b.rcq, "SEND_WITH_IMM's receive", 11, IBV_WC_SUCCESS, IBV_WC_RECV, 1000))
		return 1;
	if (!(last.wc_flags & IBV_WC_WITH_IMM) || be32toh(last.imm_data) != 0x12345678)
		FAIL("SEND_WITH_IMM: flags 0x%x imm 0x%x", last.wc_flags, be32toh(last.imm_data));
	if (memcmp(dst + 40000, src + 7, 1000) || dst[41000] != 0xee)
		FAIL("SEND_WITH_IMM data differ");

	/* A 0-byte SEND. */
	if (post_recv1(p.b.qp, 12, dst + 50000, 64) || post_send1(p.a.qp, IBV_WR_SEND, 3, NULL, 0, 0))
		return 1;
	if (expect(p.a.scq, "0-byte SEND", 3, IBV_WC_SUCCESS, IBV_WC_SEND, -1) ||
	    expect(p.b.rcq, "0-byte SEND's receive", 12, IBV_WC_SUCCESS, IBV_WC_RECV, 0))
		return 1;
	if (dst[50000] != 0xee)
		FAIL("0-byte SEND wrote data");

	/* 100 SENDs, every other one inline, one signaled per 10. */
	for (int i = 0; i < 100; i++) {
		rsg[i] = (struct ibv_sge){ (uintptr_t)dst + 200000 + i * 128, 128, dmr->lkey };
		rw[i] = (struct ibv_recv_wr){ .wr_id = 1000 + i, .sg_list = &rsg[i], .num_sge = 1,
					      .next = i < 99 ? &rw[i + 1] : NULL };
		ssg[i] = (struct ibv_sge){ (uintptr_t)src + 300000 + i * 128, 20 + i % 40, smr->lkey };
		sw[i] = (struct ibv_send_wr){ .wr_id = 2000 + i, .sg_list = &ssg[i], .num_sge = 1,
					      .opcode = IBV_WR_SEND, .next = i < 99 ? &sw[i + 1] : NULL };
		sw[i].send_flags = (i % 10 == 9 ? IBV_SEND_SIGNALED : 0) | (i % 2 ? IBV_SEND_INLINE : 0);
	}
	if ((ret = ibv_post_recv(p.b.qp, rw, &rbad)))
		FAIL("post 100 receives: %s", strerror(ret));
	if ((ret = ibv_post_send(p.a.qp, sw, &sbad)))
		FAIL("post 100 SENDs: %s (at wr_id %llu)", strerror(ret), (unsigned long long)sbad->wr_id);
	for (int i = 9; i < 100; i += 10)
		if (expect(p.a.scq, "every 10th SEND", 2000 + i, IBV_WC_SUCCESS, IBV_WC_SEND, -1))
			return 1;
	for (int i = 0; i < 100; i++) {
		char what[64];

		snprintf(what, sizeof(what), "receive %d of 100", i);
		if (expect(p.b.rcq, what, 1000 + i, IBV_WC_SUCCESS, IBV_WC_RECV, 20 + i % 40))
			return 1;
		if (memcmp(dst + 200000 + i * 128, src + 300000 + i * 128, 20 + i % 40))
			FAIL("SEND %d of 100: data differ", i);
		if (dst[200000 + i * 128 + 20 + i % 40] != 0xee)
			FAIL("SEND %d of 100 wrote past its length", i);
	}
	if (quiet(p.a.scq, "send CQ after 10 signaled of 100 SENDs", 100) ||
	    quiet(p.b.rcq, "receive CQ after 100 SENDs", 100))
		return 1;
	if (pair_free(&p))
		return 1;
	printf("send ok\n");
	return 0;
}

static int mode_write_read(void)
{
	struct pair p;
	uint32_t rn = 65536 + 1;

	pattern(src, BUF, 2);
	memset(dst, 0, BUF);
	if (pair_new(&p, &def))
		return 1;

	/* 64 KiB WRITE. */
	if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 1, src + 11, 65536, smr->lkey, (uintptr_t)dst + 4096, dmr->rkey, 0) ||
	    expect(p.a.scq, "64 KiB WRITE", 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1))
		return 1;
	if (memcmp(dst + 4096, src + 11, 65536))
		FAIL("64 KiB WRITE: data differ");
	if (dst[4095] || dst[4096 + 65536])
		FAIL("64 KiB WRITE spilled outside its range");
	if (quiet(p.b.rcq, "plain WRITE", 50))
		return 1;

	/* WRITE with immediate: consumes a receive, byte_len is the length. */
	if (post_recv1(p.b.qp, 20, NULL, 0) ||
	    post_rdma(p.a.qp, IBV_WR_RDMA_WRITE_WITH_IMM, 2, src + 70000, 3000, smr->lkey, (uintptr_t)dst + 200000,
		      dmr->rkey, 0xcafe0001))
		return 1;
	if (expect(p.a.scq, "WRITE_WITH_IMM", 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1) ||
	    expect(p.b.rcq, "WRITE_WITH_IMM's receive", 20, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, 3000))
		return 1;
	if (!(last.wc_flags & IBV_WC_WITH_IMM) || be32toh(last.imm_data) != 0xcafe0001)
		FAIL("WRITE_WITH_IMM: flags 0x%x imm 0x%x", last.wc_flags, be32toh(last.imm_data));
	if (memcmp(dst + 200000, src + 70000, 3000) || dst[203000])
		FAIL("WRITE_WITH_IMM: data differ");

	/* READs: 64 KiB + 1, 1 byte, 3000 bytes into two SGEs. */
	pattern(dst + 300000, 200000, 3);
	memset(src + 400000, 0, 200000);
	if (post_rdma(p.a.qp, IBV_WR_RDMA_READ, 3, src + 400000, rn, smr->lkey, (uintptr_t)dst + 300000, dmr->rkey, 0) ||
	    expect(p.a.scq, "64 KiB + 1 READ", 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, rn))
		return 1;
	if (memcmp(src + 400000, dst + 300000, rn))
		FAIL("64 KiB + 1 READ: data differ");
	if (src[400000 + rn])
		FAIL("64 KiB + 1 READ wrote past its length");
	if (post_rdma(p.a.qp, IBV_WR_RDMA_READ, 4, src + 480000, 1, smr->lkey, (uintptr_t)dst + 312345, dmr->rkey, 0) ||
	    expect(p.a.scq, "1-byte READ", 4, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 1))
		return 1;
	if (src[480000] != dst[312345] || src[480001] || src[479999])
		FAIL("1-byte READ: got 0x%02x, want 0x%02x (or spilled)", src[480000], dst[312345]);
	{
		struct ibv_sge sg[2] = { { (uintptr_t)src + 500000, 1000, smr->lkey },
					 { (uintptr_t)src + 510000, 2000, smr->lkey } };
		struct ibv_send_wr wr = { .wr_id = 5, .sg_list = sg, .num_sge = 2, .opcode = IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED,
					  .wr = { .rdma = { (uintptr_t)dst + 400000, dmr->rkey } } }, *bad;
		int ret = ibv_post_send(p.a.qp, &wr, &bad);

		if (ret)
			FAIL("post 2-SGE READ: %s", strerror(ret));
		if (expect(p.a.scq, "2-SGE READ", 5, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 3000))
			return 1;
		if (memcmp(src + 500000, dst + 400000, 1000) || memcmp(src + 510000, dst + 401000, 2000) ||
		    src[501000] || src[512000])
			FAIL("2-SGE READ scattered wrongly");
	}

	/* Zero-length WRITE and READ need no valid key or address (C9-88). */
	memcpy(saved, dst, BUF);
	if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 6, NULL, 0, 0, 0, 0xdead00, 0) ||
	    expect(p.a.scq, "zero-length WRITE with a bogus rkey", 6, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1) ||
	    post_rdma(p.a.qp, IBV_WR_RDMA_READ, 7, NULL, 0, 0, 0x1234, 0xbeef07, 0) ||
	    expect(p.a.scq, "zero-length READ with a bogus rkey", 7, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 0))
		return 1;
	if (dst_unchanged("zero-length WRITE"))
		return 1;
	/* The pair still works. */
	if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 8, src, 100, smr->lkey, (uintptr_t)dst, dmr->rkey, 0) ||
	    expect(p.a.scq, "WRITE after the zero-length ones", 8, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1))
		return 1;
	if (memcmp(dst, src, 100))
		FAIL("WRITE after the zero-length ones: data differ");
	if (pair_free(&p))
		return 1;
	printf("write_read ok\n");
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static int mode_atomic(void)
{
	volatile uint64_t *t = (volatile uint64_t *)(dst + 65536);
	uint64_t *res = (uint64_t *)src, v0 = 0x1000000000000005ull;
	uint64_t taddr = (uintptr_t)dst + 65536;
	struct pair p, q;
	uint64_t *r;

	memset(src, 0xff, 8192);
	*t = v0;
	if (pair_new(&p, &def))
		return 1;
	if (post_atomic(p.a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, &res[0], taddr, dmr->rkey, 0x10, 0) ||
	    expect(p.a.scq, "FETCH_AND_ADD", 1, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8))
		return 1;
	if (res[0] != v0 || *t != v0 + 0x10)
		FAIL("FETCH_AND_ADD: returned 0x%llx (want 0x%llx), memory 0x%llx (want 0x%llx)",
		     (unsigned long long)res[0], (unsigned long long)v0, (unsigned long long)*t,
		     (unsigned long long)(v0 + 0x10));
	if (post_atomic(p.a.qp, IBV_WR_ATOMIC_CMP_AND_SWP, 2, &res[1], taddr, dmr->rkey, v0 + 0x10,
			0xfeedface01234567ull) ||
	    expect(p.a.scq, "CMP_AND_SWP (equal)", 2, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8))
		return 1;
	if (res[1] != v0 + 0x10 || *t != 0xfeedface01234567ull)
		FAIL("CMP_AND_SWP (equal): returned 0x%llx, memory 0x%llx", (unsigned long long)res[1],
		     (unsigned long long)*t);
	if (post_atomic(p.a.qp, IBV_WR_ATOMIC_CMP_AND_SWP, 3, &res[2], taddr, dmr->rkey, 0x1111, 0x2222) ||
	    expect(p.a.scq, "CMP_AND_SWP (different)", 3, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8))
		return 1;
	if (res[2] != 0xfeedface01234567ull || *t != 0xfeedface01234567ull)
		FAIL("CMP_AND_SWP (different): returned 0x%llx, memory 0x%llx (must not have swapped)",
		     (unsigned long long)res[2], (unsigned long long)*t);
	if (dst[65535] != 0 || dst[65536 + 8] != 0)
		FAIL("atomics touched bytes next to the target");

	/* Two pairs race fetch_add(1) on one word. */
	if (pair_new(&q, &def))
		return 1;
	*t = 1000;
	r = (uint64_t *)(src + 4096);
	for (int i = 0; i < 200; i++)
		if (post_atomic(p.a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 100 + i, &r[2 * i], taddr, dmr->rkey, 1, 0) ||
		    post_atomic(q.a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 100 + i, &r[2 * i + 1], taddr, dmr->rkey, 1, 0))
			return 1;
	for (int i = 0; i < 200; i++)
		if (expect(p.a.scq, "racing fetch_add (first pair)", 100 + i, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8) ||
		    expect(q.a.scq, "racing fetch_add (second pair)", 100 + i, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8))
			return 1;
	if (*t != 1400)
		FAIL("400 fetch_add(1) from 1000 left %llu", (unsigned long long)*t);
	qsort(r, 400, sizeof(*r), cmp_u64);
	for (int i = 0; i < 400; i++)
		if (r[i] != 1000u + i)
			FAIL("returned values are not 1000..1399 each once: sorted[%d] = %llu", i,
			     (unsigned long long)r[i]);
	if (pair_free(&p) || pair_free(&q))
		return 1;
	printf("atomic ok\n");
	return 0;
}

static int mode_rnr(void)
{
	struct popt o = def;
	struct pair p;

	pattern(src, BUF, 4);
	memset(dst, 0, BUF);

	/* No receive, no RNR retries. */
	o.rnr_retry = 0;
	if (pair_new(&p, &o))
		return 1;
	if (post_send1(p.a.qp, IBV_WR_SEND, 1, src, 100, 0) ||
	    expect(p.a.scq, "SEND to a QP without receives, rnr_retry 0", 1, IBV_WC_RNR_RETRY_EXC_ERR, -1, -1))
		return 1;
	if (quiet(p.b.rcq, "responder after the RNR", 50) || pair_free(&p))
		return 1;

	/* Retries without limit, 0.01 ms RNR timer: the receive comes 200 ms late. */
	o.rnr_retry = 7;
	o.min_rnr_timer = 1;
	if (pair_new(&p, &o))
		return 1;
	if (post_send1(p.a.qp, IBV_WR_SEND, 2, src + 5, 2000, 0))
		return 1;
	if (quiet(p.a.scq, "SEND before its receive was posted", 200))
		return 1;
	if (post_recv1(p.b.qp, 30, dst + 100, 4096))
		return 1;
	if (expect(p.a.scq, "SEND retried until the receive came", 2, IBV_WC_SUCCESS, IBV_WC_SEND, -1) ||
	    expect(p.b.rcq, "the late receive", 30, IBV_WC_SUCCESS, IBV_WC_RECV, 2000))
		return 1;
	if (memcmp(dst + 100, src + 5, 2000) || dst[2100])
		FAIL("SEND after RNR retries: data differ");
	if (pair_free(&p))
		return 1;
	printf("rnr ok\n");
	return 0;
}

/* A port counter of the device under test; -1 when it cannot be read. */
static long long counter(const char *name)
{
	return rrxe_hw_counter(ibv_get_device_name(ctx->device), name);
}

/*
 * One round of mode_retry at retry_cnt `retries`; `*ms` is how long
 * RETRY_EXC_ERR took.
 */
static int retry_round(long *ms, int retries)
{
	/* 4.096 us * 2^12 = 16.8 ms; `retries` retries, then RETRY_EXC_ERR. */
	struct popt o = def;
	struct pair p;
	long long r0, x0, r1, x1;
	long t0, min_us = 0;
	char what[64];
	int ret;

	o.timeout = 12;
	o.retry_cnt = retries;
	pattern(src, BUF, 5);
	if (pair_new(&p, &o))
		return 1;
	/* The responder goes away: nothing answers the requester's packets. */
	ret = ibv_destroy_qp(p.b.qp);
	if (ret)
		FAIL("destroy the responder QP: %s", strerror(ret));
	p.b.qp = NULL;
	r0 = counter("completer_retry_err");
	x0 = counter("retry_exceeded_err");
	if (r0 < 0 || x0 < 0)
		FAIL("cannot read the retry counters");
	t0 = now_ms();
	snprintf(what, sizeof(what), "WRITE to a QP that is gone, retry_cnt %d", retries);
	if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 1, src, 3000, smr->lkey, (uintptr_t)dst, dmr->rkey, 0) ||
	    expect(p.a.scq, what, 1, IBV_WC_RETRY_EXC_ERR, -1, -1))
		return 1;
	*ms = now_ms() - t0;
	r1 = counter("completer_retry_err");
	x1 = counter("retry_exceeded_err");
	if (r1 - r0 != retries || x1 - x0 != 1)
		FAIL("retry counters went up by %lld and %lld, not %d and 1", r1 - r0, x1 - x0, retries);
	/*
	 * The timer doubles with each expiry, up to four times: at retry_cnt
	 * 3, 1 + 2 + 4 + 4 timeouts of 16.78 ms, 184.5 ms, pass before the
	 * error (a fixed timer: 67 ms). Nothing interrupts them, so none may
	 * be cut short; the millisecond clock read twice loses less than 1 ms.
	 */
	for (int i = 0; i <= retries; i++)
		min_us += 16777 << (i < 2 ? i : 2);
	if (*ms < min_us / 1000)
		FAIL("RETRY_EXC_ERR after %ld ms, before the backed-off timers (%ld.%ld ms) ran out", *ms,
		     min_us / 1000, min_us / 100 % 10);
	if (qp_state(p.a.qp) != IBV_QPS_ERR)
		FAIL("the requester is not in ERR after RETRY_EXC_ERR");
	if (pair_free(&p))
		return 1;
	return 0;
}

static int mode_retry(void)
{
	long ms[4];

	/*
	 * A timer cut short by a late tick (a deadline set from the coarse
	 * clock when it lagged) shows in some rounds, not all: four rounds.
	 */
	for (int i = 0; i < 4; i++) {
		if (retry_round(&ms[i], 3))
			return 1;
	}
	printf("retry ok: RETRY_EXC_ERR after %ld, %ld, %ld and %ld ms, 3 retries counted each time\n",
	       ms[0], ms[1], ms[2], ms[3]);
	/*
	 * retry_cnt 7 is seven retries, as the IB spec has it (only an RNR
	 * retry count of 7 means without limit) and mlx5 does; rdma_rxe
	 * retries for ever. A requester whose peer is gone, its last ACK
	 * lost, must fail, or its process waits for ever.
	 */
	if (retry_round(&ms[0], 7))
		return 1;
	printf("retry ok: at retry_cnt 7, RETRY_EXC_ERR after %ld ms, 7 retries counted\n", ms[0]);
	return 0;
}

static int mode_flush_err(void)
{
	struct pair p;
	struct ibv_sge s = { (uintptr_t)src, 64, smr->lkey };
	struct ibv_send_wr w[3] = {
		{ .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		  .wr = { .rdma = { (uintptr_t)dst, rrxe_wrong_key(dmr->rkey) } }, .next = &w[1] },
		{ .wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		  .next = &w[2] },
		{ .wr_id = 3, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		  .wr = { .rdma = { (uintptr_t)dst, dmr->rkey } } },
	}, *bad;
	enum ibv_qp_state st;
	int ret;

	pattern(src, BUF, 5);
	fill_dst(6);
	if (pair_new(&p, &def))
		return 1;
	/* Receives on both sides before anything fails. */
	if (post_recv1(p.a.qp, 70, dst + 8192, 256) || post_recv1(p.a.qp, 71, dst + 8192 + 256, 256) ||
	    post_recv1(p.b.qp, 80, dst + 16384, 256))
		return 1;
	/* A WRITE with a key whose index names no MR, then two WQEs behind it. */
	if ((ret = ibv_post_send(p.a.qp, w, &bad)))
		FAIL("post: %s", strerror(ret));
	if (expect(p.a.scq, "WRITE with a bad rkey", 1, IBV_WC_REM_ACCESS_ERR, -1, -1) ||
	    expect(p.a.scq, "SEND behind the failed WRITE", 2, IBV_WC_WR_FLUSH_ERR, -1, -1) ||
	    expect(p.a.scq, "WRITE behind the failed WRITE", 3, IBV_WC_WR_FLUSH_ERR, -1, -1))
		return 1;
	st = qp_state(p.a.qp);
	if (st != IBV_QPS_ERR)
		FAIL("requester QP state %d after the error, not ERR", st);
	/* Posted after the error: flushed. */
	if (post_send1(p.a.qp, IBV_WR_SEND, 4, src, 16, 0) ||
	    expect(p.a.scq, "SEND posted in ERR", 4, IBV_WC_WR_FLUSH_ERR, -1, -1) ||
	    post_rdma(p.a.qp, IBV_WR_RDMA_READ, 5, src + 4096, 16, smr->lkey, (uintptr_t)dst, dmr->rkey, 0) ||
	    expect(p.a.scq, "READ posted in ERR", 5, IBV_WC_WR_FLUSH_ERR, -1, -1))
		return 1;
	if (expect(p.a.rcq, "requester's first receive", 70, IBV_WC_WR_FLUSH_ERR, -1, -1) ||
	    expect(p.a.rcq, "requester's second receive", 71, IBV_WC_WR_FLUSH_ERR, -1, -1))
		return 1;
	/* The responder saw a remote access error (class C): it is in ERR too. */
	if (expect(p.b.rcq, "responder's receive", 80, IBV_WC_WR_FLUSH_ERR, -1, -1))
		return 1;
	st = qp_state(p.b.qp);
	if (st != IBV_QPS_ERR)
		FAIL("responder QP state %d after the access error, not ERR", st);
	if (quiet(p.a.scq, "requester send CQ after the flush", 50) || quiet(p.b.scq, "responder send CQ", 10) ||
	    dst_unchanged("failed WRITE and the flushed WQEs"))
		return 1;
	if (pair_free(&p))
		return 1;
	printf("flush_err ok\n");
	return 0;
}

/*
 * On a fresh pair: `op` (RDMA WRITE or READ) of `len` bytes from the
 * requester to (raddr, rkey) must complete with `want`; dst must be
 * unchanged and, for a READ, nothing may land in the local buffer.
 */
static int rejected(const char *what, const struct popt *o, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
		    uint32_t len, enum ibv_wc_status want)
{
	struct pair p;

	fill_dst(7);
	memset(src, 0x3c, 8192);
	pattern(src + 8192, 8192, 8);
	if (pair_new(&p, o))
		return 1;
	if (post_rdma(p.a.qp, op, 1, op == IBV_WR_RDMA_READ ? src : src + 8192, len, smr->lkey, raddr, rkey, 0) ||
	    expect(p.a.scq, what, 1, want, -1, -1))
		return 1;
	usleep(20000);
	if (dst_unchanged(what))
		return 1;
	for (int i = 0; i < 8192; i++)
		if (src[i] != 0x3c)
			FAIL("%s: local byte %d changed", what, i);
	return pair_free(&p);
}

static int mode_security(void)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *foreign, *win, *nord, *nowr;
	uint8_t *win_end = dst + 8192;
	struct popt o = def;
	struct pair p, q;
	uint32_t k;

	if (!pd2)
		FAIL("second PD: %s", strerror(errno));
	foreign = ibv_reg_mr(pd2, dst, 65536, IBV_ACCESS_LOCAL_WRITE | REMOTE_ALL);
	win = ibv_reg_mr(pd, dst + 4096, 4096, IBV_ACCESS_LOCAL_WRITE | REMOTE_ALL);
	nord = ibv_reg_mr(pd, dst + 16384, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	nowr = ibv_reg_mr(pd, dst + 32768, 4096, IBV_ACCESS_REMOTE_READ);
	if (!foreign || !win || !nord || !nowr)
		FAIL("MRs: %s", strerror(errno));

	if (rejected("WRITE with the rkey of another PD's MR", &def, IBV_WR_RDMA_WRITE, (uintptr_t)dst + 100,
		     foreign->rkey, 100, IBV_WC_REM_ACCESS_ERR))
		return 1;
	k = (dmr->rkey & ~0xffu) | ((dmr->rkey + 0x5a) & 0xff);
	if (rejected("WRITE with a wrong key (right index, wrong low byte)", &def, IBV_WR_RDMA_WRITE,
		     (uintptr_t)dst + 100, k, 100, IBV_WC_REM_ACCESS_ERR))
		return 1;
	if (rejected("WRITE of 8 bytes from 4 before the MR's end", &def, IBV_WR_RDMA_WRITE,
		     (uintptr_t)win_end - 4, win->rkey, 8, IBV_WC_REM_ACCESS_ERR) ||
	    rejected("READ of 8 bytes from 4 before the MR's end", &def, IBV_WR_RDMA_READ,
		     (uintptr_t)win_end - 4, win->rkey, 8, IBV_WC_REM_ACCESS_ERR))
		return 1;
	if (rejected("WRITE of 8 bytes at UINT64_MAX - 3", &def, IBV_WR_RDMA_WRITE, UINT64_MAX - 3, dmr->rkey, 8,
		     IBV_WC_REM_ACCESS_ERR))
		return 1;
	if (rejected("READ from an MR without remote read", &def, IBV_WR_RDMA_READ, (uintptr_t)dst + 16384,
		     nord->rkey, 64, IBV_WC_REM_ACCESS_ERR))
		return 1;
	if (rejected("WRITE to an MR without remote write", &def, IBV_WR_RDMA_WRITE, (uintptr_t)dst + 32768,
		     nowr->rkey, 64, IBV_WC_REM_ACCESS_ERR))
		return 1;
	o.b_access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (rejected("WRITE to a QP without remote write", &o, IBV_WR_RDMA_WRITE, (uintptr_t)dst + 100, dmr->rkey,
		     64, IBV_WC_REM_INV_REQ_ERR))
		return 1;

	/* A misaligned atomic, through the extended API (librxe's ibv_post_send refuses it). */
	o = def;
	o.ex = true;
	fill_dst(9);
	if (pair_new(&p, &o))
		return 1;
	{
		int ret;

		ibv_wr_start(p.a.qpx);
		p.a.qpx->wr_id = 1;
		p.a.qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_fetch_add(p.a.qpx, dmr->rkey, (uintptr_t)dst + 65536 + 4, 1);
		ibv_wr_set_sge(p.a.qpx, smr->lkey, (uintptr_t)src, 8);
		ret = ibv_wr_complete(p.a.qpx);
		if (ret)
			FAIL("ibv_wr_complete of a misaligned fetch_add: %s", strerror(ret));
	}
	if (expect(p.a.scq, "fetch_add at an address = 4 mod 8", 1, IBV_WC_REM_INV_REQ_ERR, -1, -1))
		return 1;
	usleep(20000);
	if (dst_unchanged("misaligned fetch_add") || pair_free(&p))
		return 1;

	/* An rkey invalidated: a type 2 window bound on the responder's QP, then LOCAL_INV there. */
	{
		struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
		struct ibv_send_wr inv = { .wr_id = 0x1e, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		uint8_t *w = dst + 0x20000;
		int ret;

		if (!mw)
			FAIL("alloc type 2 MW: %s", strerror(errno));
		pattern(src, 65536, 10);
		if (pair_new(&p, &def) ||
		    bind2(&p.b, mw, dmr, w, 4096, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &k))
			return 1;
		if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 1, src, 4096, smr->lkey, (uintptr_t)w, k, 0) ||
		    expect(p.a.scq, "WRITE through a type 2 window", 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1))
			return 1;
		if (memcmp(w, src, 4096))
			FAIL("WRITE through a type 2 window: data differ");
		inv.invalidate_rkey = k;
		if ((ret = ibv_post_send(p.b.qp, &inv, &bad)))
			FAIL("post LOCAL_INV: %s", strerror(ret));
		if (expect(p.b.scq, "LOCAL_INV of the window's rkey", 0x1e, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, -1))
			return 1;
		memcpy(saved, dst, BUF);
		pattern(src, 65536, 11);
		if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 2, src, 64, smr->lkey, (uintptr_t)w, k, 0) ||
		    expect(p.a.scq, "WRITE with an invalidated window's rkey", 2, IBV_WC_REM_ACCESS_ERR, -1, -1))
			return 1;
		usleep(20000);
		if (dst_unchanged("WRITE with an invalidated rkey") || pair_free(&p))
			return 1;
		if ((ret = ibv_dealloc_mw(mw)))
			FAIL("dealloc MW: %s", strerror(ret));
	}

	/* A type 2 window belongs to the QP that bound it. */
	{
		struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
		uint8_t *w = dst + 0x30000;
		int ret;

		if (!mw)
			FAIL("alloc type 2 MW: %s", strerror(errno));
		fill_dst(12);
		pattern(src, 65536, 13);
		if (pair_new(&p, &def) || pair_new(&q, &def) ||
		    bind2(&p.b, mw, dmr, w, 4096, IBV_ACCESS_REMOTE_WRITE, &k))
			return 1;
		if (post_rdma(q.a.qp, IBV_WR_RDMA_WRITE, 1, src, 64, smr->lkey, (uintptr_t)w, k, 0) ||
		    expect(q.a.scq, "WRITE through a window bound to another responder QP", 1, IBV_WC_REM_ACCESS_ERR,
			   -1, -1))
			return 1;
		usleep(20000);
		if (dst_unchanged("WRITE through another QP's window"))
			return 1;
		/* Through its own QP it works. */
		if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 2, src, 64, smr->lkey, (uintptr_t)w, k, 0) ||
		    expect(p.a.scq, "WRITE through the window's own QP", 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1))
			return 1;
		if (memcmp(w, src, 64))
			FAIL("WRITE through the window's own QP: data differ");
		if ((ret = ibv_dealloc_mw(mw)))
			FAIL("dealloc MW: %s", strerror(ret));
		if (pair_free(&p) || pair_free(&q))
			return 1;
	}
	if (ibv_dereg_mr(foreign) || ibv_dereg_mr(win) || ibv_dereg_mr(nord) || ibv_dereg_mr(nowr) ||
	    ibv_dealloc_pd(pd2))
		FAIL("release MRs and PD: %s", strerror(errno));
	printf("security ok\n");
	return 0;
}

static int mode_mw(void)
{
	const int rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mw *m1, *m2, *m3, *m4, *m5, *m6;
	struct ibv_mr *nobind, *nolw;
	enum ibv_wc_status st;
	uint8_t *w1 = dst + 0x40000;	/* type 1 window, 8 KiB, inside dmr */
	uint32_t old, k;
	struct pair p;

	m1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	m2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	m3 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	m4 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	m5 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	m6 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	nobind = ibv_reg_mr(pd, dst + 0x80000, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	nolw = ibv_reg_mr(pd, dst + 0x90000, 4096, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	if (!m1 || !m2 || !m3 || !m4 || !m5 || !m6 || !nobind || !nolw)
		FAIL("MWs and MRs: %s", strerror(errno));
	pattern(src, BUF, 20);
	fill_dst(21);

	/* Type 1: ibv_bind_mw, then WRITE and READ at its bounds. */
	if (pair_new(&p, &def))
		return 1;
	old = m1->rkey;
	if (bind1_ok(&p.b, m1, dmr, w1, 8192, rw))
		return 1;
	if (m1->rkey >> 8 != old >> 8 || m1->rkey == old)
		FAIL("type 1 bind: rkey 0x%x after 0x%x (same index, new key expected)", m1->rkey, old);
	if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 1, src, 8192, smr->lkey, (uintptr_t)w1, m1->rkey, 0) ||
	    expect(p.a.scq, "WRITE of the whole type 1 window", 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1) ||
	    post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 2, src + 9000, 16, smr->lkey, (uintptr_t)w1 + 8192 - 16, m1->rkey, 0) ||
	    expect(p.a.scq, "WRITE of the window's last 16 bytes", 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1))
		return 1;
	if (memcmp(w1, src, 8192 - 16) || memcmp(w1 + 8192 - 16, src + 9000, 16))
		FAIL("WRITEs through the type 1 window: data differ");
	if (w1[-1] != saved[0x40000 - 1] || w1[8192] != saved[0x40000 + 8192])
		FAIL("WRITEs through the type 1 window spilled outside it");
	memset(src + 20000, 0, 64);
	if (post_rdma(p.a.qp, IBV_WR_RDMA_READ, 3, src + 20000, 16, smr->lkey, (uintptr_t)w1, m1->rkey, 0) ||
	    expect(p.a.scq, "READ of the window's first 16 bytes", 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 16) ||
	    post_rdma(p.a.qp, IBV_WR_RDMA_READ, 4, src + 20032, 16, smr->lkey, (uintptr_t)w1 + 8192 - 16, m1->rkey, 0) ||
	    expect(p.a.scq, "READ of the window's last 16 bytes", 4, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 16))
		return 1;
	if (memcmp(src + 20000, w1, 16) || memcmp(src + 20032, w1 + 8192 - 16, 16))
		FAIL("READs through the type 1 window: data differ");

	/* One byte outside the window (still inside the MR): rejected. */
	memcpy(saved, dst, BUF);
	if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 5, src, 16, smr->lkey, (uintptr_t)w1 + 8192 - 15, m1->rkey, 0) ||
	    expect(p.a.scq, "WRITE one byte past the type 1 window", 5, IBV_WC_REM_ACCESS_ERR, -1, -1))
		return 1;
	usleep(20000);
	if (dst_unchanged("WRITE one byte past the window") || pair_free(&p))
		return 1;
	memset(src + 30000, 0x77, 64);
	if (pair_new(&p, &def) ||
	    post_rdma(p.a.qp, IBV_WR_RDMA_READ, 6, src + 30000, 16, smr->lkey, (uintptr_t)w1 - 1, m1->rkey, 0) ||
	    expect(p.a.scq, "READ from one byte before the type 1 window", 6, IBV_WC_REM_ACCESS_ERR, -1, -1))
		return 1;
	for (int i = 0; i < 64; i++)
		if (src[30000 + i] != 0x77)
			FAIL("a rejected READ wrote local byte %d", i);
	if (pair_free(&p))
		return 1;

	/* A zero-length bind unbinds it (librxe needs an MR even then). */
	if (pair_new(&p, &def) || bind1_ok(&p.b, m1, dmr, NULL, 0, 0))
		return 1;
	if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 7, src, 16, smr->lkey, (uintptr_t)w1, m1->rkey, 0) ||
	    expect(p.a.scq, "WRITE through an unbound type 1 window", 7, IBV_WC_REM_ACCESS_ERR, -1, -1))
		return 1;
	usleep(20000);
	if (dst_unchanged("WRITE through an unbound window") || pair_free(&p))
		return 1;

	/* Type 2, zero based: remote addresses 0..len. */
	{
		uint8_t *w2 = dst + 0x50000;

		if (pair_new(&p, &def) || bind2(&p.b, m2, dmr, w2, 4096, rw | IBV_ACCESS_ZERO_BASED, &k))
			return 1;
		if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 8, src + 40000, 4096, smr->lkey, 0, k, 0) ||
		    expect(p.a.scq, "WRITE at offset 0 of a zero-based window", 8, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1))
			return 1;
		if (memcmp(w2, src + 40000, 4096) || w2[-1] != saved[0x50000 - 1] || w2[4096] != saved[0x50000 + 4096])
			FAIL("zero-based window: WRITE at 0 landed wrongly");
		memset(src + 50000, 0, 256);
		if (post_rdma(p.a.qp, IBV_WR_RDMA_READ, 9, src + 50000, 100, smr->lkey, 4096 - 100, k, 0) ||
		    expect(p.a.scq, "READ of the last 100 bytes of a zero-based window", 9, IBV_WC_SUCCESS,
			   IBV_WC_RDMA_READ, 100))
			return 1;
		if (memcmp(src + 50000, w2 + 4096 - 100, 100) || src[50100])
			FAIL("zero-based window: READ at 3996 returned wrong data");
	}

	/* SEND_WITH_INV invalidates the responder's type 2 window. */
	{
		uint8_t *w3 = dst + 0x60000;

		if (bind2(&p.b, m3, dmr, w3, 4096, IBV_ACCESS_REMOTE_WRITE, &k))
			return 1;
		if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 10, src + 60000, 512, smr->lkey, (uintptr_t)w3, k, 0) ||
		    expect(p.a.scq, "WRITE through the window before SEND_WITH_INV", 10, IBV_WC_SUCCESS,
			   IBV_WC_RDMA_WRITE, -1))
			return 1;
		if (memcmp(w3, src + 60000, 512))
			FAIL("WRITE through the window before SEND_WITH_INV: data differ");
		if (post_recv1(p.b.qp, 90, dst + 0x70000, 1024) ||
		    post_send1(p.a.qp, IBV_WR_SEND_WITH_INV, 11, src + 61000, 200, k) ||
		    expect(p.a.scq, "SEND_WITH_INV", 11, IBV_WC_SUCCESS, IBV_WC_SEND, -1) ||
		    expect(p.b.rcq, "SEND_WITH_INV's receive", 90, IBV_WC_SUCCESS, IBV_WC_RECV, 200))
			return 1;
		if (memcmp(dst + 0x70000, src + 61000, 200))
			FAIL("SEND_WITH_INV: data differ");
		/* rdma_rxe reports the kernel's WITH_INVALIDATE bit (4) to userspace; accept either. */
		if ((last.wc_flags & (IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK)) && last.invalidated_rkey != k)
			FAIL("SEND_WITH_INV's receive names rkey 0x%x, not 0x%x", last.invalidated_rkey, k);
		memcpy(saved, dst, BUF);
		if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 12, src, 64, smr->lkey, (uintptr_t)w3, k, 0) ||
		    expect(p.a.scq, "WRITE with the rkey SEND_WITH_INV invalidated", 12, IBV_WC_REM_ACCESS_ERR, -1, -1))
			return 1;
		usleep(20000);
		if (dst_unchanged("WRITE with an rkey invalidated by SEND_WITH_INV"))
			return 1;
		/*
		 * The zero-based window is still bound to this pair's responder:
		 * deallocate it before its QP goes (rdma_rxe's QP destroy waits
		 * for the window's reference to the QP and warns after 50 s).
		 */
		if (ibv_dealloc_mw(m2))
			FAIL("dealloc the bound zero-based type 2 window: %s", strerror(errno));
		if (pair_free(&p))
			return 1;
	}

	/* Binds that must fail: no MW_BIND on the MR; a writable window on an MR without local write. */
	if (pair_new(&p, &def) || bind1(&p.b, m4, nobind, dst + 0x80000, 4096, IBV_ACCESS_REMOTE_WRITE, &st))
		return 1;
	if (st == IBV_WC_SUCCESS)
		FAIL("binding a window onto an MR without MW_BIND succeeded");
	printf("bind onto an MR without MW_BIND: %s\n", ibv_wc_status_str(st));
	if (pair_free(&p))
		return 1;
	if (pair_new(&p, &def) || bind1(&p.b, m5, nolw, dst + 0x90000, 4096, IBV_ACCESS_REMOTE_WRITE, &st))
		return 1;
	if (st == IBV_WC_SUCCESS)
		FAIL("binding a writable window onto an MR without LOCAL_WRITE succeeded");
	printf("writable bind onto an MR without LOCAL_WRITE: %s\n", ibv_wc_status_str(st));
	if (pair_free(&p))
		return 1;

	/* A bound window deallocated: its rkey names nothing. */
	{
		uint8_t *w6 = dst + 0xa0000;
		int ret;

		if (pair_new(&p, &def) || bind1_ok(&p.b, m6, dmr, w6, 4096, IBV_ACCESS_REMOTE_WRITE))
			return 1;
		k = m6->rkey;
		if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 13, src + 70000, 128, smr->lkey, (uintptr_t)w6, k, 0) ||
		    expect(p.a.scq, "WRITE through a window about to be deallocated", 13, IBV_WC_SUCCESS,
			   IBV_WC_RDMA_WRITE, -1))
			return 1;
		if (memcmp(w6, src + 70000, 128))
			FAIL("WRITE through the window: data differ");
		if ((ret = ibv_dealloc_mw(m6)))
			FAIL("dealloc a bound type 1 MW: %s", strerror(ret));
		memcpy(saved, dst, BUF);
		if (post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 14, src, 128, smr->lkey, (uintptr_t)w6, k, 0) ||
		    expect(p.a.scq, "WRITE with a deallocated window's rkey", 14, IBV_WC_REM_ACCESS_ERR, -1, -1))
			return 1;
		usleep(20000);
		if (dst_unchanged("WRITE with a deallocated window's rkey") || pair_free(&p))
			return 1;
	}
	if (ibv_dealloc_mw(m1) || ibv_dealloc_mw(m3) || ibv_dealloc_mw(m4) ||
	    ibv_dealloc_mw(m5))
		FAIL("dealloc MWs: %s", strerror(errno));
	if (ibv_dereg_mr(nobind) || ibv_dereg_mr(nolw))
		FAIL("dereg MRs: %s", strerror(errno));
	printf("mw ok\n");
	return 0;
}

/* What librxe 44 has no names for (include/uapi/rdma of the kernel). */
#define WR_FLUSH 14
#define WR_ATOMIC_WRITE 15
#define ACCESS_FLUSH_GLOBAL (1 << 8)
#define ACCESS_FLUSH_PERSISTENT (1 << 9)
#define FLUSH_GLOBAL 1		/* placement types */
#define FLUSH_PERSISTENT 2
#define FLUSH_RANGE 0		/* selectivity levels */
#define FLUSH_MR 1

/* rxe_send_wr's wr.rdma and wr.flush. */
struct rdma_wr {
	uint64_t remote_addr;
	uint32_t rkey, reserved;
};

struct flush_wr {
	uint64_t remote_addr;
	uint32_t length, rkey;
	uint8_t type, level;
};

/*
 * On a fresh pair, FETCH_AND_ADD(1) or CMP_AND_SWP(v0, 7) at `raddr`
 * through `rkey` (or, if `wbase`, through a fresh type 2 window bound there
 * on the responder with `waccess`) must complete with `want`; on success it
 * must return the original value and leave the 8 bytes at `t` added to or
 * swapped; every other byte of dst must stay as it was.
 */
static int atomic_at(const char *what, enum ibv_wr_opcode op, uint8_t *wbase, int waccess, uint64_t raddr,
		     uint32_t rkey, uint8_t *t, enum ibv_wc_status want)
{
	uint64_t v0 = 0x0123456789abcdefull, v, *res = (uint64_t *)src;
	struct ibv_mw *mw = NULL;
	struct popt o = def;
	struct pair p;
	int ret;

	fill_dst(31);
	memcpy(t, &v0, 8);
	memcpy(saved + (t - dst), &v0, 8);
	*res = 0;
	/* librxe's ibv_post_send refuses a misaligned atomic: the extended API does not. */
	o.ex = raddr & 7;
	if (pair_new(&p, &o))
		return 1;
	if (wbase) {
		mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
		if (!mw)
			FAIL("alloc type 2 MW: %s", strerror(errno));
		if (bind2(&p.b, mw, dmr, wbase, 64, waccess, &rkey))
			return 1;
	}
	if (o.ex) {
		ibv_wr_start(p.a.qpx);
		p.a.qpx->wr_id = 1;
		p.a.qpx->wr_flags = IBV_SEND_SIGNALED;
		if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			ibv_wr_atomic_fetch_add(p.a.qpx, rkey, raddr, 1);
		else
			ibv_wr_atomic_cmp_swp(p.a.qpx, rkey, raddr, v0, 7);
		ibv_wr_set_sge(p.a.qpx, smr->lkey, (uintptr_t)res, 8);
		ret = ibv_wr_complete(p.a.qpx);
		if (ret)
			FAIL("%s: ibv_wr_complete: %s", what, strerror(ret));
	} else if (post_atomic(p.a.qp, op, 1, res, raddr, rkey, op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 1 : v0, 7)) {
		return 1;
	}
	if (expect(p.a.scq, what, 1, want, -1, -1))
		return 1;
	usleep(20000);
	if (want == IBV_WC_SUCCESS) {
		v = op == IBV_WR_ATOMIC_FETCH_AND_ADD ? v0 + 1 : 7;
		if (*res != v0)
			FAIL("%s: returned 0x%llx, not 0x%llx", what, (unsigned long long)*res,
			     (unsigned long long)v0);
		memcpy(saved + (t - dst), &v, 8);
	}
	if (dst_unchanged(what) || pair_free(&p))
		return 1;
	if (mw && (ret = ibv_dealloc_mw(mw)))
		FAIL("dealloc MW: %s", strerror(ret));
	return 0;
}

static int mode_atomic_align(void)
{
	const int zb = IBV_ACCESS_LOCAL_WRITE | REMOTE_ALL | IBV_ACCESS_ZERO_BASED;
	uint8_t *m4 = dst + 0x60004, *m8 = dst + 0x61008;
	struct ibv_mr *z4 = ibv_reg_mr(pd, m4, 256, zb), *z8 = ibv_reg_mr(pd, m8, 256, zb);
	const int wa = IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED;
	uint64_t one = 0x1111111111111111ull;
	struct rdma_wr aw;
	struct pair p;
	int ret;

	if (!z4 || !z8)
		FAIL("zero-based MRs: %s", strerror(errno));

	/* Zero-based windows: address 0 of one bound at dst + 0x50004 is misaligned in memory. */
	if (atomic_at("FETCH_AND_ADD at 8 of a zero-based window on an aligned address", IBV_WR_ATOMIC_FETCH_AND_ADD,
		      dst + 0x50000, wa, 8, 0, dst + 0x50008, IBV_WC_SUCCESS) ||
	    atomic_at("FETCH_AND_ADD at 0 of a zero-based window at dst + 4 mod 8", IBV_WR_ATOMIC_FETCH_AND_ADD,
		      dst + 0x50004, wa, 0, 0, dst + 0x50004, IBV_WC_REM_INV_REQ_ERR) ||
	    atomic_at("CMP_AND_SWP at 8 of a zero-based window at dst + 4 mod 8", IBV_WR_ATOMIC_CMP_AND_SWP,
		      dst + 0x50004, wa, 8, 0, dst + 0x5000c, IBV_WC_REM_INV_REQ_ERR))
		return 1;
	/* Zero-based MRs (rrxe's ZERO_BASED registration) likewise. */
	if (atomic_at("CMP_AND_SWP at 8 of a zero-based MR on an aligned address", IBV_WR_ATOMIC_CMP_AND_SWP,
		      NULL, 0, 8, z8->rkey, m8 + 8, IBV_WC_SUCCESS) ||
	    atomic_at("CMP_AND_SWP at 0 of a zero-based MR at dst + 4 mod 8", IBV_WR_ATOMIC_CMP_AND_SWP,
		      NULL, 0, 0, z4->rkey, m4, IBV_WC_REM_INV_REQ_ERR) ||
	    atomic_at("FETCH_AND_ADD at 16 of a zero-based MR at dst + 4 mod 8", IBV_WR_ATOMIC_FETCH_AND_ADD,
		      NULL, 0, 16, z4->rkey, m4 + 16, IBV_WC_REM_INV_REQ_ERR))
		return 1;
	/* The other way round: an aligned target at a misaligned address is still refused (the VA's rule). */
	if (atomic_at("FETCH_AND_ADD at 4 of a zero-based MR at dst + 4 mod 8", IBV_WR_ATOMIC_FETCH_AND_ADD,
		      NULL, 0, 4, z4->rkey, m4 + 4, IBV_WC_REM_INV_REQ_ERR))
		return 1;

	/* ATOMIC WRITE, written into the send ring (librxe 44 has no verb for it). */
	fill_dst(32);
	if (pair_new(&p, &def))
		return 1;
	memset(&aw, 0, sizeof(aw));
	aw.remote_addr = 8;
	aw.rkey = z8->rkey;
	if (post_raw(&p.a, 1, WR_ATOMIC_WRITE, &aw, sizeof(aw), &one) ||
	    expect(p.a.scq, "ATOMIC WRITE at 8 of a zero-based MR on an aligned address", 1, IBV_WC_SUCCESS, -1, -1))
		return 1;
	memcpy(saved + (m8 + 8 - dst), &one, 8);
	if (dst_unchanged("ATOMIC WRITE at 8 of a zero-based MR"))
		return 1;
	aw.remote_addr = 0;
	aw.rkey = z4->rkey;
	if (post_raw(&p.a, 2, WR_ATOMIC_WRITE, &aw, sizeof(aw), &one) ||
	    expect(p.a.scq, "ATOMIC WRITE at 0 of a zero-based MR at dst + 4 mod 8", 2, IBV_WC_REM_INV_REQ_ERR, -1,
		   -1))
		return 1;
	usleep(20000);
	if (dst_unchanged("misaligned ATOMIC WRITE") || pair_free(&p))
		return 1;
	if ((ret = ibv_dereg_mr(z4)) || (ret = ibv_dereg_mr(z8)))
		FAIL("release: %s", strerror(ret));
	printf("atomic_align ok\n");
	return 0;
}

/*
 * On a fresh pair whose responder has qp_access_flags `qa`: a FLUSH of
 * `type` at `level` over `len` bytes at `raddr` through `rkey` must complete
 * with `want`. The WQE is laid out as librxe's ibv_wr_flush() writes it:
 * the length in dma.length and dma.resid, wr.flush.length left 0.
 */
static int flush_case_at(const char *what, int qa, uint8_t type, uint8_t level, uint64_t raddr,
			 uint32_t len, uint32_t rkey, enum ibv_wc_status want)
{
	struct flush_wr f = { .remote_addr = raddr, .rkey = rkey, .type = type, .level = level };
	struct popt o = def;
	struct pair p;
	int bad;

	o.b_access = qa;
	fill_dst(40);
	if (pair_new(&p, &o))
		return 1;
	raw_dma_len = len;
	bad = post_raw(&p.a, 1, WR_FLUSH, &f, sizeof(f), NULL);
	raw_dma_len = 0;
	if (bad || expect(p.a.scq, what, 1, want, -1, -1))
		return 1;
	usleep(20000);
	if (dst_unchanged(what))
		return 1;
	return pair_free(&p);
}

/* A FLUSH over 256 bytes of the range at `raddr`. */
static int flush_case(const char *what, int qa, uint8_t type, uint64_t raddr, uint32_t rkey,
		      enum ibv_wc_status want)
{
	return flush_case_at(what, qa, type, FLUSH_RANGE, raddr, 256, rkey, want);
}

static int mode_flush(void)
{
	const int fa = REMOTE_ALL | ACCESS_FLUSH_GLOBAL | ACCESS_FLUSH_PERSISTENT;
	uint8_t *fm = dst + 0x70000;
	struct ibv_mr *fmr = ibv_reg_mr(pd, fm, 4096, IBV_ACCESS_LOCAL_WRITE | ACCESS_FLUSH_GLOBAL);
	uint32_t bogus = (dmr->rkey & ~0xffu) | ((dmr->rkey + 0x5a) & 0xff);

	if (!fmr)
		FAIL("MR with FLUSH_GLOBAL access: %s", strerror(errno));
	if (flush_case("FLUSH global of an MR with FLUSH_GLOBAL, QP with both flush rights", fa, FLUSH_GLOBAL,
		       (uintptr_t)fm, fmr->rkey, IBV_WC_SUCCESS) ||
	    flush_case("FLUSH global of an MR without FLUSH_GLOBAL", fa, FLUSH_GLOBAL, (uintptr_t)dst, dmr->rkey,
		       IBV_WC_REM_ACCESS_ERR) ||
	    flush_case("FLUSH persistent of an MR with FLUSH_GLOBAL only", fa, FLUSH_PERSISTENT, (uintptr_t)fm,
		       fmr->rkey, IBV_WC_REM_ACCESS_ERR))
		return 1;
	/* The QP's rights count too (rxe's check_qp_attr_access). */
	if (flush_case("FLUSH global to a QP without FLUSH_GLOBAL", REMOTE_ALL | ACCESS_FLUSH_PERSISTENT,
		       FLUSH_GLOBAL, (uintptr_t)fm, fmr->rkey, IBV_WC_REM_INV_REQ_ERR))
		return 1;
	/*
	 * The range is the WQE's dma length, as rxe sends it; a zero length
	 * still needs a valid rkey with the rights (rxe's check_rkey); a FLUSH
	 * of the whole MR (level MR) is not checked against the range.
	 */
	if (flush_case_at("FLUSH global of 8 KiB of a 4 KiB MR", fa, FLUSH_GLOBAL, FLUSH_RANGE,
			  (uintptr_t)fm, 8192, fmr->rkey, IBV_WC_REM_ACCESS_ERR) ||
	    flush_case_at("FLUSH global of 256 bytes ending past the MR", fa, FLUSH_GLOBAL, FLUSH_RANGE,
			  (uintptr_t)fm + 4000, 256, fmr->rkey, IBV_WC_REM_ACCESS_ERR) ||
	    flush_case_at("zero-length FLUSH global with a bogus rkey", fa, FLUSH_GLOBAL, FLUSH_RANGE,
			  (uintptr_t)dst, 0, bogus, IBV_WC_REM_ACCESS_ERR) ||
	    flush_case_at("zero-length FLUSH persistent of an MR with FLUSH_GLOBAL only", fa,
			  FLUSH_PERSISTENT, FLUSH_RANGE, (uintptr_t)fm, 0, fmr->rkey, IBV_WC_REM_ACCESS_ERR) ||
	    flush_case_at("zero-length FLUSH global of an MR with FLUSH_GLOBAL", fa, FLUSH_GLOBAL,
			  FLUSH_RANGE, (uintptr_t)fm, 0, fmr->rkey, IBV_WC_SUCCESS) ||
	    flush_case_at("FLUSH global of the whole MR, address outside it", fa, FLUSH_GLOBAL, FLUSH_MR,
			  (uintptr_t)fm + 65536, 0, fmr->rkey, IBV_WC_SUCCESS))
		return 1;
	/* No placement type asks for no right: an invalid request, whatever the key. */
	if (flush_case("FLUSH of no placement type with a valid rkey", fa, 0, (uintptr_t)dst, dmr->rkey,
		       IBV_WC_REM_INV_REQ_ERR) ||
	    flush_case("FLUSH of no placement type with a bogus rkey", fa, 0, (uintptr_t)dst, bogus,
		       IBV_WC_REM_INV_REQ_ERR))
		return 1;
	if (ibv_dereg_mr(fmr))
		FAIL("dereg: %s", strerror(errno));
	printf("flush ok\n");
	return 0;
}

/* Moves `q` to RESET, which it must then report. */
static int to_reset(struct ibv_qp *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int ret = ibv_modify_qp(q, &a, IBV_QP_STATE);

	if (ret)
		FAIL("QP %u to RESET: %s", q->qp_num, strerror(ret));
	if (qp_state(q) != IBV_QPS_RESET)
		FAIL("QP %u is in state %d after the move to RESET", q->qp_num, qp_state(q));
	return 0;
}

#define PSN_A2 0x7a5a5a		/* the PSNs after RESET, far from the first */
#define PSN_B2 0x3c3c3c

/*
 * Both QPs of `p` are in RESET: reconnected with new PSNs, a new SEND of
 * 3000 bytes (src + 300000) completes alone, into the receive posted now
 * (dst + 600000), and for RC a READ of it back into src + 500000; dst is
 * otherwise as `saved` says and nothing else completes on any of the four
 * CQs. Whatever was in flight or posted before the RESET is gone without
 * a completion.
 */
static int after_reset(struct pair *p, const struct popt *o, const char *what)
{
	const uint32_t len = 3000;
	char w[200];

	if (connect_qp(p->a.qp, p->b.qp->qp_num, REMOTE_ALL, PSN_A2, PSN_B2, o) ||
	    connect_qp(p->b.qp, p->a.qp->qp_num, o->b_access, PSN_B2, PSN_A2, o))
		return 1;
	if (post_recv1(p->b.qp, 51, dst + 600000, 4096) || post_send1(p->a.qp, IBV_WR_SEND, 2, src + 300000, len, 0))
		return 1;
	snprintf(w, sizeof(w), "%s: the SEND posted after RESET", what);
	if (expect(p->a.scq, w, 2, IBV_WC_SUCCESS, IBV_WC_SEND, len))
		return 1;
	snprintf(w, sizeof(w), "%s: the receive posted after RESET", what);
	if (expect(p->b.rcq, w, 51, IBV_WC_SUCCESS, IBV_WC_RECV, len))
		return 1;
	if (memcmp(dst + 600000, src + 300000, len))
		FAIL("%s: the SEND after RESET: data differ", what);
	memcpy(saved + 600000, src + 300000, len);
	if (!o->uc) {
		snprintf(w, sizeof(w), "%s: a READ after RESET", what);
		if (post_rdma(p->a.qp, IBV_WR_RDMA_READ, 3, src + 500000, len, smr->lkey, (uintptr_t)dst + 600000,
			      dmr->rkey, 0) ||
		    expect(p->a.scq, w, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, len))
			return 1;
		if (memcmp(src + 500000, src + 300000, len))
			FAIL("%s: the READ after RESET: data differ", what);
	}
	snprintf(w, sizeof(w), "%s: requester's send CQ after RESET", what);
	if (quiet(p->a.scq, w, 100))
		return 1;
	snprintf(w, sizeof(w), "%s: responder's receive CQ after RESET", what);
	if (quiet(p->b.rcq, w, 100))
		return 1;
	snprintf(w, sizeof(w), "%s: requester's receive CQ", what);
	if (quiet(p->a.rcq, w, 1))
		return 1;
	snprintf(w, sizeof(w), "%s: responder's send CQ", what);
	if (quiet(p->b.scq, w, 1))
		return 1;
	return dst_unchanged(what);
}

/*
 * RTS -> RESET with a WQE outstanding: a SEND RNR-looping (no receive,
 * rnr_retry 7) when the requester is reset; a receive posted on the
 * responder before its own RESET.
 */
static int reset_outstanding(void)
{
	const char *what = "RC, RTS -> RESET with a SEND RNR-looping";
	struct pair p;

	pattern(src, BUF, 9);
	fill_dst(9);
	if (pair_new(&p, &def))
		return 1;
	if (post_send1(p.a.qp, IBV_WR_SEND, 1, src, 100, 0) ||
	    quiet(p.a.scq, "SEND without a receive, rnr_retry 7", 50) || to_reset(p.a.qp) ||
	    post_recv1(p.b.qp, 50, dst, 4096) || quiet(p.b.rcq, "a receive after the requester's RESET", 50) ||
	    to_reset(p.b.qp) || after_reset(&p, &def, what))
		return 1;
	return pair_free(&p);
}

/*
 * A pair with a message half received: a 68 KiB SEND whose second SGE has
 * a bad lkey fails after its first 64 KiB (a packet, or 64) reached the
 * responder, so the requester is in ERR and the responder, still in RTS,
 * holds the receive it was scattering into (wr_id 50); another receive
 * (52) waits behind it.
 */
static int hold_mid_send(struct pair *p, const struct popt *o, int seed, const char *what)
{
	struct ibv_sge s[2] = {
		{ (uintptr_t)src, 65536, smr->lkey },
		{ (uintptr_t)src + 65536, 4096, rrxe_wrong_key(smr->lkey) },
	};
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = s, .num_sge = 2, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int ret;

	pattern(src, BUF, seed);
	fill_dst(seed);
	if (pair_new(p, o))
		return 1;
	if (post_recv1(p->b.qp, 50, dst, 131072) || post_recv1(p->b.qp, 52, dst + 200000, 4096))
		return 1;
	if ((ret = ibv_post_send(p->a.qp, &wr, &bad)))
		FAIL("%s: post SEND: %s", what, strerror(ret));
	if (expect(p->a.scq, "SEND whose second SGE has a bad lkey", 1, IBV_WC_LOC_PROT_ERR, -1, -1))
		return 1;
	if (qp_state(p->a.qp) != IBV_QPS_ERR || qp_state(p->b.qp) != IBV_QPS_RTS)
		FAIL("%s: QP states %d and %d after the failed SEND, not ERR and RTS", what,
		     qp_state(p->a.qp), qp_state(p->b.qp));
	if (quiet(p->b.rcq, "the responder holding its receive mid-SEND", 50))
		return 1;
	if (memcmp(dst, src, 65536))
		FAIL("%s: the SEND's first 64 KiB did not land: no receive is held", what);
	return 0;
}

/* ERR -> RESET and RTS -> RESET with a message half received. */
static int reset_halfway(bool uc)
{
	const char *what = uc ? "UC, ERR and RTS (a receive held mid-SEND) -> RESET" :
				"RC, ERR and RTS (a receive held mid-SEND) -> RESET";
	struct popt o = def;
	struct pair p;

	o.uc = uc;
	if (hold_mid_send(&p, &o, 10, what))
		return 1;
	memcpy(saved, src, 65536);
	if (to_reset(p.a.qp) || to_reset(p.b.qp) || after_reset(&p, &o, what))
		return 1;
	return pair_free(&p);
}

/*
 * A QP whose responder holds a receive mid-SEND (as in reset_halfway) and
 * whose own requester then fails a SEND locally (a bad lkey): the QP
 * enters ERR from its requester's side, and the held receive is flushed
 * as well as the one still in the ring. The responder's part of that
 * move is done apart from the requester's (rc::settle).
 */
static int mode_err_held(void)
{
	const char *what = "RC, a receive held mid-SEND, then the QP's own SEND fails locally";
	struct ibv_sge bs = { (uintptr_t)src, 100, rrxe_wrong_key(smr->lkey) };
	struct ibv_send_wr bwr = { .wr_id = 60, .sg_list = &bs, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *bad;
	bool got50 = false, got52 = false;
	struct pair p;
	int ret, i;

	if (hold_mid_send(&p, &def, 11, what))
		return 1;
	if ((ret = ibv_post_send(p.b.qp, &bwr, &bad)))
		FAIL("%s: post the failing SEND: %s", what, strerror(ret));
	if (expect(p.b.scq, "the responder QP's own SEND with a bad lkey", 60, IBV_WC_LOC_PROT_ERR, -1, -1))
		return 1;
	if (qp_state(p.b.qp) != IBV_QPS_ERR)
		FAIL("%s: QP state %d after its SEND failed, not ERR", what, qp_state(p.b.qp));
	/* Both receives flush, the held one and the one in the ring (in
	 * either order). */
	for (i = 0; i < 2; i++) {
		struct ibv_wc wc;

		if (poll_wc(p.b.rcq, &wc, WAIT_MS) != 1)
			FAIL("%s: %d of the 2 receives flushed within %d ms", what, i, WAIT_MS);
		if (wc.status != IBV_WC_WR_FLUSH_ERR || (wc.wr_id != 50 && wc.wr_id != 52) ||
		    (wc.wr_id == 50 ? got50 : got52))
			FAIL("%s: receive completion wr_id %llu status %s; expected 50 and 52 with WR_FLUSH_ERR",
			     what, (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
		*(wc.wr_id == 50 ? &got50 : &got52) = true;
	}
	if (quiet(p.b.rcq, "the receive CQ after both flushes", 50))
		return 1;
	return pair_free(&p);
}

/* Every case runs, on QPs of its own, whether an earlier one failed or not. */
static int mode_reset(void)
{
	int bad = reset_outstanding();

	bad |= reset_halfway(false);
	bad |= reset_halfway(true);
	if (bad)
		return 1;
	printf("reset ok\n");
	return 0;
}

/*
 * ack_destroy's responder: a SCHED_FIFO thread on the requester's CPU,
 * asleep on its receive CQ's completion channel. The completion event wakes
 * it, and it preempts the requester, whose doorbell is delivering the SEND
 * through the loopback, at once: the receive is completed and the QP
 * destroyed before that doorbell has sent the ACK. rdma_client meets this
 * by chance, when the kernel preempts rdma_server's doorbell there.
 */
struct spinner {
	struct end *b;
	struct ibv_comp_channel *ch;
	bool to_err;		/* move the QP to ERR instead of destroying it */
	int status;		/* the receive's status, or -1: none */
	int destroyed;		/* ibv_destroy_qp's (or ibv_modify_qp's) result */
};

static void *wait_destroy(void *arg)
{
	struct spinner *sp = arg;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	void *cctx;
	int n;

	sp->status = -1;
	sp->destroyed = -1;
	if (ibv_req_notify_cq(sp->b->rcq, 0))
		return NULL;
	n = ibv_poll_cq(sp->b->rcq, 1, &wc);
	if (!n) {
		if (ibv_get_cq_event(sp->ch, &cq, &cctx))
			return NULL;
		ibv_ack_cq_events(cq, 1);
		n = ibv_poll_cq(sp->b->rcq, 1, &wc);
	}
	sp->status = n == 1 ? (int)wc.status : -1;
	if (sp->to_err) {
		struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };

		sp->destroyed = ibv_modify_qp(sp->b->qp, &at, IBV_QP_STATE);
		return NULL;
	}
	sp->destroyed = ibv_destroy_qp(sp->b->qp);
	sp->b->qp = NULL;
	return NULL;
}

static int ack_lost(bool to_err)
{
	/* 4.096 us * 2^10 = 4.2 ms, one retry: a lost ACK fails in about 15 ms. */
	struct popt o = def;
	struct sched_param prio = { .sched_priority = 1 };
	int runs = 100, lost = 0;
	pthread_attr_t ta;
	cpu_set_t cpu;

	o.timeout = 10;
	o.retry_cnt = 1;
	pattern(src, BUF, 11);
	CPU_ZERO(&cpu);
	CPU_SET(sched_getcpu(), &cpu);
	if (sched_setaffinity(0, sizeof(cpu), &cpu))
		FAIL("sched_setaffinity: %s", strerror(errno));
	if (pthread_attr_init(&ta) || pthread_attr_setinheritsched(&ta, PTHREAD_EXPLICIT_SCHED) ||
	    pthread_attr_setschedpolicy(&ta, SCHED_FIFO) || pthread_attr_setschedparam(&ta, &prio) ||
	    pthread_attr_setaffinity_np(&ta, sizeof(cpu), &cpu))
		FAIL("thread attributes");
	for (int i = 0; i < runs; i++) {
		struct spinner sp = { 0 };
		struct ibv_wc wc;
		struct pair p = { 0 };
		pthread_t t;
		int n, ret;

		sp.ch = ibv_create_comp_channel(ctx);
		if (!sp.ch)
			FAIL("ibv_create_comp_channel: %s", strerror(errno));
		rcq_channel = sp.ch;
		ret = make_end(&p.b, false, IBV_QPT_RC);
		rcq_channel = NULL;
		if (ret || make_end(&p.a, false, IBV_QPT_RC) ||
		    connect_qp(p.a.qp, p.b.qp->qp_num, REMOTE_ALL, PSN_A, PSN_B, &o) ||
		    connect_qp(p.b.qp, p.a.qp->qp_num, o.b_access, PSN_B, PSN_A, &o) ||
		    post_recv1(p.b.qp, 1, dst, 64))
			return 1;
		sp.b = &p.b;
		sp.to_err = to_err;
		ret = pthread_create(&t, &ta, wait_destroy, &sp);
		if (ret)
			FAIL("pthread_create (SCHED_FIFO): %s", strerror(ret));
		/* Until the thread sleeps in ibv_get_cq_event. */
		usleep(2000);
		n = post_send1(p.a.qp, IBV_WR_SEND, 2, src, 16, 0) ? -2 : poll_wc(p.a.scq, &wc, WAIT_MS);
		pthread_join(t, NULL);
		if (n == -2)
			return 1;
		if (sp.status != IBV_WC_SUCCESS || sp.destroyed)
			FAIL("run %d: the receive completed with status %d, %s returned %d", i, sp.status,
			     to_err ? "the move to ERR" : "destroy", sp.destroyed);
		if (n != 1)
			FAIL("run %d: the SEND has no completion within %d ms", i, WAIT_MS);
		if (wc.status != IBV_WC_SUCCESS) {
			if (!lost)
				printf("run %d: the SEND completed with %s: its ACK was lost\n", i,
				       ibv_wc_status_str(wc.status));
			lost++;
		}
		if (pair_free(&p))
			return 1;
		if (ibv_destroy_comp_channel(sp.ch))
			FAIL("ibv_destroy_comp_channel: %s", strerror(errno));
	}
	if (lost)
		FAIL("%d of %d SENDs lost their ACK when the responder %s its QP at once", lost, runs,
		     to_err ? "moved to ERR" : "destroyed");
	printf("%s ok: %d SENDs completed with SUCCESS\n", to_err ? "ack_error" : "ack_destroy", runs);
	return 0;
}

static int mode_ack_destroy(void) { return ack_lost(false); }

static int mode_ack_error(void) { return ack_lost(true); }

static const struct {
	const char *name;
	int (*fn)(void);
} modes[] = {
	{ "send", mode_send },		{ "write_read", mode_write_read }, { "atomic", mode_atomic },
	{ "rnr", mode_rnr },		{ "flush_err", mode_flush_err },   { "security", mode_security },
	{ "mw", mode_mw },		{ "retry", mode_retry },	   { "atomic_align", mode_atomic_align },
	{ "flush", mode_flush },	{ "reset", mode_reset },	   { "ack_destroy", mode_ack_destroy },
	{ "ack_error", mode_ack_error }, { "err_held", mode_err_held },
};

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s DEV send|write_read|atomic|rnr|retry|flush_err|security|mw|atomic_align|flush|reset|ack_destroy|ack_error|err_held\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = rrxe_open(argv[1]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	if (find_gid())
		FAIL("%s has no IPv4-mapped GID", argv[1]);
	pd = ibv_alloc_pd(ctx);
	src = aligned_alloc(4096, BUF);
	dst = aligned_alloc(4096, BUF);
	saved = malloc(BUF);
	if (!pd || !src || !dst || !saved)
		FAIL("resources: %s", strerror(errno));
	memset(src, 0, BUF);
	memset(dst, 0, BUF);
	smr = ibv_reg_mr(pd, src, BUF, IBV_ACCESS_LOCAL_WRITE);
	dmr = ibv_reg_mr(pd, dst, BUF, MR_ALL);
	if (!smr || !dmr)
		FAIL("MRs: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[2], modes[i].name))
			return modes[i].fn();
	FAIL("unknown mode %s", argv[2]);
}
