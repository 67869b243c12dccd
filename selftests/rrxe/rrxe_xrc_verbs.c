// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_xrc_verbs DEV FILE: XRC through libibverbs' verbs, as an
 * application uses it. Run it with the rxe provider of the project's
 * rdma-core 59 series (tools/rdma-user-env): stock librxe has no XRC
 * verbs.
 *
 * On DEV (an IPv4 GID; the QPs talk to each other over it): an XRC domain
 * opened through FILE, an XRC SRQ in it (ibv_create_srq_ex, its number
 * from ibv_get_srq_num), an XRC target QP (ibv_create_qp_ex with
 * IBV_QP_INIT_ATTR_XRCD) and an XRC initiator QP, connected. A child
 * process opens the same domain through FILE and the target QP by number
 * (ibv_open_qp); then the creator destroys its handle of the target QP,
 * which lives on for the child:
 *   - a SEND posted with ibv_post_send (wr.qp_type.xrc.remote_srqn) lands
 *     in the XRC SRQ's receive byte for byte, completing on the SRQ's CQ
 *     with the target QP's number;
 *   - a SEND and an RDMA READ posted with the extended API
 *     (wr_set_xrc_srqn) land and read back byte for byte;
 * and once the child exited, the target QP is gone: ibv_open_qp of its
 * number fails. Everything is destroyed at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rrxe_test.h"

#define MSG 3000

/* The XRC domain of FILE on `c`: NULL with errno on failure. */
static struct ibv_xrcd *open_domain(struct ibv_context *c, const char *file, int *fd)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.oflags = O_CREAT,
	};

	*fd = open(file, O_RDONLY | O_CREAT, 0600);
	if (*fd < 0)
		return NULL;
	a.fd = *fd;
	return ibv_open_xrcd(c, &a);
}

/* The child: opens the domain and the target QP `qpn`, says so on `out`,
 * and holds them until `in` closes. */
static int child(const char *dev, const char *file, uint32_t qpn, int in, int out)
{
	struct ibv_context *c = rrxe_open(dev);
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = qpn,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_xrcd *x;
	struct ibv_qp *qp;
	char b;
	int fd;

	if (!c)
		FAIL("child: cannot open %s", dev);
	x = open_domain(c, file, &fd);
	if (!x)
		FAIL("child: ibv_open_xrcd: %s", strerror(errno));
	oa.xrcd = x;
	qp = ibv_open_qp(c, &oa);
	if (!qp)
		FAIL("child: ibv_open_qp of %#x: %s", qpn, strerror(errno));
	if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &ia) || qa.qp_state != IBV_QPS_RTS ||
	    qp->qp_type != IBV_QPT_XRC_RECV)
		FAIL("child: the opened QP is not an XRC target QP in RTS");
	if (write(out, "y", 1) != 1)
		FAIL("child: write");
	if (read(in, &b, 1) < 0)
		FAIL("child: read");
	/* Its exit closes the QP, the domain and the context. */
	return 0;
}

/* Checks the next completions: the initiator's `wr_id` of `opcode` and,
 * for a SEND, the receive `rwr` on the SRQ's CQ from target QP `tqpn`. */
static int completed(struct ibv_cq *scq, struct ibv_cq *rcq, uint64_t wr_id, int opcode,
		     uint64_t rwr, uint32_t tqpn)
{
	struct ibv_wc wc;

	if (!rrxe_poll_one(scq, &wc, 10000) || wc.status != IBV_WC_SUCCESS || wc.wr_id != wr_id ||
	    (int)wc.opcode != opcode)
		FAIL("work request %#llx: status %s, wr_id %#llx", (unsigned long long)wr_id,
		     ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
	if (opcode != IBV_WC_SEND)
		return 0;
	if (!rrxe_poll_one(rcq, &wc, 5000) || wc.status != IBV_WC_SUCCESS || wc.wr_id != rwr ||
	    wc.opcode != IBV_WC_RECV || wc.byte_len != MSG || wc.qp_num != tqpn)
		FAIL("receive %#llx: status %s, wr_id %#llx, %u bytes, QP %#x (target QP %#x)",
		     (unsigned long long)rwr, ibv_wc_status_str(wc.status),
		     (unsigned long long)wc.wr_id, wc.byte_len, wc.qp_num, tqpn);
	return 0;
}

int main(int argc, char **argv)
{
	static uint8_t src[4096], dst[2][4096], back[4096];
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *rcq, *scq;
	struct ibv_mr *ms, *md, *mb;
	struct ibv_xrcd *x;
	struct ibv_srq *srq;
	struct ibv_qp *tgt, *ini;
	struct ibv_qp_ex *qx;
	union ibv_gid gid;
	uint32_t srqn, tqpn;
	int fd, g, to_child[2], to_parent[2], st;
	pid_t pid;
	char b;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEV FILE\n", argv[0]);
		return 2;
	}
	c = rrxe_open(argv[1]);
	if (!c)
		FAIL("cannot open %s", argv[1]);
	g = rrxe_ipv4_gid(c, &gid);
	pd = ibv_alloc_pd(c);
	rcq = ibv_create_cq(c, 8, NULL, NULL, 0);
	scq = ibv_create_cq(c, 8, NULL, NULL, 0);
	ms = pd ? ibv_reg_mr(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE) : NULL;
	md = pd ? ibv_reg_mr(pd, dst, sizeof(dst),
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ) : NULL;
	mb = pd ? ibv_reg_mr(pd, back, sizeof(back), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (g < 0 || !rcq || !scq || !ms || !md || !mb)
		FAIL("no IPv4 GID, or PD, CQs, MRs: %s", strerror(errno));
	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 31 + 5);
	memset(dst, 0xee, sizeof(dst));

	x = open_domain(c, argv[2], &fd);
	if (!x)
		FAIL("ibv_open_xrcd: %s%s", strerror(errno),
		     errno == EOPNOTSUPP ? " (a provider without XRC verbs)" : "");

	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = pd,
		.xrcd = x,
		.cq = rcq,
	};
	srq = ibv_create_srq_ex(c, &sa);
	if (!srq)
		FAIL("ibv_create_srq_ex (XRC): %s", strerror(errno));
	if (ibv_get_srq_num(srq, &srqn))
		FAIL("ibv_get_srq_num: %s", strerror(errno));

	struct ibv_qp_init_attr_ex ta = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x,
	};
	tgt = ibv_create_qp_ex(c, &ta);
	if (!tgt)
		FAIL("ibv_create_qp_ex (XRC_RECV): %s", strerror(errno));
	tqpn = tgt->qp_num;

	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_XRC_SEND,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_cq = scq,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ,
	};
	ini = ibv_create_qp_ex(c, &ia);
	if (!ini)
		FAIL("ibv_create_qp_ex (XRC_SEND): %s", strerror(errno));
	if (rrxe_connect(tgt, ini->qp_num, &gid, g, IBV_MTU_1024,
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 0x100) ||
	    rrxe_connect(ini, tqpn, &gid, g, IBV_MTU_1024, 0, 0x100))
		return 1;

	/* A second process opens the target QP; its creator lets go of it. */
	if (pipe(to_child) || pipe(to_parent))
		FAIL("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (!pid) {
		close(to_child[1]);
		close(to_parent[0]);
		_exit(child(argv[1], argv[2], tqpn, to_child[0], to_parent[1]));
	}
	close(to_child[0]);
	close(to_parent[1]);
	if (read(to_parent[0], &b, 1) != 1 || b != 'y') {
		waitpid(pid, NULL, 0);
		FAIL("the child did not open the target QP");
	}
	if (ibv_destroy_qp(tgt))
		FAIL("destroying the creator's target QP: %s", strerror(errno));

	/* A SEND through ibv_post_send. */
	for (int i = 0; i < 2; i++) {
		struct ibv_sge s = { (uintptr_t)dst[i], MSG, md->lkey };
		struct ibv_recv_wr r = { .wr_id = 0x700 + i, .sg_list = &s, .num_sge = 1 }, *bad;

		if (ibv_post_srq_recv(srq, &r, &bad))
			FAIL("ibv_post_srq_recv: %s", strerror(errno));
	}
	struct ibv_sge s = { (uintptr_t)src, MSG, ms->lkey };
	struct ibv_send_wr w = {
		.wr_id = 0x51, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	w.qp_type.xrc.remote_srqn = srqn;
	if (ibv_post_send(ini, &w, &bad))
		FAIL("ibv_post_send: %s", strerror(errno));
	if (completed(scq, rcq, 0x51, IBV_WC_SEND, 0x700, tqpn))
		return 1;
	if (memcmp(dst[0], src, MSG) || dst[0][MSG] != 0xee)
		FAIL("the SEND's bytes differ");

	/* A SEND and a READ through the extended API. */
	qx = ibv_qp_to_qp_ex(ini);
	ibv_wr_start(qx);
	qx->wr_id = 0x52;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_xrc_srqn(qx, srqn);
	ibv_wr_set_sge(qx, ms->lkey, (uintptr_t)src + 1000, MSG);
	if (ibv_wr_complete(qx))
		FAIL("ibv_wr_complete (SEND): %s", strerror(errno));
	if (completed(scq, rcq, 0x52, IBV_WC_SEND, 0x701, tqpn))
		return 1;
	if (memcmp(dst[1], src + 1000, MSG))
		FAIL("the second SEND's bytes differ");
	ibv_wr_start(qx);
	qx->wr_id = 0x53;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(qx, md->rkey, (uintptr_t)dst[0]);
	ibv_wr_set_xrc_srqn(qx, srqn);
	ibv_wr_set_sge(qx, mb->lkey, (uintptr_t)back, MSG);
	if (ibv_wr_complete(qx))
		FAIL("ibv_wr_complete (READ): %s", strerror(errno));
	if (completed(scq, rcq, 0x53, IBV_WC_RDMA_READ, 0, tqpn))
		return 1;
	if (memcmp(back, src, MSG))
		FAIL("the READ's bytes differ");

	/* The last holder exits: the target QP goes with it. */
	close(to_child[1]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		FAIL("the child failed");
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = tqpn,
		.xrcd = x,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_qp *gone = ibv_open_qp(c, &oa);

	if (gone)
		FAIL("target QP %#x still opens after its last holder exited", tqpn);
	printf("XRC SRQ %#x, target QP %#x (opened by a second process, which outlived its "
	       "creator's handle), initiator QP %#x: two SENDs and a READ through the verbs, "
	       "byte for byte; the target QP gone with its last holder\n", srqn, tqpn,
	       ini->qp_num);
	if (ibv_destroy_qp(ini) || ibv_destroy_srq(srq) || ibv_close_xrcd(x))
		FAIL("tearing down: %s", strerror(errno));
	close(fd);
	ibv_dereg_mr(ms);
	ibv_dereg_mr(md);
	ibv_dereg_mr(mb);
	ibv_destroy_cq(rcq);
	ibv_destroy_cq(scq);
	ibv_dealloc_pd(pd);
	ibv_close_device(c);
	return 0;
}
