// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_dm_test DEV MODE [ARG]: device memory through the uverbs ioctl
 * methods. Stock librxe has no ibv_alloc_dm, so this program opens the
 * device with libibverbs and then issues DM_ALLOC, DM_FREE, DM_MR_REG and
 * MR_DESTROY itself on the context's command fd, reading rrxe's
 * driver-specific attribute (RRXE_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET, from
 * the project's include/uapi/rdma/rrxe-abi.h) for the mmap offset. Each mode prints what went wrong and exits non-zero on failure.
 *
 *   off               max_dm_size is 0 and DM_ALLOC fails EOPNOTSUPP
 *   basic SIZE        max_dm_size == SIZE; alloc with alignment, mmap,
 *                     pattern write/read, zero-based DM MRs, bad MRs, free
 *   limits SIZE       bad lengths and alignments, exhaustion, reuse
 *   leak SIZE         allocate, map and register, then exit without freeing
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl.h>
#include <rdma/rrxe-abi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rrxe_test.h"

#define PAGE 4096UL

static struct ibv_context *ctx;
static struct ibv_pd *pd;

struct cmd {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[8];
};

static void cmd_init(struct cmd *c, uint16_t obj, uint16_t method)
{
	memset(c, 0, sizeof(*c));
	c->hdr.object_id = obj;
	c->hdr.method_id = method;
	c->hdr.driver_id = RDMA_DRIVER_RXE;
}

static struct ib_uverbs_attr *attr(struct cmd *c, uint16_t id, uint16_t len, uint64_t data)
{
	struct ib_uverbs_attr *a = &c->attrs[c->hdr.num_attrs++];

	a->attr_id = id;
	a->len = len;
	a->flags = UVERBS_ATTR_F_MANDATORY;
	a->data = data;
	return a;
}

/* Returns 0 or errno. */
static int run(struct cmd *c)
{
	c->hdr.length = sizeof(c->hdr) + c->hdr.num_attrs * sizeof(c->attrs[0]);
	return ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, c) ? errno : 0;
}

struct dm {
	uint32_t handle;
	uint64_t offset;
	uint64_t len;
};

static int dm_alloc(struct dm *dm, uint64_t len, uint32_t log_align)
{
	struct cmd c;
	struct ib_uverbs_attr *h;
	int r;

	cmd_init(&c, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC);
	h = attr(&c, UVERBS_ATTR_ALLOC_DM_HANDLE, 0, 0);
	attr(&c, UVERBS_ATTR_ALLOC_DM_LENGTH, sizeof(len), len);
	attr(&c, UVERBS_ATTR_ALLOC_DM_ALIGNMENT, sizeof(log_align), log_align);
	attr(&c, RRXE_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET, sizeof(dm->offset), (uintptr_t)&dm->offset);
	r = run(&c);
	if (!r) {
		dm->handle = h->data;
		dm->len = len;
	}
	return r;
}

static int dm_free(struct dm *dm)
{
	struct cmd c;

	cmd_init(&c, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE);
	attr(&c, UVERBS_ATTR_FREE_DM_HANDLE, 0, dm->handle);
	return run(&c);
}

struct dmmr {
	uint32_t handle, lkey, rkey;
};

static int dm_reg(struct dmmr *mr, struct dm *dm, uint64_t off, uint64_t len, uint32_t access)
{
	struct cmd c;
	struct ib_uverbs_attr *h;
	int r;

	cmd_init(&c, UVERBS_OBJECT_MR, UVERBS_METHOD_DM_MR_REG);
	h = attr(&c, UVERBS_ATTR_REG_DM_MR_HANDLE, 0, 0);
	attr(&c, UVERBS_ATTR_REG_DM_MR_OFFSET, sizeof(off), off);
	attr(&c, UVERBS_ATTR_REG_DM_MR_LENGTH, sizeof(len), len);
	attr(&c, UVERBS_ATTR_REG_DM_MR_PD_HANDLE, 0, pd->handle);
	attr(&c, UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, sizeof(access), access);
	attr(&c, UVERBS_ATTR_REG_DM_MR_DM_HANDLE, 0, dm->handle);
	attr(&c, UVERBS_ATTR_REG_DM_MR_RESP_LKEY, sizeof(mr->lkey), (uintptr_t)&mr->lkey);
	attr(&c, UVERBS_ATTR_REG_DM_MR_RESP_RKEY, sizeof(mr->rkey), (uintptr_t)&mr->rkey);
	r = run(&c);
	if (!r)
		mr->handle = h->data;
	return r;
}

static int mr_destroy(struct dmmr *mr)
{
	struct cmd c;

	cmd_init(&c, UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY);
	attr(&c, UVERBS_ATTR_DESTROY_MR_HANDLE, 0, mr->handle);
	return run(&c);
}

static uint64_t pages(uint64_t len)
{
	return (len + PAGE - 1) & ~(PAGE - 1);
}

static void *dm_map(struct dm *dm)
{
	return mmap(NULL, pages(dm->len), PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd, dm->offset);
}

static uint64_t max_dm_size(void)
{
	struct ibv_device_attr_ex a;

	if (ibv_query_device_ex(ctx, NULL, &a))
		return UINT64_MAX;
	return a.max_dm_size;
}

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 131 + 7);
}

#define ZB_LW (IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE)

static int mode_off(void)
{
	struct dm dm;
	int r;

	if (max_dm_size() != 0)
		FAIL("max_dm_size is %llu, expected 0", (unsigned long long)max_dm_size());
	r = dm_alloc(&dm, 4096, 0);
	if (r != EOPNOTSUPP)
		FAIL("DM_ALLOC with device memory off: %d (%s), expected EOPNOTSUPP", r, strerror(r));
	return 0;
}

static int expect(int got, int want, const char *what)
{
	if (got != want)
		FAIL("%s: %d (%s), expected %d (%s)", what, got, strerror(got), want, strerror(want));
	return 0;
}

static int mode_basic(uint64_t size)
{
	const uint64_t len = 10000;
	struct dm dm, dm2;
	struct dmmr mr, bad;
	uint8_t *p, *q;
	int r;

	if (max_dm_size() != size)
		FAIL("max_dm_size is %llu, expected %llu", (unsigned long long)max_dm_size(),
		     (unsigned long long)size);
	r = dm_alloc(&dm, len, 3);
	if (r)
		FAIL("DM_ALLOC %llu bytes, log_align 3: %s", (unsigned long long)len, strerror(r));
	if (dm.offset % PAGE)
		FAIL("mmap offset 0x%llx is not page aligned", (unsigned long long)dm.offset);
	p = dm_map(&dm);
	if (p == MAP_FAILED)
		FAIL("mmap of the DM: %s", strerror(errno));
	if ((uintptr_t)p % 8)
		FAIL("mapping %p does not meet the 8-byte alignment asked for", (void *)p);
	for (uint64_t i = 0; i < len; i++)
		if (p[i])
			FAIL("new DM byte %llu is 0x%x, not zero", (unsigned long long)i, p[i]);
	for (uint64_t i = 0; i < len; i++)
		p[i] = pattern(i);
	/* A second mapping of the same offset sees the same kernel pages. */
	q = dm_map(&dm);
	if (q == MAP_FAILED)
		FAIL("second mmap of the DM: %s", strerror(errno));
	for (uint64_t i = 0; i < len; i++)
		if (q[i] != pattern(i))
			FAIL("second mapping, byte %llu: 0x%x, wrote 0x%x", (unsigned long long)i, q[i],
			     pattern(i));
	munmap(q, pages(len));
	/* A mapping longer than the DM is refused. */
	q = mmap(NULL, pages(len) + PAGE, PROT_READ, MAP_SHARED, ctx->cmd_fd, dm.offset);
	if (q != MAP_FAILED)
		FAIL("mmap longer than the DM succeeded");

	/* Zero-based DM MRs, inside the DM; a zero-length one too. */
	r = dm_reg(&mr, &dm, 100, 8000, ZB_LW | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (r)
		FAIL("DM MR [100, 8100): %s", strerror(r));
	if (mr.lkey != mr.rkey || (mr.lkey >> 8) < 1 || (mr.lkey >> 8) > (1u << 19))
		FAIL("DM MR keys lkey 0x%x rkey 0x%x", mr.lkey, mr.rkey);
	if ((r = dm_reg(&bad, &dm, 0, len, ZB_LW)))
		FAIL("DM MR over the whole DM: %s", strerror(r));
	if ((r = mr_destroy(&bad)))
		FAIL("destroy whole-DM MR: %s", strerror(r));
	if ((r = dm_reg(&bad, &dm, len, 0, ZB_LW)))
		FAIL("zero-length DM MR at the end: %s", strerror(r));
	if ((r = mr_destroy(&bad)))
		FAIL("destroy zero-length DM MR: %s", strerror(r));

	if (expect(dm_reg(&bad, &dm, 0, len + 4, ZB_LW), EINVAL, "DM MR larger than the DM") ||
	    expect(dm_reg(&bad, &dm, 8, len, ZB_LW), EINVAL, "DM MR running past the DM") ||
	    expect(dm_reg(&bad, &dm, len + 4, 4, ZB_LW), EINVAL, "DM MR starting past the DM") ||
	    expect(dm_reg(&bad, &dm, UINT64_MAX - 3, 8, ZB_LW), EINVAL, "DM MR with offset + length wrapping") ||
	    expect(dm_reg(&bad, &dm, 0, 64, IBV_ACCESS_LOCAL_WRITE), EINVAL, "DM MR that is not zero-based") ||
	    expect(dm_reg(&bad, &dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE), EINVAL,
		   "DM MR with remote write but not local write"))
		return 1;

	/* The DM cannot go while an MR uses it. */
	if (expect(dm_free(&dm), EBUSY, "DM_FREE with an MR on it"))
		return 1;
	if ((r = mr_destroy(&mr)))
		FAIL("destroy DM MR: %s", strerror(r));
	if ((r = dm_free(&dm)))
		FAIL("DM_FREE: %s", strerror(r));

	/* Freed: the offset cannot be mapped again; the old mapping is inert. */
	q = dm_map(&dm);
	if (q != MAP_FAILED)
		FAIL("mmap of a freed DM's offset succeeded");
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != pattern(i))
			FAIL("old mapping changed after free at byte %llu", (unsigned long long)i);
	memset(p, 0xa5, len);

	/* New device memory never shows old contents. */
	if ((r = dm_alloc(&dm2, len, 0)))
		FAIL("DM_ALLOC after free: %s", strerror(r));
	q = dm_map(&dm2);
	if (q == MAP_FAILED)
		FAIL("mmap of the new DM: %s", strerror(errno));
	for (uint64_t i = 0; i < len; i++)
		if (q[i])
			FAIL("new DM byte %llu is 0x%x, not zero", (unsigned long long)i, q[i]);
	munmap(q, pages(len));
	munmap(p, pages(len));
	if ((r = dm_free(&dm2)))
		FAIL("DM_FREE of the new DM: %s", strerror(r));
	printf("DM alloc, mmap, pattern, DM MRs and free: ok\n");
	return 0;
}

static int mode_limits(uint64_t size)
{
	static struct dm dms[4096];
	struct dm dm;
	unsigned n = 0;
	int r;

	if (expect(dm_alloc(&dm, 0, 0), EINVAL, "zero-length DM") ||
	    expect(dm_alloc(&dm, size + 1, 0), EINVAL, "DM larger than max_dm_size") ||
	    expect(dm_alloc(&dm, UINT64_MAX, 0), EINVAL, "DM of 2^64 - 1 bytes") ||
	    expect(dm_alloc(&dm, 64, 13), EINVAL, "alignment 2^13 (above a page)") ||
	    expect(dm_alloc(&dm, 64, 64), EINVAL, "alignment 2^64"))
		return 1;
	if ((r = dm_alloc(&dm, 64, 12)) || (r = dm_free(&dm)))
		FAIL("page-aligned DM: %s", strerror(r));
	if ((r = dm_alloc(&dm, size, 0)) || (r = dm_free(&dm)))
		FAIL("DM of max_dm_size: %s", strerror(r));

	/* One page at a time until the device memory is used up. */
	while (n < sizeof(dms) / sizeof(dms[0])) {
		r = dm_alloc(&dms[n], 100, 2);
		if (r)
			break;
		n++;
	}
	if (r != ENOMEM)
		FAIL("allocation %u: %d (%s), expected ENOMEM when full", n, r, strerror(r));
	if (n != size / PAGE)
		FAIL("%u one-page DMs fit in %llu bytes, expected %llu", n, (unsigned long long)size,
		     (unsigned long long)(size / PAGE));
	if ((r = dm_free(&dms[0])))
		FAIL("DM_FREE: %s", strerror(r));
	if ((r = dm_alloc(&dms[0], PAGE, 0)))
		FAIL("allocation after one was freed: %s", strerror(r));
	for (unsigned i = 0; i < n; i++)
		if ((r = dm_free(&dms[i])))
			FAIL("DM_FREE %u: %s", i, strerror(r));
	if ((r = dm_alloc(&dm, size, 0)) || (r = dm_free(&dm)))
		FAIL("DM of max_dm_size after freeing all: %s", strerror(r));
	printf("%u one-page DMs in %llu bytes\n", n, (unsigned long long)size);
	return 0;
}

static int mode_leak(uint64_t size)
{
	struct dm dm;
	struct dmmr mr;
	uint8_t *p;
	int r;

	if ((r = dm_alloc(&dm, size / 2, 0)))
		FAIL("DM_ALLOC: %s", strerror(r));
	p = dm_map(&dm);
	if (p == MAP_FAILED)
		FAIL("mmap: %s", strerror(errno));
	memset(p, 0x5a, size / 2);
	if ((r = dm_reg(&mr, &dm, 0, size / 2, ZB_LW)))
		FAIL("DM MR: %s", strerror(r));
	printf("left a DM, its mapping and a DM MR\n");
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv)
{
	uint64_t arg;

	if (argc < 3) {
		fprintf(stderr, "usage: %s DEV MODE [ARG]\n", argv[0]);
		return 2;
	}
	arg = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
	ctx = rrxe_open(argv[1]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		FAIL("ibv_alloc_pd: %s", strerror(errno));

	if (!strcmp(argv[2], "off"))
		return mode_off();
	if (!strcmp(argv[2], "basic"))
		return mode_basic(arg);
	if (!strcmp(argv[2], "limits"))
		return mode_limits(arg);
	if (!strcmp(argv[2], "leak"))
		return mode_leak(arg);
	FAIL("unknown mode %s", argv[2]);
}
