// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_xrc_test DEV MODE: XRC objects through the uverbs commands
 * themselves (stock librxe has no XRC verbs, so ibv_open_xrcd would fail
 * in the provider before reaching the kernel). Each mode prints what
 * went wrong and exits non-zero on failure.
 *
 *   xrcd   XRC domains: one without a file, opened and closed; one shared
 *          through a file, with uverbs' O_CREAT and O_EXCL rules, kept
 *          alive by a second process after its creator closed it and
 *          freed when that process exits.
 *   xsrq   XRC SRQs: made in a domain on a CQ, each with its own number
 *          (24 bits, rxe's number for it); the domain cannot be closed
 *          while one lives (EBUSY), and can once they are destroyed.
 *   tgt    XRC target QPs: one made in a domain shared through a file,
 *          taken through INIT to RTR (its attributes read back, a wrong
 *          transition refused), no doorbell on it; a second process opens
 *          it by number and keeps it alive after its creator destroyed
 *          its handle; it is gone once that process exits.
 *   recv LOCAL PEER INJECT
 *          An XRC target QP connected to PEER (IPv4) takes XRC SENDs that
 *          `INJECT KIND QPN PSN SRQN COUNT LEN` (rrxe_wire_fuzz one, run
 *          from PEER) sends it: one naming an XRC SRQ of its domain lands
 *          in that SRQ's receive, byte for byte, and completes on the
 *          SRQ's CQ with the target QP's number; ones naming an XRC SRQ of
 *          another domain, a basic SRQ or no SRQ, and an RC SEND, take
 *          nothing and are counted as header errors (rcvd_hdr_err); the
 *          next XRC SEND at the same PSN lands in the next receive.
 *   ini DEV_T IP_T DEV_I IP_I
 *          An XRC initiator QP on DEV_I (IPv4 GID IP_I; the same device as
 *          DEV_T for loopback) and an XRC target QP on DEV_T, connected;
 *          WQEs posted in the initiator's ring by hand, with the XRC SRQ
 *          number in the word rrxe reads for it (include/uapi/rdma/
 *          rrxe-abi.h). A SEND lands in the XRC SRQ's receive byte for
 *          byte and completes on both sides (the receive on the SRQ's CQ
 *          with the target QP's number); an RDMA WRITE with a key of the
 *          SRQ's PD lands; one with a key of another PD fails with a
 *          remote access error. After both QPs were reset and connected
 *          again, an RDMA READ of the SEND's bytes through a key of the
 *          SRQ's PD (four response packets) returns them byte for byte;
 *          one through a key of another PD fails with a remote access
 *          error and reads nothing. The initiator has no receive ring.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rrxe_test.h"

/* IB_USER_VERBS_CMD_OPEN_XRCD on `c`: errno, or 0 and the handle. */
static int open_xrcd(struct ibv_context *c, int fd, int oflags, uint32_t *handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_open_xrcd cmd;
	} req;
	struct ib_uverbs_open_xrcd_resp resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_OPEN_XRCD;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.fd = fd;
	req.cmd.oflags = oflags;
	if (write(c->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	*handle = resp.xrcd_handle;
	return 0;
}

static int close_xrcd(struct ibv_context *c, uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_close_xrcd cmd;
	} req;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_CLOSE_XRCD;
	req.hdr.in_words = sizeof(req) / 4;
	req.cmd.xrcd_handle = handle;
	return write(c->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

/* IB_USER_VERBS_CMD_CREATE_QP of an XRC target QP in domain `xrcd`
 * (named where a PD is for the other types): errno, or 0, its handle and
 * its number. */
static int create_tgt_qp(struct ibv_context *c, uint32_t xrcd, uint32_t *handle, uint32_t *qpn)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_qp cmd;
	} req;
	struct ib_uverbs_create_qp_resp resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_CREATE_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.pd_handle = xrcd;
	req.cmd.qp_type = IBV_QPT_XRC_RECV;
	if (write(c->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	*handle = resp.qp_handle;
	*qpn = resp.qpn;
	return 0;
}

/* IB_USER_VERBS_CMD_OPEN_QP: the XRC target QP `qpn` of domain `xrcd`. */
static int open_qp(struct ibv_context *c, uint32_t xrcd, uint32_t qpn, uint32_t *handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_open_qp cmd;
	} req;
	struct ib_uverbs_create_qp_resp resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_OPEN_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.pd_handle = xrcd;
	req.cmd.qpn = qpn;
	req.cmd.qp_type = IBV_QPT_XRC_RECV;
	if (write(c->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	if (resp.qpn != qpn)
		return EPROTO;
	*handle = resp.qp_handle;
	return 0;
}

static int destroy_qp(struct ibv_context *c, uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_qp cmd;
	} req;
	struct ib_uverbs_destroy_qp_resp resp;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_DESTROY_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.qp_handle = handle;
	return write(c->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

/* IB_USER_VERBS_CMD_MODIFY_QP of `handle` with `m` (its qp_handle set
 * here). */
static int modify_qp(struct ibv_context *c, uint32_t handle, struct ib_uverbs_modify_qp *m)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_modify_qp cmd;
	} req;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_MODIFY_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.cmd = *m;
	req.cmd.qp_handle = handle;
	return write(c->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

static int query_qp(struct ibv_context *c, uint32_t handle, struct ib_uverbs_query_qp_resp *resp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_query_qp cmd;
	} req;

	memset(&req, 0, sizeof(req));
	memset(resp, 0, sizeof(*resp));
	req.hdr.command = IB_USER_VERBS_CMD_QUERY_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(*resp) / 4;
	req.cmd.response = (uintptr_t)resp;
	req.cmd.qp_handle = handle;
	req.cmd.attr_mask = IBV_QP_STATE;
	return write(c->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

/* The last XRC SRQ's ring, as rxe's create response gives it. */
static struct mminfo last_srq_ring;

/* IB_USER_VERBS_CMD_CREATE_XSRQ of an XRC SRQ of 16 receives in domain
 * `xrcd`, PD `pd` and CQ `cq`: errno, or 0, the handle, the number uverbs
 * returns and the one in rxe's response. */
static int create_srq_of(struct ibv_context *c, int type, uint32_t xrcd, struct ibv_pd *pd,
			 struct ibv_cq *cq, uint32_t *handle, uint32_t *srqn, uint32_t *rxe_num)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_xsrq cmd;
	} req;
	struct {
		struct ib_uverbs_create_srq_resp resp;
		struct rxe_create_srq_resp drv;
	} resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_CREATE_XSRQ;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.srq_type = type;
	req.cmd.pd_handle = pd->handle;
	req.cmd.max_wr = 16;
	req.cmd.max_sge = 1;
	req.cmd.xrcd_handle = xrcd;
	req.cmd.cq_handle = cq->handle;
	if (write(c->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	*handle = resp.resp.srq_handle;
	*srqn = resp.resp.srqn;
	*rxe_num = resp.drv.srq_num;
	last_srq_ring = resp.drv.mi;
	return 0;
}

static int create_xsrq(struct ibv_context *c, uint32_t xrcd, struct ibv_pd *pd,
		       struct ibv_cq *cq, uint32_t *handle, uint32_t *srqn, uint32_t *rxe_num)
{
	return create_srq_of(c, IBV_SRQT_XRC, xrcd, pd, cq, handle, srqn, rxe_num);
}

static int destroy_srq(struct ibv_context *c, uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_srq cmd;
	} req;
	struct ib_uverbs_destroy_srq_resp resp;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_DESTROY_SRQ;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.srq_handle = handle;
	return write(c->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

/* Opens the domain of `fd` without O_CREAT: errno (EAGAIN when there is
 * none), or 0 once it was opened and closed again. */
static int exists(struct ibv_context *c, int fd)
{
	uint32_t h;
	int r = open_xrcd(c, fd, 0, &h);

	return r ? r : close_xrcd(c, h);
}

static int mode_xrcd(const char *dev, struct ibv_context *c)
{
	char path[] = "/tmp/rrxe-xrcd.XXXXXX";
	int fd, r, to_child[2], to_parent[2];
	uint32_t h0, h1, h2, h3;
	char b = 0;
	pid_t pid;

	r = open_xrcd(c, -1, 0, &h0);
	if (r)
		FAIL("a domain without a file: %s", strerror(r));
	if ((r = close_xrcd(c, h0)))
		FAIL("closing it: %s", strerror(r));
	if ((r = close_xrcd(c, h0)) != ENOENT)
		FAIL("closing it twice: %s, expected ENOENT", r ? strerror(r) : "closed");

	fd = mkstemp(path);
	if (fd < 0)
		FAIL("mkstemp: %s", strerror(errno));
	unlink(path);
	if ((r = exists(c, fd)) != EAGAIN)
		FAIL("a file with no domain, without O_CREAT: %s, expected EAGAIN",
		     r ? strerror(r) : "opened");
	if ((r = open_xrcd(c, fd, O_CREAT, &h1)))
		FAIL("a file's domain, O_CREAT: %s", strerror(r));
	if ((r = open_xrcd(c, fd, O_CREAT | O_EXCL, &h2)) != EINVAL)
		FAIL("O_CREAT | O_EXCL on a file with a domain: %s, expected EINVAL",
		     r ? strerror(r) : "opened");
	if ((r = exists(c, fd)))
		FAIL("the file's domain again, without O_CREAT: %s", strerror(r));

	/* A second process opens the domain by the same file and holds it. */
	if (pipe(to_child) || pipe(to_parent))
		FAIL("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (!pid) {
		struct ibv_context *c2 = rrxe_open(dev);

		if (!c2 || open_xrcd(c2, fd, 0, &h3))
			_exit(1);
		if (write(to_parent[1], "y", 1) != 1 || read(to_child[0], &b, 1) != 1)
			_exit(1);
		/* Exits holding it: the process's cleanup closes it. */
		_exit(0);
	}
	if (read(to_parent[0], &b, 1) != 1 || b != 'y')
		FAIL("the second process could not open the file's domain");
	if ((r = close_xrcd(c, h1)))
		FAIL("closing the creator's handle: %s", strerror(r));
	if ((r = exists(c, fd)))
		FAIL("with the second process holding it, the domain is gone: %s", strerror(r));
	if (write(to_child[1], "x", 1) != 1 || waitpid(pid, &r, 0) != pid || r)
		FAIL("the second process failed (status %d)", r);
	if ((r = exists(c, fd)) != EAGAIN)
		FAIL("after the last holder exited, the domain is still there: %s",
		     r ? strerror(r) : "opened");
	close(fd);
	printf("XRC domains: opened, shared, closed\n");
	return 0;
}

static int mode_xsrq(struct ibv_context *c)
{
	uint32_t x, h[2], n[2], rn[2];
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	int r;

	if (!pd || !cq)
		FAIL("PD, CQ: %s", strerror(errno));
	if ((r = open_xrcd(c, -1, 0, &x)))
		FAIL("a domain: %s", strerror(r));
	for (int i = 0; i < 2; i++) {
		if ((r = create_xsrq(c, x, pd, cq, &h[i], &n[i], &rn[i])))
			FAIL("XRC SRQ %d: %s", i, strerror(r));
		if (!n[i] || n[i] >= 1 << 24 || n[i] != rn[i])
			FAIL("XRC SRQ %d: number %#x, rxe's %#x", i, n[i], rn[i]);
	}
	if (n[0] == n[1])
		FAIL("two XRC SRQs share the number %#x", n[0]);
	if ((r = close_xrcd(c, x)) != EBUSY)
		FAIL("closing the domain of live XRC SRQs: %s, expected EBUSY",
		     r ? strerror(r) : "closed");
	for (int i = 0; i < 2; i++)
		if ((r = destroy_srq(c, h[i])))
			FAIL("destroying XRC SRQ %d: %s", i, strerror(r));
	if ((r = close_xrcd(c, x)))
		FAIL("closing the domain afterwards: %s", strerror(r));
	printf("XRC SRQs %#x and %#x\n", n[0], n[1]);
	return 0;
}

/* Takes the XRC target QP `h` to INIT and to RTR from QP `dqpn` (a
 * link-local GID, whose MAC needs no neighbour) and reads it back. */
static int tgt_connect(struct ibv_context *c, uint32_t h, uint32_t dqpn)
{
	static const uint8_t dgid[16] = { 0xfe, 0x80, [8] = 0x02, 0x11, 0x22, 0xff,
					  0xfe, 0x33, 0x44, 0x55 };
	struct ib_uverbs_query_qp_resp q;
	struct ib_uverbs_modify_qp m;
	int r;

	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_INIT;
	m.port_num = 1;
	m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	m.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	if ((r = modify_qp(c, h, &m)))
		FAIL("XRC target QP to INIT: %s", strerror(r));
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_RTR;
	memcpy(m.dest.dgid, dgid, 16);
	m.dest.is_global = 1;
	m.dest.hop_limit = 64;
	m.dest.port_num = 1;
	m.path_mtu = IBV_MTU_1024;
	m.dest_qp_num = dqpn;
	m.rq_psn = 0x777;
	m.max_dest_rd_atomic = 4;
	m.min_rnr_timer = 12;
	m.attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if ((r = modify_qp(c, h, &m)))
		FAIL("XRC target QP to RTR: %s", strerror(r));
	if ((r = query_qp(c, h, &q)))
		FAIL("querying the XRC target QP: %s", strerror(r));
	if (q.qp_state != IBV_QPS_RTR || q.dest_qp_num != dqpn || q.rq_psn != 0x777 ||
	    q.path_mtu != IBV_MTU_1024 || q.max_dest_rd_atomic != 4 || q.min_rnr_timer != 12 ||
	    memcmp(q.dest.dgid, dgid, 16))
		FAIL("the XRC target QP reads back state %u, dest QP %#x, RQ PSN %#x, MTU %u, "
		     "%u reads, RNR timer %u", q.qp_state, q.dest_qp_num, q.rq_psn, q.path_mtu,
		     q.max_dest_rd_atomic, q.min_rnr_timer);
	/* RTR to INIT is no transition of the IB spec's. */
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_INIT;
	m.attr_mask = IBV_QP_STATE;
	if ((r = modify_qp(c, h, &m)) != EINVAL)
		FAIL("XRC target QP from RTR to INIT: %s, expected EINVAL",
		     r ? strerror(r) : "done");
	return 0;
}

/* The state of QP handle `h`: errno, or 0 and its state. */
static int qp_state(struct ibv_context *c, uint32_t h, unsigned *state)
{
	struct ib_uverbs_query_qp_resp q;
	int r = query_qp(c, h, &q);

	*state = q.qp_state;
	return r;
}

static int mode_tgt(const char *dev, struct ibv_context *c)
{
	char path[] = "/tmp/rrxe-xrcd.XXXXXX";
	int fd, r, to_child[2], to_parent[2];
	uint32_t x = 0, h = 0, h2 = 0, qpn = 0;
	unsigned st;
	char b = 0;
	pid_t pid;

	fd = mkstemp(path);
	if (fd < 0)
		FAIL("mkstemp: %s", strerror(errno));
	unlink(path);
	if ((r = open_xrcd(c, fd, O_CREAT, &x)))
		FAIL("a file's domain: %s", strerror(r));
	if ((r = create_tgt_qp(c, x, &h, &qpn)))
		FAIL("an XRC target QP: %s", strerror(r));
	if (!qpn || qpn >= 1 << 24)
		FAIL("the XRC target QP's number %#x", qpn);
	if ((r = qp_state(c, h, &st)) || st != IBV_QPS_RESET)
		FAIL("the new XRC target QP: %s, state %u", r ? strerror(r) : "queried", st);
	if (tgt_connect(c, h, 0x12345))
		return 1;
	if ((r = rrxe_doorbell(c, h)) != EINVAL)
		FAIL("a doorbell on the XRC target QP: %s, expected EINVAL",
		     r ? strerror(r) : "rung");
	if ((r = close_xrcd(c, x)) != EBUSY)
		FAIL("closing the domain of a live XRC target QP: %s, expected EBUSY",
		     r ? strerror(r) : "closed");

	/* A second process opens the QP in the domain and holds it. */
	if (pipe(to_child) || pipe(to_parent))
		FAIL("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (!pid) {
		struct ibv_context *c2 = rrxe_open(dev);
		uint32_t x2, hq;

		if (!c2 || open_xrcd(c2, fd, 0, &x2) || open_qp(c2, x2, qpn, &hq))
			_exit(1);
		if (write(to_parent[1], "y", 1) != 1 || read(to_child[0], &b, 1) != 1)
			_exit(1);
		/* Still RTR once its creator destroyed its handle. */
		if (qp_state(c2, hq, &st) || st != IBV_QPS_RTR)
			_exit(2);
		/* Exits holding it: the process's cleanup closes it. */
		_exit(0);
	}
	if (read(to_parent[0], &b, 1) != 1 || b != 'y')
		FAIL("the second process could not open the XRC target QP");
	if ((r = destroy_qp(c, h)))
		FAIL("destroying the creator's handle: %s", strerror(r));
	if ((r = open_qp(c, x, qpn, &h2)))
		FAIL("with the second process holding it, the QP is gone: %s", strerror(r));
	if ((r = qp_state(c, h2, &st)) || st != IBV_QPS_RTR)
		FAIL("the QP opened again: %s, state %u", r ? strerror(r) : "queried", st);
	if ((r = destroy_qp(c, h2)))
		FAIL("closing it again: %s", strerror(r));
	if (write(to_child[1], "x", 1) != 1 || waitpid(pid, &r, 0) != pid || r)
		FAIL("the second process failed (status %#x)", r);
	if ((r = open_qp(c, x, qpn, &h2)) != EINVAL)
		FAIL("after the last holder exited, the QP is still there: %s",
		     r ? strerror(r) : "opened");
	if ((r = close_xrcd(c, x)))
		FAIL("closing the domain afterwards: %s", strerror(r));
	close(fd);
	printf("XRC target QP %#x: created, connected, shared, gone\n", qpn);
	return 0;
}

/* Runs `inject` for KIND to QP `qpn` at `psn` naming XRC SRQ `srqn`: one
 * packet of `len` payload bytes. */
static int inject(const char *cmd, const char *kind, uint32_t qpn, uint32_t psn, uint32_t srqn,
		  unsigned len)
{
	char line[1024];

	snprintf(line, sizeof(line), "%s %s %u %u %u 1 %u >/dev/null", cmd, kind, qpn, psn, srqn,
		 len);
	return system(line);
}

/* Polls `cq` for one completion for up to `ms` milliseconds: 1 with it,
 * 0 without, -1 on error. */
/* Puts a receive of `len` bytes at `addr` (lkey `lkey`) into the SRQ
 * ring `q`, as librxe's post_srq_recv does. */
static void post_recv_raw(struct rxe_queue_buf *q, uint64_t wr_id, void *addr, uint32_t len,
			  uint32_t lkey)
{
	uint32_t prod = __atomic_load_n(&q->producer_index, __ATOMIC_RELAXED) & q->index_mask;
	struct rxe_recv_wqe *w = (void *)(q->data + ((size_t)prod << q->log2_elem_size));

	memset(w, 0, sizeof(*w) + sizeof(struct rxe_sge));
	w->wr_id = wr_id;
	w->dma.length = w->dma.resid = len;
	w->dma.num_sge = 1;
	w->dma.sge[0].addr = (uintptr_t)addr;
	w->dma.sge[0].length = len;
	w->dma.sge[0].lkey = lkey;
	__atomic_store_n(&q->producer_index, (prod + 1) & q->index_mask, __ATOMIC_RELEASE);
}

/* The GID index of IPv4 address `ip` on port 1, or -1. */
static int gid_index_of(struct ibv_context *c, const char *ip)
{
	union ibv_gid want = { .raw = { [10] = 0xff, [11] = 0xff } }, g;

	if (inet_pton(AF_INET, ip, want.raw + 12) != 1)
		return -1;
	for (int i = 0; i < 64; i++)
		if (!ibv_query_gid(c, 1, i, &g) && !memcmp(&g, &want, 16))
			return i;
	return -1;
}

static int mode_recv(const char *dev, struct ibv_context *c, const char *local, const char *peer,
		     const char *cmd)
{
	enum { LEN = 256, PSN = 0x100 };
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	static uint8_t buf[2][4096];
	uint32_t x, x2, h, srq, rn, fh, foreign, bh, basic, qh, qpn;
	struct ib_uverbs_query_qp_resp q;
	struct ib_uverbs_modify_qp m;
	struct rxe_queue_buf *ring;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	long long err0, err1;
	int r, sgid;

	if (!pd || !cq)
		FAIL("PD, CQ: %s", strerror(errno));
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		FAIL("MR: %s", strerror(errno));
	if ((r = open_xrcd(c, -1, 0, &x)) || (r = open_xrcd(c, -1, 0, &x2)))
		FAIL("two domains: %s", strerror(r));
	if ((r = create_xsrq(c, x, pd, cq, &h, &srq, &rn)))
		FAIL("the XRC SRQ: %s", strerror(r));
	ring = mmap(NULL, last_srq_ring.size, PROT_READ | PROT_WRITE, MAP_SHARED, c->cmd_fd,
		    last_srq_ring.offset);
	if (ring == MAP_FAILED)
		FAIL("mapping the XRC SRQ's ring: %s", strerror(errno));
	if ((r = create_xsrq(c, x2, pd, cq, &fh, &foreign, &rn)))
		FAIL("an XRC SRQ of the other domain: %s", strerror(r));
	if ((r = create_srq_of(c, IBV_SRQT_BASIC, 0, pd, cq, &bh, &basic, &rn)))
		FAIL("a basic SRQ: %s", strerror(r));
	memset(buf, 0xee, sizeof(buf));
	post_recv_raw(ring, 0x5eed0, buf[0], sizeof(buf[0]), mr->lkey);
	post_recv_raw(ring, 0x5eed1, buf[1], sizeof(buf[1]), mr->lkey);

	if ((r = create_tgt_qp(c, x, &qh, &qpn)))
		FAIL("the XRC target QP: %s", strerror(r));
	sgid = gid_index_of(c, local);
	if (sgid < 0)
		FAIL("no GID of %s", local);
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_INIT;
	m.port_num = 1;
	m.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	if ((r = modify_qp(c, qh, &m)))
		FAIL("to INIT: %s", strerror(r));
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_RTR;
	m.dest.dgid[10] = m.dest.dgid[11] = 0xff;
	if (inet_pton(AF_INET, peer, m.dest.dgid + 12) != 1)
		FAIL("bad peer address %s", peer);
	m.dest.is_global = 1;
	m.dest.hop_limit = 64;
	m.dest.sgid_index = sgid;
	m.dest.port_num = 1;
	m.path_mtu = IBV_MTU_1024;
	m.dest_qp_num = 0x42;
	m.rq_psn = PSN;
	m.min_rnr_timer = 12;
	m.attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if ((r = modify_qp(c, qh, &m)))
		FAIL("to RTR: %s", strerror(r));
	if ((r = query_qp(c, qh, &q)) || q.qp_state != IBV_QPS_RTR)
		FAIL("the target QP is not in RTR: %s", r ? strerror(r) : "its state");

	/* An XRC SEND naming the XRC SRQ: its first receive, byte for byte. */
	if (inject(cmd, "xrc", qpn, PSN, srq, LEN))
		FAIL("injecting an XRC SEND failed");
	r = rrxe_poll_one(cq, &wc, 5000);
	if (r != 1)
		FAIL("no completion of the XRC SEND naming XRC SRQ %#x (%d)", srq, r);
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV || wc.byte_len != LEN ||
	    wc.qp_num != qpn || wc.wr_id != 0x5eed0)
		FAIL("the completion: status %s, opcode %d, %u bytes, QP %#x, wr_id %#llx",
		     ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len, wc.qp_num,
		     (unsigned long long)wc.wr_id);
	for (unsigned i = 0; i < sizeof(buf[0]); i++) {
		uint8_t want = i < LEN ? (uint8_t)(i * 13 + 7) : 0xee;

		if (buf[0][i] != want)
			FAIL("byte %u of the receive: %#x, expected %#x", i, buf[0][i], want);
	}

	/* What the target QP must not take: each is a header error. */
	err0 = rrxe_hw_counter(dev, "rcvd_hdr_err");
	if (inject(cmd, "xrc", qpn, PSN + 1, foreign, LEN) ||
	    inject(cmd, "xrc", qpn, PSN + 1, basic, LEN) ||
	    inject(cmd, "xrc", qpn, PSN + 1, 0xffffff, LEN) ||
	    inject(cmd, "rc", qpn, PSN + 1, 0, LEN))
		FAIL("injecting the bad packets failed");
	if ((r = rrxe_poll_one(cq, &wc, 300)))
		FAIL("a bad packet completed: status %s, wr_id %#llx", ibv_wc_status_str(wc.status),
		     (unsigned long long)wc.wr_id);
	err1 = rrxe_hw_counter(dev, "rcvd_hdr_err");
	if (err0 < 0 || err1 < 0)
		FAIL("cannot read %s's rcvd_hdr_err", dev);
	if (err1 - err0 != 4)
		FAIL("rcvd_hdr_err moved by %lld for the 4 bad packets", err1 - err0);

	/* The next XRC SEND, at the PSN the bad ones did not move. */
	if (inject(cmd, "xrc", qpn, PSN + 1, srq, 64))
		FAIL("injecting the second XRC SEND failed");
	if (rrxe_poll_one(cq, &wc, 5000) != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != 0x5eed1 ||
	    wc.byte_len != 64 || wc.qp_num != qpn)
		FAIL("the second XRC SEND: status %s, wr_id %#llx, %u bytes",
		     ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id, wc.byte_len);
	printf("XRC target QP %#x took XRC SENDs into XRC SRQ %#x; XRC SRQ %#x of another "
	       "domain, basic SRQ %#x, no SRQ and an RC SEND were refused\n", qpn, srq, foreign,
	       basic);
	if ((r = destroy_qp(c, qh)) || (r = destroy_srq(c, h)) || (r = destroy_srq(c, fh)) ||
	    (r = destroy_srq(c, bh)) ||
	    (r = close_xrcd(c, x)) || (r = close_xrcd(c, x2)))
		FAIL("tearing down: %s", strerror(r));
	return 0;
}

/* IB_USER_VERBS_CMD_CREATE_QP of an XRC initiator QP in PD `pd` with
 * send CQ `cq` (16 WQEs of one SGE): errno, or 0, its handle, its number
 * and its send ring's mmap info. */
static int create_ini_qp(struct ibv_context *c, struct ibv_pd *pd, struct ibv_cq *cq,
			 uint32_t *handle, uint32_t *qpn, struct mminfo *sq)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_qp cmd;
	} req;
	struct {
		struct ib_uverbs_create_qp_resp resp;
		struct rxe_create_qp_resp drv;
	} resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_CREATE_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.pd_handle = pd->handle;
	req.cmd.send_cq_handle = cq->handle;
	req.cmd.recv_cq_handle = cq->handle;
	req.cmd.max_send_wr = 16;
	req.cmd.max_send_sge = 1;
	req.cmd.qp_type = IBV_QPT_XRC_SEND;
	req.cmd.sq_sig_all = 0;
	if (write(c->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	*handle = resp.resp.qp_handle;
	*qpn = resp.resp.qpn;
	*sq = resp.drv.sq_mi;
	return resp.drv.rq_mi.size ? EPROTO : 0;
}

/* Modifies QP handle `h` to `state` with `mask`, toward QP `dqpn` at
 * IPv4 `ip` (GID index `sgid` of the local end). */
static int move_qp(struct ibv_context *c, uint32_t h, int state, uint32_t mask, const char *ip,
		   int sgid, uint32_t dqpn)
{
	struct ib_uverbs_modify_qp m;

	memset(&m, 0, sizeof(m));
	m.qp_state = state;
	m.attr_mask = mask;
	m.port_num = 1;
	m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	m.dest.dgid[10] = m.dest.dgid[11] = 0xff;
	if (inet_pton(AF_INET, ip, m.dest.dgid + 12) != 1)
		return EINVAL;
	m.dest.is_global = 1;
	m.dest.hop_limit = 64;
	m.dest.sgid_index = sgid;
	m.dest.port_num = 1;
	m.path_mtu = IBV_MTU_1024;
	m.dest_qp_num = dqpn;
	m.rq_psn = 0x200;
	m.sq_psn = 0x200;
	m.max_dest_rd_atomic = 1;
	m.min_rnr_timer = 12;
	m.timeout = 14;
	m.retry_cnt = 7;
	m.rnr_retry = 7;
	m.max_rd_atomic = 1;
	return modify_qp(c, h, &m);
}

/* Puts a send WQE for XRC SRQ `srqn` in ring `q`: `opcode` of `len` bytes
 * at `addr` (lkey `lkey`), to `raddr`/`rkey` for a WRITE; then rings the
 * doorbell of QP handle `h`. */
static int post_xrc(struct ibv_context *c, uint32_t h, struct rxe_queue_buf *q, uint32_t srqn,
		    int opcode, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey,
		    uint64_t raddr, uint32_t rkey)
{
	uint32_t prod = __atomic_load_n(&q->producer_index, __ATOMIC_RELAXED) & q->index_mask;
	struct rxe_send_wqe *w = (void *)(q->data + ((size_t)prod << q->log2_elem_size));

	memset(w, 0, sizeof(*w) + sizeof(struct rxe_sge));
	w->wr.wr_id = wr_id;
	/* rrxe-abi.h: the remote XRC SRQ's number, in rxe_send_wr's spare word. */
	w->wr.reserved = srqn;
	w->wr.opcode = opcode;
	w->wr.send_flags = IBV_SEND_SIGNALED;
	w->wr.wr.rdma.remote_addr = raddr;
	w->wr.wr.rdma.rkey = rkey;
	w->dma.length = w->dma.resid = len;
	w->dma.num_sge = 1;
	w->dma.sge[0].addr = (uintptr_t)addr;
	w->dma.sge[0].length = len;
	w->dma.sge[0].lkey = lkey;
	__atomic_store_n(&q->producer_index, (prod + 1) & q->index_mask, __ATOMIC_RELEASE);
	return rrxe_doorbell(c, h);
}

/* One end of an XRC connection: its context, QP handle and number, IPv4
 * address and GID index. */
struct xrc_end {
	struct ibv_context *c;
	uint32_t h, qpn;
	const char *ip;
	int gid;
};

/* Takes target QP `t` to RTR and initiator QP `i` to RTS, toward each
 * other (from RESET). */
static int connect_xrc(struct xrc_end *t, struct xrc_end *i)
{
	int r;

	if ((r = move_qp(t->c, t->h, IBV_QPS_INIT,
			 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, i->ip,
			 t->gid, 0)) ||
	    (r = move_qp(t->c, t->h, IBV_QPS_RTR,
			 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			 i->ip, t->gid, i->qpn)))
		FAIL("the target QP to RTR: %s", strerror(r));
	if ((r = move_qp(i->c, i->h, IBV_QPS_INIT,
			 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, t->ip,
			 i->gid, 0)) ||
	    (r = move_qp(i->c, i->h, IBV_QPS_RTR,
			 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				 IBV_QP_RQ_PSN,
			 t->ip, i->gid, t->qpn)) ||
	    (r = move_qp(i->c, i->h, IBV_QPS_RTS,
			 IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
			 t->ip, i->gid, t->qpn)))
		FAIL("the initiator QP to RTS: %s", strerror(r));
	return 0;
}

static int mode_ini(const char *dev_t, const char *ip_t, const char *dev_i, const char *ip_i)
{
	static uint8_t src[4096], dst[2][4096], other[4096], back[4096];
	struct ibv_context *ct = rrxe_open(dev_t);
	struct ibv_context *ci = strcmp(dev_t, dev_i) ? rrxe_open(dev_i) : ct;
	struct ibv_pd *pdt, *pdt2, *pdi;
	struct ibv_cq *rcq, *scq;
	struct ibv_mr *mrt, *mrt2, *mri, *mrb;
	uint32_t x = 0, h = 0, srq = 0, rn, th = 0, tqpn = 0, ih = 0, iqpn = 0;
	struct rxe_queue_buf *ring, *sq;
	struct mminfo sqmi = { 0 };
	struct ibv_wc wc;
	struct xrc_end tgt, ini;
	int r, gt, gi;

	if (!ct || !ci)
		FAIL("cannot open %s and %s", dev_t, dev_i);
	pdt = ibv_alloc_pd(ct);
	pdt2 = ibv_alloc_pd(ct);
	pdi = ibv_alloc_pd(ci);
	rcq = ibv_create_cq(ct, 16, NULL, NULL, 0);
	scq = ibv_create_cq(ci, 16, NULL, NULL, 0);
	if (!pdt || !pdt2 || !pdi || !rcq || !scq)
		FAIL("PDs, CQs: %s", strerror(errno));
	mrt = ibv_reg_mr(pdt, dst, sizeof(dst),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	mrt2 = ibv_reg_mr(pdt2, other, sizeof(other),
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	mri = ibv_reg_mr(pdi, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	mrb = ibv_reg_mr(pdi, back, sizeof(back), IBV_ACCESS_LOCAL_WRITE);
	if (!mrt || !mrt2 || !mri || !mrb)
		FAIL("MRs: %s", strerror(errno));
	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 29 + 3);
	memset(dst, 0xee, sizeof(dst));
	memset(other, 0xee, sizeof(other));

	/* The target side: a domain, its XRC SRQ with two receives, a QP. */
	if ((r = open_xrcd(ct, -1, 0, &x)) || (r = create_xsrq(ct, x, pdt, rcq, &h, &srq, &rn)))
		FAIL("domain, XRC SRQ: %s", strerror(r));
	ring = mmap(NULL, last_srq_ring.size, PROT_READ | PROT_WRITE, MAP_SHARED, ct->cmd_fd,
		    last_srq_ring.offset);
	if (ring == MAP_FAILED)
		FAIL("mapping the XRC SRQ's ring: %s", strerror(errno));
	post_recv_raw(ring, 0x7001, dst[0], sizeof(dst[0]), mrt->lkey);
	if ((r = create_tgt_qp(ct, x, &th, &tqpn)))
		FAIL("the XRC target QP: %s", strerror(r));

	/* The initiator, with no receive ring. */
	if ((r = create_ini_qp(ci, pdi, scq, &ih, &iqpn, &sqmi)))
		FAIL("the XRC initiator QP: %s", r == EPROTO ? "it has a receive ring" : strerror(r));
	sq = mmap(NULL, sqmi.size, PROT_READ | PROT_WRITE, MAP_SHARED, ci->cmd_fd, sqmi.offset);
	if (sq == MAP_FAILED)
		FAIL("mapping the initiator's send ring: %s", strerror(errno));

	gt = gid_index_of(ct, ip_t);
	gi = gid_index_of(ci, ip_i);
	if (gt < 0 || gi < 0)
		FAIL("no GID of %s or %s", ip_t, ip_i);
	tgt = (struct xrc_end){ ct, th, tqpn, ip_t, gt };
	ini = (struct xrc_end){ ci, ih, iqpn, ip_i, gi };
	if (connect_xrc(&tgt, &ini))
		return 1;

	/* A SEND of 3000 bytes (three packets at MTU 1024 on the wire). */
	if ((r = post_xrc(ci, ih, sq, srq, IBV_WR_SEND, 0x51, src, 3000, mri->lkey, 0, 0)))
		FAIL("posting the SEND: %s", strerror(r));
	if (rrxe_poll_one(scq, &wc, 10000) != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != 0x51 ||
	    wc.opcode != IBV_WC_SEND || wc.qp_num != iqpn)
		FAIL("the SEND's completion: status %s, wr_id %#llx, QP %#x",
		     ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id, wc.qp_num);
	if (rrxe_poll_one(rcq, &wc, 5000) != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != 0x7001 ||
	    wc.opcode != IBV_WC_RECV || wc.byte_len != 3000 || wc.qp_num != tqpn)
		FAIL("the receive's completion: status %s, wr_id %#llx, %u bytes, QP %#x",
		     ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id, wc.byte_len,
		     wc.qp_num);
	if (memcmp(dst[0], src, 3000) || dst[0][3000] != 0xee)
		FAIL("the SEND's bytes differ");

	/* An RDMA WRITE with a key of the XRC SRQ's PD. */
	if ((r = post_xrc(ci, ih, sq, srq, IBV_WR_RDMA_WRITE, 0x52, src + 100, 2048, mri->lkey,
			  (uintptr_t)dst[1] + 8, mrt->rkey)))
		FAIL("posting the WRITE: %s", strerror(r));
	if (rrxe_poll_one(scq, &wc, 10000) != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != 0x52)
		FAIL("the WRITE's completion: status %s, wr_id %#llx",
		     ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
	if (memcmp(dst[1] + 8, src + 100, 2048) || dst[1][7] != 0xee || dst[1][2056] != 0xee)
		FAIL("the WRITE's bytes differ");

	/* One with a key of another PD: the target checks keys in the SRQ's. */
	if ((r = post_xrc(ci, ih, sq, srq, IBV_WR_RDMA_WRITE, 0x53, src, 64, mri->lkey,
			  (uintptr_t)other, mrt2->rkey)))
		FAIL("posting the WRITE to another PD: %s", strerror(r));
	if (rrxe_poll_one(scq, &wc, 10000) != 1 || wc.status != IBV_WC_REM_ACCESS_ERR ||
	    wc.wr_id != 0x53)
		FAIL("the WRITE to another PD's MR: status %s, expected %s",
		     ibv_wc_status_str(wc.status), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	if (other[0] != 0xee)
		FAIL("the WRITE to another PD's MR wrote it");

	/* Both QPs went to ERR; from RESET again, READs. */
	if ((r = move_qp(ct, th, IBV_QPS_RESET, IBV_QP_STATE, ip_i, gt, 0)) ||
	    (r = move_qp(ci, ih, IBV_QPS_RESET, IBV_QP_STATE, ip_t, gi, 0)))
		FAIL("to RESET: %s", strerror(r));
	while (ibv_poll_cq(scq, 1, &wc) > 0)
		;
	if (connect_xrc(&tgt, &ini))
		return 1;
	/* The SEND's buffer back (4096 bytes: four response packets, two in
	 * the middle), through a key of the SRQ's PD. */
	memset(back, 0, sizeof(back));
	if ((r = post_xrc(ci, ih, sq, srq, IBV_WR_RDMA_READ, 0x54, back, 4096, mrb->lkey,
			  (uintptr_t)dst[0], mrt->rkey)))
		FAIL("posting the READ: %s", strerror(r));
	if (rrxe_poll_one(scq, &wc, 10000) != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != 0x54 ||
	    wc.opcode != IBV_WC_RDMA_READ)
		FAIL("the READ from the target: status %s, wr_id %#llx",
		     ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
	if (memcmp(back, dst[0], 4096) || memcmp(back, src, 3000) || back[3000] != 0xee)
		FAIL("the READ's bytes differ");
	/* One through a key of another PD: refused, nothing read. */
	memset(back, 0xee, sizeof(back));
	memset(other, 0x5a, sizeof(other));
	if ((r = post_xrc(ci, ih, sq, srq, IBV_WR_RDMA_READ, 0x55, back, 64, mrb->lkey,
			  (uintptr_t)other, mrt2->rkey)))
		FAIL("posting the READ of another PD's MR: %s", strerror(r));
	if (rrxe_poll_one(scq, &wc, 10000) != 1 || wc.status != IBV_WC_REM_ACCESS_ERR ||
	    wc.wr_id != 0x55)
		FAIL("the READ of another PD's MR: status %s, expected %s",
		     ibv_wc_status_str(wc.status), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	if (back[0] != 0xee || back[63] != 0xee)
		FAIL("the READ of another PD's MR read it");
	printf("XRC initiator QP %#x to target QP %#x, XRC SRQ %#x: a SEND, a WRITE and a READ "
	       "went through, a WRITE and a READ with another PD's key were refused\n",
	       iqpn, tqpn, srq);
	if ((r = destroy_qp(ci, ih)) || (r = destroy_qp(ct, th)) || (r = destroy_srq(ct, h)) ||
	    (r = close_xrcd(ct, x)))
		FAIL("tearing down: %s", strerror(r));
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_context *c;

	if (argc < 3) {
		fprintf(stderr, "usage: %s DEV MODE\n", argv[0]);
		return 2;
	}
	c = rrxe_open(argv[1]);
	if (!c)
		FAIL("cannot open %s", argv[1]);
	if (!strcmp(argv[2], "xrcd"))
		return mode_xrcd(argv[1], c);
	if (!strcmp(argv[2], "xsrq"))
		return mode_xsrq(c);
	if (!strcmp(argv[2], "tgt"))
		return mode_tgt(argv[1], c);
	if (!strcmp(argv[2], "recv") && argc == 6)
		return mode_recv(argv[1], c, argv[3], argv[4], argv[5]);
	if (!strcmp(argv[2], "ini") && argc == 6)
		return mode_ini(argv[1], argv[3], argv[4], argv[5]);
	FAIL("unknown mode %s", argv[2]);
}
