// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_cq_test DEV MODE [ARG]: completion queues through stock libibverbs +
 * librxe, and the rxe ring ABI checked through the raw uverbs write()
 * commands (whose driver response carries the ring's mmap info). Each mode
 * prints what went wrong and exits non-zero on failure.
 *
 *   api          sizes, limits, comp vectors, resize, poll, notify
 *   ring         raw CREATE_CQ/RESIZE_CQ: mminfo, mapping, ring header
 *   many N       N CQs at once
 *   leak N       N CQs, then exit without destroying them
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rrxe_test.h"

static struct ibv_context *ctx;
static struct ibv_device_attr attr;

/* Capacity rxe reports: slots are (n + 1) rounded up to a power of two. */
static int rxe_cqe(int n)
{
	int s = 1;

	while (s < n + 1)
		s <<= 1;
	return s - 1;
}

static int mode_api(void)
{
	static const int sizes[] = { 1, 2, 3, 63, 64, 100, 1000, 16384 };
	struct ibv_comp_channel *ch;
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	int r;

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cq = ibv_create_cq(ctx, sizes[i], NULL, NULL, 0);
		if (!cq)
			FAIL("ibv_create_cq(%d): %s", sizes[i], strerror(errno));
		if (cq->cqe != rxe_cqe(sizes[i]))
			FAIL("cqe %d for %d requested, expected %d", cq->cqe, sizes[i], rxe_cqe(sizes[i]));
		if (ibv_destroy_cq(cq))
			FAIL("ibv_destroy_cq: %s", strerror(errno));
	}
	cq = ibv_create_cq(ctx, attr.max_cqe, NULL, NULL, ctx->num_comp_vectors - 1);
	if (!cq || cq->cqe != attr.max_cqe)
		FAIL("CQ of max_cqe %d on the last vector: %s", attr.max_cqe, cq ? "wrong cqe" : strerror(errno));
	ibv_destroy_cq(cq);

	errno = 0;
	if ((cq = ibv_create_cq(ctx, attr.max_cqe + 1, NULL, NULL, 0)) || errno != EINVAL)
		FAIL("cqe max_cqe + 1: %s, expected EINVAL", cq ? "created" : strerror(errno));
	errno = 0;
	if ((cq = ibv_create_cq(ctx, 0, NULL, NULL, 0)) || errno != EINVAL)
		FAIL("cqe 0: %s, expected EINVAL", cq ? "created" : strerror(errno));
	errno = 0;
	if ((cq = ibv_create_cq(ctx, 16, NULL, NULL, ctx->num_comp_vectors)) || errno != EINVAL)
		FAIL("comp_vector num_comp_vectors: %s, expected EINVAL", cq ? "created" : strerror(errno));

	ch = ibv_create_comp_channel(ctx);
	if (!ch)
		FAIL("ibv_create_comp_channel: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 100, NULL, ch, 0);
	if (!cq)
		FAIL("CQ with a channel: %s", strerror(errno));
	if ((r = ibv_poll_cq(cq, 4, wc)) != 0)
		FAIL("poll of a new CQ returned %d", r);
	if ((r = ibv_req_notify_cq(cq, 0)) || (r = ibv_req_notify_cq(cq, 1)))
		FAIL("ibv_req_notify_cq: %d", r);

	/* Resize up and down; the capacity follows; bad sizes fail. */
	if ((r = ibv_resize_cq(cq, 1000)) || cq->cqe != 1023)
		FAIL("resize to 1000: %s, cqe %d", strerror(r), cq->cqe);
	if ((r = ibv_resize_cq(cq, 10)) || cq->cqe != 15)
		FAIL("resize to 10: %s, cqe %d", strerror(r), cq->cqe);
	if ((r = ibv_resize_cq(cq, attr.max_cqe + 1)) != EINVAL)
		FAIL("resize above max_cqe: %d (%s), expected EINVAL", r, strerror(r));
	if ((r = ibv_resize_cq(cq, 0)) != EINVAL)
		FAIL("resize to 0: %d (%s), expected EINVAL", r, strerror(r));
	if (cq->cqe != 15)
		FAIL("failed resizes changed cqe to %d", cq->cqe);
	if ((r = ibv_poll_cq(cq, 4, wc)) != 0)
		FAIL("poll after resize returned %d", r);
	if ((r = ibv_req_notify_cq(cq, 0)))
		FAIL("ibv_req_notify_cq after resize: %d", r);
	if (ibv_destroy_cq(cq) || ibv_destroy_comp_channel(ch))
		FAIL("destroy CQ and channel: %s", strerror(errno));
	printf("CQ sizes, limits, vectors, resize, poll and notify: ok\n");
	return 0;
}

struct mminfo {
	uint64_t offset;
	uint32_t size;
	uint32_t pad;
};

static int raw_create(int n, uint32_t *handle, uint32_t *cqe, struct mminfo *mi)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_cq cmd;
	} req;
	struct {
		struct ib_uverbs_create_cq_resp resp;
		struct mminfo mi;
	} resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_CREATE_CQ;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.cqe = n;
	req.cmd.comp_channel = -1;
	if (write(ctx->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	*handle = resp.resp.cq_handle;
	*cqe = resp.resp.cqe;
	*mi = resp.mi;
	return 0;
}

static int raw_resize(uint32_t handle, int n, uint32_t *cqe, struct mminfo *mi)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_resize_cq cmd;
	} req;
	struct {
		struct ib_uverbs_resize_cq_resp resp;
		struct mminfo mi;
	} resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_RESIZE_CQ;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.cq_handle = handle;
	req.cmd.cqe = n;
	if (write(ctx->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	*cqe = resp.resp.cqe;
	*mi = resp.mi;
	return 0;
}

static int raw_destroy(uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_cq cmd;
	} req;
	struct ib_uverbs_destroy_cq_resp resp;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_DESTROY_CQ;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.cq_handle = handle;
	return write(ctx->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

/* Maps a ring and checks the rxe header: log2 slot size, index mask, and
 * both indices zero. */
static int check_ring(struct mminfo *mi, uint32_t want_mask)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t want = (384 + (size_t)(want_mask + 1) * 128 + page - 1) & ~(page - 1);
	volatile uint32_t *h;
	void *p;

	if (mi->size != want || mi->offset % page || mi->pad)
		FAIL("mminfo offset 0x%llx size %u pad %u, expected size %zu", (unsigned long long)mi->offset,
		     mi->size, mi->pad, want);
	p = mmap(NULL, mi->size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd, mi->offset);
	if (p == MAP_FAILED)
		FAIL("mmap of the ring: %s", strerror(errno));
	h = p;
	if (h[0] != 7 || h[1] != want_mask || h[128 / 4] || h[256 / 4])
		FAIL("ring header: log2_elem %u index_mask %u producer %u consumer %u", h[0], h[1], h[32], h[64]);
	/* A hostile process scribbles over its geometry; the kernel keeps its
	 * own (resize below still makes the right ring). */
	h[0] = 31;
	h[1] = 0xffffffff;
	munmap(p, mi->size);
	if (mmap(NULL, mi->size + page, PROT_READ, MAP_SHARED, ctx->cmd_fd, mi->offset) != MAP_FAILED)
		FAIL("a mapping longer than the ring succeeded");
	return 0;
}

static int mode_ring(void)
{
	struct mminfo mi, mi2;
	uint32_t h = 0, cqe = 0;
	int r;


	if ((r = raw_create(100, &h, &cqe, &mi)))
		FAIL("raw CREATE_CQ: %s", strerror(r));
	if (cqe != 127)
		FAIL("CREATE_CQ cqe %u, expected 127", cqe);
	if (check_ring(&mi, 127))
		return 1;
	if ((r = raw_resize(h, 3000, &cqe, &mi2)))
		FAIL("raw RESIZE_CQ to 3000 after the header was scribbled on: %s", strerror(r));
	if (cqe != 4095 || mi2.offset == mi.offset)
		FAIL("RESIZE_CQ cqe %u offset 0x%llx (old 0x%llx)", cqe, (unsigned long long)mi2.offset,
		     (unsigned long long)mi.offset);
	if (check_ring(&mi2, 4095))
		return 1;
	/* A consumer index pushed past the producer: the kernel masks it and
	 * stays in bounds; resizing copies what the indices claim, and
	 * destroying still works. */
	{
		size_t len2 = mi2.size;
		volatile uint32_t *h2 = mmap(NULL, len2, PROT_READ | PROT_WRITE, MAP_SHARED,
					     ctx->cmd_fd, mi2.offset);

		if (h2 == MAP_FAILED)
			FAIL("mmap of the resized ring: %s", strerror(errno));
		/* Masked, consumer 1 and producer 0 claim a full ring. */
		h2[256 / 4] = 0x7fff0001;
		if ((r = raw_resize(h, 8000, &cqe, &mi2)) || cqe != 8191)
			FAIL("RESIZE_CQ with a consumer past the producer: %s, cqe %u", strerror(r), cqe);
		if ((r = raw_resize(h, 100, &cqe, &mi2)) != EINVAL)
			FAIL("shrinking below the 4095 entries the indices claim: %d, expected EINVAL", r);
		munmap((void *)h2, len2);
	}
	/* The old ring's offset is gone. */
	if (mmap(NULL, mi.size, PROT_READ, MAP_SHARED, ctx->cmd_fd, mi.offset) != MAP_FAILED)
		FAIL("the replaced ring could still be mapped");
	if ((r = raw_destroy(h)))
		FAIL("raw DESTROY_CQ: %s", strerror(r));
	printf("ring mminfo, header and resize: ok\n");
	return 0;
}

static int mode_many(int n, int leak)
{
	struct ibv_cq **cqs = calloc(n, sizeof(*cqs));

	for (int i = 0; i < n; i++) {
		cqs[i] = ibv_create_cq(ctx, 1 + i % 64, NULL, NULL, i % ctx->num_comp_vectors);
		if (!cqs[i])
			FAIL("CQ %d: %s", i, strerror(errno));
	}
	printf("created %d\n", n);
	fflush(stdout);
	if (leak)
		_exit(0);
	for (int i = 0; i < n; i++)
		if (ibv_destroy_cq(cqs[i]))
			FAIL("destroy CQ %d: %s", i, strerror(errno));
	free(cqs);
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

	if (!strcmp(argv[2], "api"))
		return mode_api();
	if (!strcmp(argv[2], "ring"))
		return mode_ring();
	if (!strcmp(argv[2], "many"))
		return mode_many(argc > 3 ? atoi(argv[3]) : 1000, 0);
	if (!strcmp(argv[2], "leak"))
		return mode_many(argc > 3 ? atoi(argv[3]) : 1000, 1);
	FAIL("unknown mode %s", argv[2]);
}
