// SPDX-License-Identifier: GPL-2.0
/*
 * The QPs the drop-counter test aims its packets at (rrxe_drops.sh):
 *
 *   rrxe_drops_test DEV PEER4 PEER6
 *
 * On DEV's first IPv4 GID: a UD QP in RTS with Q_Key 0x11111111 and no
 * receive posted, an RC QP in RTR connected to QP 0xabcde at PEER4 whose
 * next expected PSN is 0x100; and an address handle for PEER6, from DEV's
 * first global IPv6 GID. Prints
 * "ud QPN rc QPN" (hex) once they are ready, then reads commands from
 * standard input until it ends:
 *   send   posts one 64-byte UD SEND to QP 0x123 at PEER6 through the
 *          address handle and prints "sent STATUS" once it completes.
 */
#include <arpa/inet.h>
#include <errno.h>

#include "rrxe_test.h"

#define QKEY 0x11111111u
#define RC_PEER_QPN 0xabcdeu
#define RC_PSN 0x100u
#define UD_PEER_QPN 0x123u

/* Waits up to 5 s for one completion of `cq`: its status, or -1. */
static int one_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	for (int i = 0; i < 5000; i++) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return -1;
		if (n)
			return wc.status;
		usleep(1000);
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr ia = { .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp_attr a = { 0 };
	struct ibv_ah_attr aa = { 0 };
	union ibv_gid gid, peer, peer6;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *ud, *rc;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	static char buf[64];
	char line[64];
	int gi, gi6 = -1;

	if (argc != 4) {
		fprintf(stderr, "usage: %s DEV PEER4 PEER6\n", argv[0]);
		return 2;
	}
	if (inet_pton(AF_INET6, argv[3], peer6.raw) != 1)
		FAIL("bad address %s", argv[3]);
	memset(&peer, 0, sizeof(peer));
	peer.raw[10] = peer.raw[11] = 0xff;
	if (inet_pton(AF_INET, argv[2], peer.raw + 12) != 1)
		FAIL("bad address %s", argv[2]);
	ctx = rrxe_open(argv[1]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	for (int i = 0; i < 16 && !ibv_query_gid(ctx, 1, i, &gid); i++) {
		if (gid.raw[0] != 0 && !(gid.raw[0] == 0xfe && (gid.raw[1] & 0xc0) == 0x80)) {
			gi6 = i;
			break;
		}
	}
	gi = rrxe_ipv4_gid(ctx, &gid);
	if (gi < 0 || gi6 < 0)
		FAIL("no IPv4 or global IPv6 GID on %s", argv[1]);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr)
		FAIL("PD, CQ or MR: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_UD;
	ud = ibv_create_qp(pd, &ia);
	ia.qp_type = IBV_QPT_RC;
	rc = ud ? ibv_create_qp(pd, &ia) : NULL;
	if (!rc)
		FAIL("create QPs: %s", strerror(errno));

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = QKEY;
	if (ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		FAIL("UD to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(ud, &a, IBV_QP_STATE))
		FAIL("UD to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		FAIL("UD to RTS");
	/* RTS, so RTR with rq_psn RC_PSN. */
	if (rrxe_connect(rc, RC_PEER_QPN, &peer, gi, IBV_MTU_1024, IBV_ACCESS_REMOTE_WRITE, RC_PSN))
		return 1;

	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.dgid = peer6;
	aa.grh.sgid_index = gi6;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		FAIL("create AH to %s: %s", argv[3], strerror(errno));

	printf("ud 0x%x rc 0x%x\n", ud->qp_num, rc->qp_num);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = sizeof(buf), .lkey = mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		if (strcmp(line, "send\n"))
			FAIL("unknown command %s", line);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = UD_PEER_QPN;
		wr.wr.ud.remote_qkey = QKEY;
		if (ibv_post_send(ud, &wr, &bad))
			FAIL("post send");
		printf("sent %d\n", one_wc(cq));
		fflush(stdout);
	}
	ibv_destroy_ah(ah);
	ibv_destroy_qp(rc);
	ibv_destroy_qp(ud);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
