/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the rrxe selftest programs. */
#ifndef RRXE_TEST_H
#define RRXE_TEST_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Prints what went wrong and returns 1 from the calling function. */
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); return 1; } while (0)

/* Opens the RDMA device called `name`, or returns NULL. */
static inline struct ibv_context *rrxe_open(const char *name)
{
	struct ibv_context *c = NULL;
	struct ibv_device **list;
	int n;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			c = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return c;
}

/* Reads exactly `n` bytes from `fd`: 0, or -1 on an error or end of file. */
static inline int rrxe_readall(int fd, void *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);

		if (r <= 0)
			return -1;
		p = (char *)p + r;
		n -= r;
	}
	return 0;
}

/* The index of the first IPv4 (v4-mapped) GID of port 1, with the GID in
 * `gid`, or -1. */
static inline int rrxe_ipv4_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	for (int i = 0; i < 16; i++) {
		if (ibv_query_gid(ctx, 1, i, gid))
			break;
		if (!memcmp(gid->raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
			return i;
	}
	return -1;
}

/*
 * Takes RC, UC or XRC QP `q` from RESET to RTS, connected to QP `peer` at
 * `dgid` through GID index `sgid_index` of port 1, with path MTU `mtu`,
 * the remote rights `access`, and `psn` as both first PSNs. 0, or 1 with
 * what failed printed.
 */
static inline int rrxe_connect(struct ibv_qp *q, uint32_t peer, const union ibv_gid *dgid, int sgid_index,
			       enum ibv_mtu mtu, unsigned int access, uint32_t psn)
{
	/* The core's attribute table: the responder's for RC and XRC target
	 * QPs, the requester's for RC and XRC initiator QPs. */
	int resp = q->qp_type == IBV_QPT_RC || q->qp_type == IBV_QPT_XRC_RECV;
	int req = q->qp_type == IBV_QPT_RC || q->qp_type == IBV_QPT_XRC_SEND;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access };
	int r;

	r = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = sgid_index;
	a.ah_attr.grh.hop_limit = 64;
	r = r ?: ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN |
			       (resp ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = psn;
	a.max_rd_atomic = 1;
	r = r ?: ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			       (req ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				      IBV_QP_MAX_QP_RD_ATOMIC :
				resp ? IBV_QP_TIMEOUT : 0));
	if (r)
		FAIL("connect QP %u: %s", q->qp_num, strerror(r));
	return 0;
}

/* One completion from `cq` within `ms` milliseconds, polled every
 * millisecond: 1, or 0. */
static inline int rrxe_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (ibv_poll_cq(cq, 1, wc) > 0)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			return 0;
		usleep(1000);
	}
}

/* A doorbell on QP `handle`: IB_USER_VERBS_CMD_POST_SEND with no work
 * requests, as librxe rings it. 0, or the errno. */
static inline int rrxe_doorbell(struct ibv_context *ctx, uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} req;
	struct ib_uverbs_post_send_resp resp;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.qp_handle = handle;
	/* No work requests, but uverbs wants a plausible size for them (as
	 * librxe's doorbell passes): without it the command stops there. */
	req.cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	return write(ctx->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

/* Port 1's hardware counter `name` of device `dev`, or -1 if it cannot
 * be read. */
static inline long long rrxe_hw_counter(const char *dev, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * A key no MR or window answers to: the live `key` with its low byte (the
 * variant, rxe's key8) changed. Its index still names the object `key`
 * names, whose variant differs, so every lookup refuses it however the
 * device allocates keys. Changing index bits instead can name another
 * object of the same PD.
 */
static inline uint32_t rrxe_wrong_key(uint32_t key)
{
	return key ^ 0x80;
}

#endif
