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
 *          freed when that process exits; an XRC target QP in it, which
 *          rrxe does not make (EOPNOTSUPP).
 *   xsrq   XRC SRQs: made in a domain on a CQ, each with its own number
 *          (24 bits, rxe's number for it); the domain cannot be closed
 *          while one lives (EBUSY), and can once they are destroyed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
 * (named where a PD is for the other types): errno, or 0. */
static int create_tgt_qp(struct ibv_context *c, uint32_t xrcd)
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
	return write(c->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

/* IB_USER_VERBS_CMD_CREATE_XSRQ of an XRC SRQ of 16 receives in domain
 * `xrcd`, PD `pd` and CQ `cq`: errno, or 0, the handle, the number uverbs
 * returns and the one in rxe's response. */
static int create_xsrq(struct ibv_context *c, uint32_t xrcd, struct ibv_pd *pd,
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
	req.cmd.srq_type = IBV_SRQT_XRC;
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
	return 0;
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
	if ((r = create_tgt_qp(c, h1)) != EOPNOTSUPP)
		FAIL("an XRC target QP: %s, expected EOPNOTSUPP", r ? strerror(r) : "created");

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
	FAIL("unknown mode %s", argv[2]);
}
