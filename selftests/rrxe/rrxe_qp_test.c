// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_qp_test DEV MODE [ARG]: queue pairs through stock libibverbs +
 * librxe: capacities as rxe reports them, limits, the state machine and
 * attribute checks of modify, query, many QPs, exit without destroy.
 * Each mode prints what went wrong and exits non-zero on failure.
 *
 *   caps         reported capacities and bad requests
 *   states       transitions and attribute values, RC, UC and UD
 *   nostate      modify without IBV_QP_STATE is RTS -> RTS, checked
 *   ah           address handles: GRH required, ah_num in the response
 *   flush        moving to ERR completes posted receives with WR_FLUSH_ERR
 *   mcast        multicast attach/detach, rxe's limits, a datagram to a full
 *                group reaching each of its 56 members
 *   many N       N QPs at once, distinct numbers
 *   leak N       N QPs, then exit without destroying them
 *   big N        one RC QP of N send and N receive WRs with the most
 *                gather entries: prints "created" (exit 0), or "ENOMEM"
 *                (exit 3) when its memory cannot be had
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rrxe_test.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_device_attr attr;

static uint32_t pow2m1(uint32_t n)
{
	uint32_t s = 1;

	while (s < n + 1)
		s <<= 1;
	return s - 1;
}

static struct ibv_qp *mkqp(enum ibv_qp_type t, uint32_t swr, uint32_t rwr, uint32_t ssge,
			   uint32_t rsge, uint32_t inl)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = t,
		.cap = { swr, rwr, ssge, rsge, inl },
	};

	return ibv_create_qp(pd, &ia);
}

static int mode_caps(void)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_qp *qp;

	/* Sizes round up as rxe's rings do; the send WQE's room decides the
	 * gather entries and inline bytes reported. */
	qp = mkqp(IBV_QPT_RC, 100, 30, 4, 3, 0);
	if (!qp)
		FAIL("RC QP: %s", strerror(errno));
	if (ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &ia))
		FAIL("ibv_query_qp: %s", strerror(errno));
	if (qa.qp_state != IBV_QPS_RESET)
		FAIL("new QP in state %d", qa.qp_state);
	if (ia.cap.max_send_wr != pow2m1(100) || ia.cap.max_recv_wr != pow2m1(30) ||
	    ia.cap.max_send_sge != 4 || ia.cap.max_recv_sge != 3 || ia.cap.max_inline_data != 64)
		FAIL("caps %u/%u/%u/%u/%u, expected 127/31/4/3/64", ia.cap.max_send_wr, ia.cap.max_recv_wr,
		     ia.cap.max_send_sge, ia.cap.max_recv_sge, ia.cap.max_inline_data);
	if (qp->qp_num < 16 || qp->qp_num > 0xffffff)
		FAIL("QP number %u", qp->qp_num);
	ibv_destroy_qp(qp);

	qp = mkqp(IBV_QPT_UD, 1, 1, 1, 1, 200);
	if (!qp)
		FAIL("UD QP with 200 inline bytes: %s", strerror(errno));
	if (ibv_query_qp(qp, &qa, IBV_QP_CAP, &ia) || ia.cap.max_inline_data != 200 || ia.cap.max_send_sge != 12)
		FAIL("inline 200: reported inline %u sge %u, expected 200 and 12", ia.cap.max_inline_data,
		     ia.cap.max_send_sge);
	ibv_destroy_qp(qp);

	static const struct { uint32_t c[5]; const char *what; } bad[] = {
		{ { 1u << 21, 1, 1, 1, 0 }, "max_send_wr above max_qp_wr" },
		{ { 1, 1u << 21, 1, 1, 0 }, "max_recv_wr above max_qp_wr" },
		{ { 1, 1, 33, 1, 0 }, "max_send_sge 33" },
		{ { 1, 1, 1, 33, 0 }, "max_recv_sge 33" },
		{ { 1, 1, 1, 1, 513 }, "max_inline_data 513" },
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		qp = mkqp(IBV_QPT_RC, bad[i].c[0], bad[i].c[1], bad[i].c[2], bad[i].c[3], bad[i].c[4]);
		if (qp || errno != EINVAL)
			FAIL("%s: %s, expected EINVAL", bad[i].what, qp ? "created" : strerror(errno));
	}
	printf("QP capacities and limits: ok\n");
	return 0;
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, int want, const char *what)
{
	int r = ibv_modify_qp(qp, a, mask);

	if (r != want)
		FAIL("%s: %d (%s), expected %d", what, r, strerror(r), want);
	return 0;
}

/*
 * Modifies without IBV_QP_STATE in RTS: the IB spec's RTS -> RTS, whose
 * attributes alone may change (for RC min_rnr_timer, for UC the access
 * flags, for UD the Q_Key); any other is EINVAL and changes nothing.
 */
static int same_state(struct ibv_qp *qp, enum ibv_qp_type t)
{
	struct ibv_qp_attr a = {}, q;
	struct ibv_qp_init_attr ia;
	int ok_mask = t == IBV_QPT_RC ? IBV_QP_MIN_RNR_TIMER :
		      t == IBV_QPT_UC ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY;

	a.path_mtu = IBV_MTU_256;
	a.dest_qp_num = 0x77;
	a.sq_psn = 0x99;
	if (modify(qp, &a, IBV_QP_SQ_PSN, EINVAL, "RTS: sq_psn without IBV_QP_STATE"))
		return 1;
	if (t != IBV_QPT_UD &&
	    (modify(qp, &a, IBV_QP_PATH_MTU, EINVAL, "RTS: path_mtu without IBV_QP_STATE") ||
	     modify(qp, &a, IBV_QP_DEST_QPN, EINVAL, "RTS: dest_qp_num without IBV_QP_STATE")))
		return 1;
	a.min_rnr_timer = 3;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	a.qkey = 0x2222;
	if (modify(qp, &a, ok_mask, 0, "RTS: its own attribute without IBV_QP_STATE"))
		return 1;
	if (ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			 IBV_QP_MIN_RNR_TIMER | IBV_QP_QKEY, &ia))
		FAIL("query: %s", strerror(errno));
	if (q.qp_state != IBV_QPS_RTS || q.sq_psn != 0x45)
		FAIL("after refused modifies: state %d sq_psn 0x%x, want RTS and 0x45", q.qp_state, q.sq_psn);
	if (t != IBV_QPT_UD && (q.path_mtu != IBV_MTU_1024 || q.dest_qp_num != 0x345678))
		FAIL("after refused modifies: path_mtu %d dest_qp_num 0x%x", q.path_mtu, q.dest_qp_num);
	if ((t == IBV_QPT_RC && q.min_rnr_timer != 3) || (t == IBV_QPT_UD && q.qkey != 0x2222))
		FAIL("RTS -> RTS attribute not taken: min_rnr_timer %d qkey 0x%x", q.min_rnr_timer, q.qkey);
	return 0;
}

static int states(enum ibv_qp_type t, bool without_state)
{
	struct ibv_qp *qp = mkqp(t, 16, 16, 1, 1, 0);
	struct ibv_qp_attr a = {}, q;
	struct ibv_qp_init_attr ia;
	union ibv_gid gid;
	int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	int rtr_mask = IBV_QP_STATE, rts_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	if (!qp)
		FAIL("QP type %d: %s", t, strerror(errno));
	if (ibv_query_gid(ctx, 1, 0, &gid))
		FAIL("ibv_query_gid: %s", strerror(errno));
	if (t == IBV_QPT_UD) {
		init_mask |= IBV_QP_QKEY;
	} else {
		init_mask |= IBV_QP_ACCESS_FLAGS;
		rtr_mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (t == IBV_QPT_RC) {
			rtr_mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
			rts_mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
	}

	a.qp_state = IBV_QPS_RTS;
	if (modify(qp, &a, IBV_QP_STATE, EINVAL, "RESET -> RTS"))
		return 1;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 2;
	a.qkey = 0x11111111;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (modify(qp, &a, init_mask, EINVAL, "INIT with port 2") ||
	    modify(qp, &a, IBV_QP_STATE, EINVAL, "INIT without its required attributes"))
		return 1;
	a.port_num = 1;
	if (modify(qp, &a, init_mask, 0, "RESET -> INIT"))
		return 1;

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x12345678;
	a.rq_psn = 0xabcdef12;
	a.max_dest_rd_atomic = 200;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.hop_limit = 64;
	if (t == IBV_QPT_RC && modify(qp, &a, rtr_mask, EINVAL, "RTR with max_dest_rd_atomic 200"))
		return 1;
	a.max_dest_rd_atomic = 16;
	a.path_mtu = 7;
	if (t != IBV_QPT_UD && modify(qp, &a, rtr_mask, EINVAL, "RTR with path_mtu 7"))
		return 1;
	a.path_mtu = IBV_MTU_1024;
	if (modify(qp, &a, rtr_mask, 0, "INIT -> RTR"))
		return 1;

	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0xff000045;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	if (modify(qp, &a, rts_mask, 0, "RTR -> RTS"))
		return 1;
	if (ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN | IBV_QP_DEST_QPN | IBV_QP_QKEY, &ia))
		FAIL("query: %s", strerror(errno));
	if (q.qp_state != IBV_QPS_RTS || q.sq_psn != 0x45)
		FAIL("after RTS: state %d sq_psn 0x%x, expected RTS and 0x45 (24 bits)", q.qp_state, q.sq_psn);
	if (t == IBV_QPT_UD && q.qkey != 0x11111111)
		FAIL("qkey 0x%x", q.qkey);
	if (t != IBV_QPT_UD && (q.rq_psn != 0xcdef12 || q.dest_qp_num != 0x345678 || q.path_mtu != IBV_MTU_1024))
		FAIL("rq_psn 0x%x dest_qpn 0x%x mtu %d", q.rq_psn, q.dest_qp_num, q.path_mtu);
	if (without_state && same_state(qp, t))
		return 1;

	a.qp_state = IBV_QPS_ERR;
	if (modify(qp, &a, IBV_QP_STATE, 0, "RTS -> ERR"))
		return 1;
	a.qp_state = IBV_QPS_RTS;
	if (modify(qp, &a, IBV_QP_STATE, EINVAL, "ERR -> RTS"))
		return 1;
	a.qp_state = IBV_QPS_RESET;
	if (modify(qp, &a, IBV_QP_STATE, 0, "ERR -> RESET"))
		return 1;
	if (ibv_query_qp(qp, &q, IBV_QP_STATE, &ia) || q.qp_state != IBV_QPS_RESET)
		FAIL("state after reset: %d", q.qp_state);
	if (ibv_destroy_qp(qp))
		FAIL("destroy: %s", strerror(errno));
	return 0;
}

static int mode_states(void)
{
	if (states(IBV_QPT_RC, false) || states(IBV_QPT_UC, false) || states(IBV_QPT_UD, false))
		return 1;
	printf("QP state machine and attribute checks: ok\n");
	return 0;
}

static int mode_nostate(void)
{
	if (states(IBV_QPT_RC, true) || states(IBV_QPT_UC, true) || states(IBV_QPT_UD, true))
		return 1;
	printf("modify without IBV_QP_STATE: ok\n");
	return 0;
}

/* IB_USER_VERBS_CMD_CREATE_AH through write(), with `drv` bytes of room
 * for the driver response; returns errno or 0 and the ah_num. */
static int raw_create_ah(union ibv_gid *gid, unsigned drv, uint32_t *ah_num, uint32_t *handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_ah cmd;
	} req;
	struct {
		struct ib_uverbs_create_ah_resp resp;
		uint32_t drv[2];
	} resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_CREATE_AH;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = (sizeof(resp.resp) + drv) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.pd_handle = pd->handle;
	memcpy(req.cmd.attr.grh.dgid, gid->raw, 16);
	req.cmd.attr.grh.hop_limit = 64;
	req.cmd.attr.is_global = 1;
	req.cmd.attr.port_num = 1;
	if (write(ctx->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	*ah_num = resp.drv[0];
	*handle = resp.resp.ah_handle;
	return 0;
}

static int raw_destroy_ah(uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_ah cmd;
	} req;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_DESTROY_AH;
	req.hdr.in_words = sizeof(req) / 4;
	req.cmd.ah_handle = handle;
	return write(ctx->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

static int mode_ah(void)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 64 } };
	static uint32_t nums[200], handles[200];
	struct ibv_ah *ah[100];
	union ibv_gid gid;
	uint32_t n, h;
	int r;

	if (ibv_query_gid(ctx, 1, 0, &gid))
		FAIL("ibv_query_gid: %s", strerror(errno));
	a.grh.dgid = gid;
	for (int i = 0; i < 100; i++) {
		ah[i] = ibv_create_ah(pd, &a);
		if (!ah[i])
			FAIL("ibv_create_ah #%d: %s", i, strerror(errno));
	}
	for (int i = 0; i < 100; i++)
		if (ibv_destroy_ah(ah[i]))
			FAIL("ibv_destroy_ah: %s", strerror(errno));
	a.is_global = 0;
	errno = 0;
	if ((ah[0] = ibv_create_ah(pd, &a)) || !errno)
		FAIL("an AH without GRH was created on RoCE");

	for (int i = 0; i < 200; i++) {
		if ((r = raw_create_ah(&gid, 8, &nums[i], &handles[i])))
			FAIL("raw CREATE_AH #%d: %s", i, strerror(r));
		if (nums[i] < 1 || nums[i] > 32767)
			FAIL("ah_num %u outside 1..32767", nums[i]);
		for (int j = 0; j < i; j++)
			if (nums[j] == nums[i])
				FAIL("AHs %d and %d share ah_num %u", j, i, nums[i]);
	}
	/* An old provider's response has no room for ah_num: still created. */
	if ((r = raw_create_ah(&gid, 0, &n, &h)) || (r = raw_destroy_ah(h)))
		FAIL("CREATE_AH without room for ah_num: %s", strerror(r));
	for (int i = 0; i < 200; i++)
		if ((r = raw_destroy_ah(handles[i])))
			FAIL("DESTROY_AH: %s", strerror(r));
	printf("AHs: ok\n");
	return 0;
}

static int mode_flush(void)
{
	static char buf[4096];
	struct ibv_cq *scq = ibv_create_cq(ctx, 64, NULL, NULL, 0), *rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp_init_attr ia = { .send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
				       .cap = { 16, 16, 1, 2, 0 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
	struct ibv_sge sge = { (uintptr_t)buf, 64, 0 };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc[32];
	struct ibv_qp *qp;
	int n, r;

	if (!scq || !rcq || !mr)
		FAIL("CQs/MR: %s", strerror(errno));
	sge.lkey = mr->lkey;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		FAIL("QP: %s", strerror(errno));
	if ((r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
		FAIL("INIT: %s", strerror(r));
	for (int i = 0; i < 10; i++) {
		wr.wr_id = 1000 + i;
		if ((r = ibv_post_recv(qp, &wr, &bad)))
			FAIL("post_recv %d: %s", i, strerror(r));
	}
	if ((n = ibv_poll_cq(rcq, 32, wc)) != 0)
		FAIL("%d completions before the error", n);
	a.qp_state = IBV_QPS_ERR;
	if ((r = ibv_modify_qp(qp, &a, IBV_QP_STATE)))
		FAIL("ERR: %s", strerror(r));
	n = ibv_poll_cq(rcq, 32, wc);
	if (n != 10)
		FAIL("%d receive completions after ERR, expected 10", n);
	for (int i = 0; i < n; i++)
		if (wc[i].wr_id != 1000u + i || wc[i].status != IBV_WC_WR_FLUSH_ERR || wc[i].qp_num != qp->qp_num)
			FAIL("completion %d: wr_id %llu status %d qp %u", i, (unsigned long long)wc[i].wr_id,
			     wc[i].status, wc[i].qp_num);
	if ((n = ibv_poll_cq(scq, 32, wc)) != 0)
		FAIL("%d send completions with no send posted", n);
	/* Moving to ERR again flushes nothing twice. */
	a.qp_state = IBV_QPS_RESET;
	if ((r = ibv_modify_qp(qp, &a, IBV_QP_STATE)) || ibv_poll_cq(rcq, 32, wc) != 0)
		FAIL("RESET after flush: %s", strerror(r));
	if (ibv_destroy_qp(qp) || ibv_destroy_cq(scq) || ibv_destroy_cq(rcq))
		FAIL("cleanup: %s", strerror(errno));
	printf("flush: ok\n");
	return 0;
}

static void mgid(union ibv_gid *g, unsigned n)
{
	memset(g, 0, sizeof(*g));
	g->raw[0] = 0xff;
	g->raw[1] = 0x0e;
	g->raw[14] = n >> 8;
	g->raw[15] = n;
}

/*
 * A datagram sent to multicast group `g`, of which q[0] to q[55] are the
 * members (a full group), reaches each member once, its payload intact.
 * q[56] sends it. Every QP is taken to RTS here.
 */
static int mcast_deliver(struct ibv_qp **q, const union ibv_gid *g)
{
	enum { MEMBERS = 56, GRH_LEN = 40, LEN = 64, QKEY = 0x11111111 };
	static uint8_t buf[MEMBERS + 1][GRH_LEN + LEN];
	struct ibv_wc wc[MEMBERS + 1];
	uint8_t seen[MEMBERS] = { 0 };
	union ibv_gid sgid;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	int sgid_index = -1, recvs = 0, sends = 0, r;

	for (int i = 0; i < 16 && sgid_index < 0; i++) {
		static const uint8_t zero[16];

		if (ibv_query_gid(ctx, 1, i, &sgid))
			break;
		if (memcmp(sgid.raw, zero, 16))
			sgid_index = i;
	}
	if (sgid_index < 0)
		FAIL("no GID on port 1");
	for (int i = 0; i <= MEMBERS; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };

		r = ibv_modify_qp(q[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
		a.qp_state = IBV_QPS_RTR;
		r = r ?: ibv_modify_qp(q[i], &a, IBV_QP_STATE);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0;
		r = r ?: ibv_modify_qp(q[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
		if (r)
			FAIL("UD QP %d to RTS: %s", i, strerror(r));
	}
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		FAIL("reg_mr: %s", strerror(errno));
	memset(buf, 0xee, sizeof(buf));
	for (int i = 0; i < LEN; i++)
		buf[MEMBERS][GRH_LEN + i] = (uint8_t)(i * 7 + 1);
	for (int i = 0; i < MEMBERS; i++) {
		struct ibv_sge sge = { (uintptr_t)buf[i], GRH_LEN + LEN, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		if ((r = ibv_post_recv(q[i], &wr, &bad)))
			FAIL("post_recv on member %d: %s", i, strerror(r));
	}
	ah = ibv_create_ah(pd, &(struct ibv_ah_attr){
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = *g, .sgid_index = sgid_index, .hop_limit = 1 },
	});
	if (!ah)
		FAIL("AH to the group: %s", strerror(errno));
	{
		struct ibv_sge sge = { (uintptr_t)&buf[MEMBERS][GRH_LEN], LEN, mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 1000, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = ah, .remote_qpn = 0xffffff, .remote_qkey = QKEY },
		}, *bad;

		if ((r = ibv_post_send(q[MEMBERS], &wr, &bad)))
			FAIL("post_send to the group: %s", strerror(r));
	}
	for (int t = 0; t < 5000 && recvs + sends < MEMBERS + 1; t++) {
		int n = ibv_poll_cq(cq, MEMBERS + 1, wc);

		if (n < 0)
			FAIL("poll_cq: %d", n);
		for (int k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS)
				FAIL("completion wr_id %llu: status %s", (unsigned long long)wc[k].wr_id,
				     ibv_wc_status_str(wc[k].status));
			if (wc[k].wr_id == 1000) {
				sends++;
				continue;
			}
			if (wc[k].wr_id >= MEMBERS || wc[k].qp_num != q[wc[k].wr_id]->qp_num ||
			    seen[wc[k].wr_id]++ || wc[k].byte_len != GRH_LEN + LEN)
				FAIL("receive wr_id %llu on QP %u, %u bytes: not one per member",
				     (unsigned long long)wc[k].wr_id, wc[k].qp_num, wc[k].byte_len);
			if (memcmp(&buf[wc[k].wr_id][GRH_LEN], &buf[MEMBERS][GRH_LEN], LEN))
				FAIL("member %llu received other bytes", (unsigned long long)wc[k].wr_id);
			recvs++;
		}
		if (!n)
			usleep(1000);
	}
	if (recvs != MEMBERS || sends != 1)
		FAIL("%d of %d members received the datagram, %d send completions", recvs, MEMBERS, sends);
	if (ibv_destroy_ah(ah) || ibv_dereg_mr(mr))
		FAIL("cleanup: %s", strerror(errno));
	return 0;
}

static int mode_mcast(void)
{
	static struct ibv_qp *q[57];
	union ibv_gid g;
	struct ibv_qp *rc;
	int r;

	for (int i = 0; i < 57; i++)
		if (!(q[i] = mkqp(IBV_QPT_UD, 4, 4, 1, 1, 0)))
			FAIL("UD QP %d: %s", i, strerror(errno));
	mgid(&g, 1);
	if ((r = ibv_attach_mcast(q[0], &g, 0)) || (r = ibv_attach_mcast(q[0], &g, 0)))
		FAIL("attach (twice): %s", strerror(r));
	if ((r = ibv_detach_mcast(q[0], &g, 0)))
		FAIL("detach: %s", strerror(r));
	if ((r = ibv_detach_mcast(q[0], &g, 0)) != EINVAL)
		FAIL("detach when not attached: %d, expected EINVAL", r);
	rc = mkqp(IBV_QPT_RC, 4, 4, 1, 1, 0);
	if (!rc || (r = ibv_attach_mcast(rc, &g, 0)) != EINVAL)
		FAIL("RC QP attach: %d, expected EINVAL", r);
	ibv_destroy_qp(rc);

	/* 56 QPs per group. */
	for (int i = 0; i < 56; i++)
		if ((r = ibv_attach_mcast(q[i], &g, 0)))
			FAIL("QP %d of 56 on one group: %s", i, strerror(r));
	if ((r = ibv_attach_mcast(q[56], &g, 0)) != ENOMEM)
		FAIL("57th QP on one group: %d, expected ENOMEM", r);
	if (mcast_deliver(q, &g))
		return 1;
	if (ibv_destroy_qp(q[3]) != EBUSY)
		FAIL("an attached QP was destroyed");
	for (int i = 0; i < 56; i++)
		if ((r = ibv_detach_mcast(q[i], &g, 0)))
			FAIL("detach QP %d: %s", i, strerror(r));

	/* 8192 groups. */
	for (unsigned n = 0; n < 8192; n++) {
		mgid(&g, n);
		if ((r = ibv_attach_mcast(q[0], &g, 0)))
			FAIL("group %u of 8192: %s", n, strerror(r));
	}
	mgid(&g, 8192);
	if ((r = ibv_attach_mcast(q[1], &g, 0)) != ENOMEM)
		FAIL("group 8193: %d, expected ENOMEM", r);
	for (unsigned n = 0; n < 8192; n++) {
		mgid(&g, n);
		if ((r = ibv_detach_mcast(q[0], &g, 0)))
			FAIL("detach group %u: %s", n, strerror(r));
	}
	/* Room again, and destroy works once detached. */
	if ((r = ibv_attach_mcast(q[1], &g, 0)) || (r = ibv_detach_mcast(q[1], &g, 0)))
		FAIL("attach after all were detached: %s", strerror(r));
	for (int i = 0; i < 57; i++)
		if (ibv_destroy_qp(q[i]))
			FAIL("destroy QP %d: %s", i, strerror(errno));
	printf("multicast: ok\n");
	return 0;
}

static int mode_many(int n, int leak)
{
	struct ibv_qp **qps = calloc(n, sizeof(*qps));

	for (int i = 0; i < n; i++) {
		qps[i] = mkqp(i % 3 == 0 ? IBV_QPT_RC : i % 3 == 1 ? IBV_QPT_UC : IBV_QPT_UD, 8, 8, 1, 1, 0);
		if (!qps[i])
			FAIL("QP %d: %s", i, strerror(errno));
		for (int j = 0; j < i; j += 97)
			if (qps[j]->qp_num == qps[i]->qp_num)
				FAIL("QPs %d and %d share number %u", j, i, qps[i]->qp_num);
	}
	if (leak) {
		/* Some attached to a multicast group, which exit must undo. */
		union ibv_gid g;
		int r;

		mgid(&g, 7);
		for (int i = 2, k = 0; i < n && k < 50; i += 3, k++)
			if ((r = ibv_attach_mcast(qps[i], &g, 0)))
				FAIL("attach QP %d: %s", i, strerror(r));
	}
	printf("created %d\n", n);
	fflush(stdout);
	if (leak)
		_exit(0);
	for (int i = 0; i < n; i++)
		if (ibv_destroy_qp(qps[i]))
			FAIL("destroy QP %d: %s", i, strerror(errno));
	free(qps);
	return 0;
}

/* One RC QP as large as asked: its rings and RC state are the caller's. */
static int mode_big(uint32_t n)
{
	struct ibv_qp *qp = mkqp(IBV_QPT_RC, n, n, attr.max_sge, attr.max_sge, 0);

	if (!qp && errno == ENOMEM) {
		printf("ENOMEM\n");
		return 3;
	}
	if (!qp)
		FAIL("create QP of %u WRs: %s", n, strerror(errno));
	printf("created\n");
	if (ibv_destroy_qp(qp))
		FAIL("destroy: %s", strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{

	if (argc < 3) {
		fprintf(stderr, "usage: %s DEV MODE [ARG]\n", argv[0]);
		return 2;
	}
	ctx = rrxe_open(argv[1]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	if (ibv_query_device(ctx, &attr))
		FAIL("ibv_query_device: %s", strerror(errno));
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!pd || !cq)
		FAIL("PD/CQ: %s", strerror(errno));

	if (!strcmp(argv[2], "caps"))
		return mode_caps();
	if (!strcmp(argv[2], "states"))
		return mode_states();
	if (!strcmp(argv[2], "nostate"))
		return mode_nostate();
	if (!strcmp(argv[2], "mcast"))
		return mode_mcast();
	if (!strcmp(argv[2], "flush"))
		return mode_flush();
	if (!strcmp(argv[2], "ah"))
		return mode_ah();
	if (!strcmp(argv[2], "many"))
		return mode_many(argc > 3 ? atoi(argv[3]) : 500, 0);
	if (!strcmp(argv[2], "leak"))
		return mode_many(argc > 3 ? atoi(argv[3]) : 500, 1);
	if (!strcmp(argv[2], "big") && argc > 3)
		return mode_big(atoi(argv[3]));
	FAIL("unknown mode %s", argv[2]);
}
