// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_mr_test DEV MODE [ARG]: memory registration and memory windows
 * through stock libibverbs + librxe. Each mode prints what went wrong and
 * exits non-zero on failure; rrxe_mr.sh turns modes into KTAP tests.
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

#define MR_INDEX_MAX (1u << 19)
#define MW_INDEX_MAX (1u << 20)

static struct ibv_context *ctx;
static struct ibv_pd *pd;

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); return 1; } while (0)

static int check_mr_key(struct ibv_mr *mr)
{
	uint32_t idx = mr->lkey >> 8;

	if (mr->lkey != mr->rkey)
		FAIL("lkey 0x%x != rkey 0x%x", mr->lkey, mr->rkey);
	if (idx < 1 || idx > MR_INDEX_MAX)
		FAIL("MR key 0x%x: index %u outside the MR range", mr->lkey, idx);
	return 0;
}

static int expect_fail(struct ibv_mr *mr, int want, const char *what)
{
	if (mr) {
		ibv_dereg_mr(mr);
		FAIL("%s: registration succeeded", what);
	}
	if (errno != want)
		FAIL("%s: errno %d (%s), expected %d", what, errno, strerror(errno), want);
	return 0;
}

static int mode_basic(void)
{
	static const int acc[] = {
		0, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING,
	};
	void *buf = aligned_alloc(4096, 1 << 16);

	for (unsigned i = 0; i < sizeof(acc) / sizeof(acc[0]); i++) {
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, 1 << 16, acc[i]);

		if (!mr)
			FAIL("reg with access 0x%x: %s", acc[i], strerror(errno));
		if (check_mr_key(mr))
			return 1;
		if (mr->addr != buf || mr->length != 1 << 16)
			FAIL("addr/length not reported back");
		if (ibv_dereg_mr(mr))
			FAIL("dereg: %s", strerror(errno));
	}
	free(buf);
	return 0;
}

static int mode_unaligned(void)
{
	char *buf = malloc(3 * 4096 + 500);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf + 123, 10000, IBV_ACCESS_LOCAL_WRITE);

	if (!mr)
		FAIL("unaligned reg: %s", strerror(errno));
	if (check_mr_key(mr) || ibv_dereg_mr(mr))
		FAIL("unaligned dereg");
	mr = ibv_reg_mr(pd, buf + 4095, 2, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		FAIL("2 bytes across a page boundary: %s", strerror(errno));
	ibv_dereg_mr(mr);
	free(buf);
	return 0;
}

static int mode_iova(void)
{
	void *buf = aligned_alloc(4096, 8192);
	struct ibv_mr *mr = ibv_reg_mr_iova(pd, buf, 8192, 0x123456789000ull, IBV_ACCESS_LOCAL_WRITE);

	if (!mr)
		FAIL("iova != addr: %s", strerror(errno));
	if (check_mr_key(mr) || ibv_dereg_mr(mr))
		return 1;
	mr = ibv_reg_mr_iova2(pd, buf, 8192, 0, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED);
	if (!mr)
		FAIL("zero-based: %s", strerror(errno));
	if (check_mr_key(mr) || ibv_dereg_mr(mr))
		return 1;
	/* The last byte at 2^64 - 1 is fine; one more wraps. */
	mr = ibv_reg_mr_iova(pd, buf, 4096, UINT64_MAX - 4095, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		FAIL("region ending at 2^64: %s", strerror(errno));
	ibv_dereg_mr(mr);
	if (expect_fail(ibv_reg_mr_iova(pd, buf, 8192, UINT64_MAX - 4095, IBV_ACCESS_LOCAL_WRITE),
			EINVAL, "iova + length wraps"))
		return 1;
	free(buf);
	return 0;
}

static int mode_badflags(void)
{
	void *buf = aligned_alloc(4096, 4096);

	if (expect_fail(ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE), EINVAL,
			"remote write without local write"))
		return 1;
	if (expect_fail(ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_ATOMIC), EINVAL,
			"remote atomic without local write"))
		return 1;
	if (expect_fail(ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | (1 << 12)), EINVAL,
			"unknown access bit"))
		return 1;
	/* On-demand paging is accepted (the range is pinned, see the admin guide). */
	struct ibv_mr *odp = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);

	if (!odp || ibv_dereg_mr(odp)) {
		fprintf(stderr, "on-demand MR: %s\n", strerror(errno));
		return 1;
	}
	if (expect_fail(ibv_reg_mr(pd, NULL, 4096, IBV_ACCESS_LOCAL_WRITE), EFAULT,
			"unmapped address"))
		return 1;
	free(buf);
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* N MRs at once: all registered, keys distinct, all deregistered. With
 * "leak" they are left for process exit to clean up. */
static int mode_many(int n, int leak)
{
	char *buf = aligned_alloc(4096, (size_t)n * 4096);
	struct ibv_mr **mrs = calloc(n, sizeof(*mrs));
	uint32_t *keys = calloc(n, sizeof(*keys));

	for (int i = 0; i < n; i++) {
		mrs[i] = ibv_reg_mr(pd, buf + (size_t)i * 4096, 4096, IBV_ACCESS_LOCAL_WRITE);
		if (!mrs[i])
			FAIL("MR %d of %d: %s", i, n, strerror(errno));
		if (check_mr_key(mrs[i]))
			return 1;
		keys[i] = mrs[i]->lkey >> 8;
	}
	qsort(keys, n, sizeof(*keys), cmp_u32);
	for (int i = 1; i < n; i++)
		if (keys[i] == keys[i - 1])
			FAIL("two live MRs share index %u", keys[i]);
	if (leak) {
		printf("registered %d\n", n);
		fflush(stdout);
		_exit(0);
	}
	for (int i = 0; i < n; i++)
		if (ibv_dereg_mr(mrs[i]))
			FAIL("dereg %d: %s", i, strerror(errno));
	return 0;
}

/* A multi-GiB region: GIB GiB of address space backed by one 64 MiB memfd
 * mapped again and again, so the guest needs little memory. */
static int mode_big(int gib)
{
	const size_t chunk = 64ul << 20;
	size_t total = (size_t)gib << 30;
	int fd = memfd_create("rrxe-big", 0);
	char *base;

	if (fd < 0 || ftruncate(fd, chunk))
		FAIL("memfd: %s", strerror(errno));
	base = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		FAIL("reserve: %s", strerror(errno));
	for (size_t off = 0; off < total; off += chunk)
		if (mmap(base + off, chunk, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
			FAIL("map chunk: %s", strerror(errno));
	struct ibv_mr *mr = ibv_reg_mr(pd, base + 100, total - 200,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		FAIL("%d GiB MR: %s", gib, strerror(errno));
	if (check_mr_key(mr))
		return 1;
	if (ibv_dereg_mr(mr))
		FAIL("dereg: %s", strerror(errno));
	munmap(base, total);
	close(fd);
	return 0;
}

static int mode_mw(void)
{
	static const enum ibv_mw_type types[] = { IBV_MW_TYPE_1, IBV_MW_TYPE_2 };
	struct ibv_mw *mws[64];

	for (int t = 0; t < 2; t++) {
		for (int i = 0; i < 64; i++) {
			mws[i] = ibv_alloc_mw(pd, types[t]);
			if (!mws[i])
				FAIL("alloc_mw type %d: %s", types[t], strerror(errno));
			uint32_t idx = mws[i]->rkey >> 8;
			if (idx <= MR_INDEX_MAX || idx > MW_INDEX_MAX)
				FAIL("MW rkey 0x%x: index %u outside the MW range", mws[i]->rkey, idx);
			if (mws[i]->type != types[t])
				FAIL("type not kept");
			for (int j = 0; j < i; j++)
				if (mws[j]->rkey >> 8 == idx)
					FAIL("two live MWs share index %u", idx);
		}
		for (int i = 0; i < 64; i++)
			if (ibv_dealloc_mw(mws[i]))
				FAIL("dealloc_mw: %s", strerror(errno));
	}
	return 0;
}

/* A PD that still has an MR cannot be freed; after dereg it can. */
static int mode_pd_busy(void)
{
	struct ibv_pd *p = ibv_alloc_pd(ctx);
	void *buf = aligned_alloc(4096, 4096);
	struct ibv_mr *mr = ibv_reg_mr(p, buf, 4096, 0);

	if (!mr)
		FAIL("reg: %s", strerror(errno));
	if (!ibv_dealloc_pd(p))
		FAIL("PD with an MR was freed");
	if (ibv_dereg_mr(mr) || ibv_dealloc_pd(p))
		FAIL("cleanup: %s", strerror(errno));
	return 0;
}

/* IB_USER_VERBS_CMD_REREG_MR through the write() ABI: librxe v44 has no
 * rereg_mr, so ibv_rereg_mr() never reaches the kernel. */
static int rereg(struct ibv_mr *mr, uint32_t flags, void *start, size_t len, uint64_t iova,
		 struct ibv_pd *npd, uint32_t access, uint32_t *key)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_rereg_mr cmd;
	} req;
	struct ib_uverbs_rereg_mr_resp resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_REREG_MR;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.mr_handle = mr->handle;
	req.cmd.flags = flags;
	req.cmd.start = (uintptr_t)start;
	req.cmd.length = len;
	req.cmd.hca_va = iova;
	req.cmd.pd_handle = npd ? npd->handle : 0;
	req.cmd.access_flags = access;
	if (write(mr->context->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	if (resp.lkey != resp.rkey)
		return -1;
	*key = resp.lkey;
	return 0;
}

/* The length `rdma resource show mr` reports for the MR with this key. */
static long long mr_len(uint32_t key)
{
	char cmd[128], line[512], want[32];
	long long len = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma resource show mr dev %s", ibv_get_device_name(ctx->device));
	snprintf(want, sizeof(want), "lkey 0x%x ", key);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, want), *q = strstr(line, "mrlen ");
		if (p && q)
			len = atoll(q + 6);
	}
	if (f)
		pclose(f);
	return len;
}

#define REREG_TRANS 1
#define REREG_PD 2
#define REREG_ACCESS 4

static int mode_rereg(void)
{
	struct ibv_pd *pda = ibv_alloc_pd(ctx), *pdb = ibv_alloc_pd(ctx);
	char *b1 = aligned_alloc(4096, 8192), *b2 = aligned_alloc(4096, 16384);
	struct ibv_mr *mr = ibv_reg_mr(pda, b1, 8192, IBV_ACCESS_LOCAL_WRITE);
	uint32_t key, k;
	int e;

	if (!mr)
		FAIL("reg: %s", strerror(errno));
	key = mr->lkey;
	if ((e = rereg(mr, REREG_ACCESS, NULL, 0, 0, NULL,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE, &k)))
		FAIL("rereg access: %d", e);
	if (k != key)
		FAIL("rereg access changed the key 0x%x -> 0x%x", key, k);
	if ((e = rereg(mr, REREG_PD, NULL, 0, 0, pdb, 0, &k)) || k != key)
		FAIL("rereg pd: %d, key 0x%x -> 0x%x", e, key, k);
	if (ibv_dealloc_pd(pda))
		FAIL("the old PD is still in use after rereg pd: %s", strerror(errno));
	if (!ibv_dealloc_pd(pdb))
		FAIL("the new PD was freed under its MR");
	if (mr_len(key) != 8192)
		FAIL("length before rereg translation: %lld", mr_len(key));
	if ((e = rereg(mr, REREG_TRANS, b2, 16384, (uintptr_t)b2, NULL, 0, &k)) || k != key)
		FAIL("rereg translation: %d", e);
	if (mr_len(key) != 16384)
		FAIL("length after rereg translation: %lld", mr_len(key));
	if (rereg(mr, REREG_TRANS, b2 + 1, 4096, (uintptr_t)b2, NULL, 0, &k) != EINVAL)
		FAIL("start and iova in different page offsets were accepted");
	if (rereg(mr, REREG_ACCESS, NULL, 0, 0, NULL, IBV_ACCESS_REMOTE_WRITE, &k) != EINVAL)
		FAIL("remote write without local write was accepted");
	if (rereg(mr, 0, NULL, 0, 0, NULL, 0, &k) != EINVAL)
		FAIL("empty flags were accepted");
	if (rereg(mr, REREG_TRANS, b2, 4096, UINT64_MAX - 2047, NULL, IBV_ACCESS_LOCAL_WRITE, &k) != EINVAL)
		FAIL("a wrapping translation was accepted");
	if (mr_len(key) != 16384)
		FAIL("a failed rereg changed the MR");
	if (ibv_dereg_mr(mr) || ibv_dealloc_pd(pdb))
		FAIL("cleanup: %s", strerror(errno));

	/* Pages pinned read-only cannot become writable without a new translation. */
	mr = ibv_reg_mr(pd, b1, 4096, IBV_ACCESS_REMOTE_READ);
	if (!mr)
		FAIL("reg read-only: %s", strerror(errno));
	if (rereg(mr, REREG_ACCESS, NULL, 0, 0, NULL, IBV_ACCESS_LOCAL_WRITE, &k) != EINVAL)
		FAIL("a read-only MR became writable without new pages");
	if ((e = rereg(mr, REREG_ACCESS | REREG_TRANS, b1, 4096, (uintptr_t)b1, NULL,
		       IBV_ACCESS_LOCAL_WRITE, &k)))
		FAIL("writable with a new translation: %d", e);
	if (ibv_dereg_mr(mr))
		FAIL("dereg: %s", strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	int n = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: %s DEV MODE [ARG]\n", argv[0]);
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		FAIL("alloc_pd: %s", strerror(errno));

	const char *m = argv[2];
	int arg = argc > 3 ? atoi(argv[3]) : 0;
	int rc;

	if (!strcmp(m, "basic")) rc = mode_basic();
	else if (!strcmp(m, "unaligned")) rc = mode_unaligned();
	else if (!strcmp(m, "iova")) rc = mode_iova();
	else if (!strcmp(m, "badflags")) rc = mode_badflags();
	else if (!strcmp(m, "many")) rc = mode_many(arg, 0);
	else if (!strcmp(m, "leak")) rc = mode_many(arg, 1);
	else if (!strcmp(m, "big")) rc = mode_big(arg);
	else if (!strcmp(m, "mw")) rc = mode_mw();
	else if (!strcmp(m, "pd_busy")) rc = mode_pd_busy();
	else if (!strcmp(m, "rereg")) rc = mode_rereg();
	else FAIL("unknown mode %s", m);

	if (rc == 0 && (ibv_dealloc_pd(pd) || ibv_close_device(ctx)))
		FAIL("teardown: %s", strerror(errno));
	return rc;
}
