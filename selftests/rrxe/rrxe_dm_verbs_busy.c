// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_dm_verbs_busy DEV: ibv_free_dm() of device memory that a DM MR
 * still uses, through libibverbs and the rxe provider (built against the
 * project's rdma-core 59: pyverbs cannot do it, as its DM deregisters its
 * MRs before it frees). The free fails EBUSY and leaves the DM allocated
 * and mapped: its bytes read back, copies still work, and DM MRs on it can
 * still be registered. Once the MRs are gone, the free succeeds. Prints
 * what went wrong and exits non-zero on failure.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "rrxe_test.h"

#define LEN 8192
#define ACCESS (IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

int main(int argc, char **argv)
{
	static uint8_t pat[LEN], back[LEN];
	struct ibv_alloc_dm_attr attr = { .length = LEN };
	struct ibv_context *ctx;
	struct ibv_mr *mr, *mr2;
	struct ibv_pd *pd;
	struct ibv_dm *dm;
	int r;

	if (argc != 2)
		FAIL("usage: rrxe_dm_verbs_busy DEV");
	ctx = rrxe_open(argv[1]);
	if (!ctx)
		FAIL("cannot open %s", argv[1]);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		FAIL("ibv_alloc_pd: %s", strerror(errno));
	dm = ibv_alloc_dm(ctx, &attr);
	if (!dm)
		FAIL("ibv_alloc_dm of %d bytes: %s", LEN, strerror(errno));
	for (int i = 0; i < LEN; i++)
		pat[i] = (uint8_t)(i * 7 + 3);
	r = ibv_memcpy_to_dm(dm, 0, pat, LEN);
	if (r)
		FAIL("ibv_memcpy_to_dm: %s", strerror(r));
	mr = ibv_reg_dm_mr(pd, dm, 0, LEN, ACCESS);
	if (!mr)
		FAIL("ibv_reg_dm_mr: %s", strerror(errno));

	r = ibv_free_dm(dm);
	if (r != EBUSY)
		FAIL("ibv_free_dm with a DM MR on it returned %d (%s), expected EBUSY", r,
		     r ? strerror(r) : "success");
	/* Still mapped and still the same memory. */
	r = ibv_memcpy_from_dm(back, dm, 0, LEN);
	if (r)
		FAIL("ibv_memcpy_from_dm after the refused free: %s", strerror(r));
	if (memcmp(back, pat, LEN))
		FAIL("the DM's bytes changed across the refused free");
	pat[LEN - 1] ^= 0xff;
	r = ibv_memcpy_to_dm(dm, LEN - 4, pat + LEN - 4, 4);
	if (r)
		FAIL("ibv_memcpy_to_dm after the refused free: %s", strerror(r));
	r = ibv_memcpy_from_dm(back, dm, 0, LEN);
	if (r || memcmp(back, pat, LEN))
		FAIL("the DM does not read back what was written after the refused free");
	/* Another MR on it; with two, the free is refused again. */
	mr2 = ibv_reg_dm_mr(pd, dm, 4096, 4096, ACCESS);
	if (!mr2)
		FAIL("ibv_reg_dm_mr after the refused free: %s", strerror(errno));
	if (ibv_dereg_mr(mr))
		FAIL("ibv_dereg_mr: %s", strerror(errno));
	r = ibv_free_dm(dm);
	if (r != EBUSY)
		FAIL("ibv_free_dm with one of two DM MRs left returned %d, expected EBUSY", r);
	if (ibv_dereg_mr(mr2))
		FAIL("ibv_dereg_mr: %s", strerror(errno));
	r = ibv_free_dm(dm);
	if (r)
		FAIL("ibv_free_dm with no DM MR left: %s", strerror(r));
	if (ibv_dealloc_pd(pd))
		FAIL("ibv_dealloc_pd: %s", strerror(errno));
	if (ibv_close_device(ctx))
		FAIL("ibv_close_device: %s", strerror(errno));
	printf("# ibv_free_dm: EBUSY with DM MRs on it, the DM still mapped; then freed\n");
	return 0;
}
