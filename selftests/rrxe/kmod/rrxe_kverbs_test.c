// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_kverbs_test: kernel verbs against the RXE-driver device bound to
 * netdev=NAME, as a kernel ULP uses them: PDs (whose local_dma_lkey and
 * unsafe global rkey come from get_dma_mr), kernel CQs, fast-registration
 * MRs from ib_alloc_mr, and ib_map_mr_sg over a scatterlist. Loading succeeds only
 * if every check passes; each check logs one "rrxe_kverbs_test: ok" line,
 * a failure logs what went wrong and the load fails with -EINVAL.
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/scatterlist.h>
#include <linux/gfp.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>

static char *netdev = "";
module_param(netdev, charp, 0444);
MODULE_PARM_DESC(netdev, "netdev whose RXE-driver RDMA device to test");

#define NPAGES 20
#define MR_INDEX_MAX (1u << 19)

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		pr_err("rrxe_kverbs_test: FAIL " __VA_ARGS__);		\
		return -EINVAL;						\
	}								\
} while (0)

static bool mr_key_ok(u32 key)
{
	return (key >> 8) >= 1 && (key >> 8) <= MR_INDEX_MAX;
}

static int check_pds(struct ib_device *dev)
{
	struct ib_pd *pd, *gpd;
	int ret = 0;

	pd = ib_alloc_pd(dev, 0);
	CHECK(!IS_ERR(pd), "ib_alloc_pd: %ld\n", PTR_ERR(pd));
	if (!pd->__internal_mr || !mr_key_ok(pd->local_dma_lkey)) {
		pr_err("rrxe_kverbs_test: FAIL local_dma_lkey 0x%x (internal MR %p)\n",
		       pd->local_dma_lkey, pd->__internal_mr);
		ret = -EINVAL;
	}
	gpd = ib_alloc_pd(dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(gpd)) {
		pr_err("rrxe_kverbs_test: FAIL ib_alloc_pd(UNSAFE_GLOBAL_RKEY): %ld\n", PTR_ERR(gpd));
		ib_dealloc_pd(pd);
		return -EINVAL;
	}
	if (!mr_key_ok(gpd->unsafe_global_rkey) ||
	    gpd->unsafe_global_rkey != gpd->__internal_mr->rkey ||
	    gpd->local_dma_lkey != gpd->__internal_mr->lkey) {
		pr_err("rrxe_kverbs_test: FAIL global rkey 0x%x, lkey 0x%x\n",
		       gpd->unsafe_global_rkey, gpd->local_dma_lkey);
		ret = -EINVAL;
	}
	if (pd->local_dma_lkey == gpd->local_dma_lkey) {
		pr_err("rrxe_kverbs_test: FAIL two PDs share DMA key 0x%x\n", pd->local_dma_lkey);
		ret = -EINVAL;
	}
	ib_dealloc_pd(gpd);
	ib_dealloc_pd(pd);
	if (!ret)
		pr_info("rrxe_kverbs_test: ok PDs get DMA MRs: local_dma_lkey and unsafe global rkey\n");
	return ret;
}

static int check_alloc_mr(struct ib_pd *pd)
{
	static const struct { enum ib_mr_type type; u32 n; } bad[] = {
		{ IB_MR_TYPE_MEM_REG, 0 },
		{ IB_MR_TYPE_MEM_REG, 513 },
		{ IB_MR_TYPE_MEM_REG, U32_MAX },
		{ IB_MR_TYPE_SG_GAPS, 16 },
		{ IB_MR_TYPE_DM, 16 },
	};
	struct ib_mr *mr;
	u32 keys[64];
	int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		mr = ib_alloc_mr(pd, bad[i].type, bad[i].n);
		if (!IS_ERR(mr)) {
			ib_dereg_mr(mr);
			CHECK(0, "ib_alloc_mr(type %d, %u) succeeded\n", bad[i].type, bad[i].n);
		}
		CHECK(PTR_ERR(mr) == -EINVAL, "ib_alloc_mr(type %d, %u): %ld, expected -EINVAL\n",
		      bad[i].type, bad[i].n, PTR_ERR(mr));
	}
	/* Many at once, distinct keys; and the maximum page list. */
	for (i = 0; i < 1000; i++) {
		mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, i % 64 == 0 ? 512 : 1 + i % 32);
		CHECK(!IS_ERR(mr), "ib_alloc_mr #%d: %ld\n", i, PTR_ERR(mr));
		if (mr->lkey != mr->rkey || !mr_key_ok(mr->lkey)) {
			ib_dereg_mr(mr);
			CHECK(0, "fast MR keys lkey 0x%x rkey 0x%x\n", mr->lkey, mr->rkey);
		}
		keys[i % 64] = mr->lkey;
		CHECK(ib_dereg_mr(mr) == 0, "ib_dereg_mr #%d\n", i);
	}
	pr_info("rrxe_kverbs_test: ok ib_alloc_mr: bad types and sizes -EINVAL, 1000 alloc/dereg, keys in the MR range (last 0x%x)\n",
		keys[999 % 64]);
	return 0;
}

static int map(struct ib_mr *mr, struct scatterlist *sg, int n, unsigned int *off,
	       unsigned int page_size, int want, u64 iova, u64 len, const char *what)
{
	int got = ib_map_mr_sg(mr, sg, n, off, page_size);

	CHECK(got == want, "%s: ib_map_mr_sg returned %d, expected %d\n", what, got, want);
	if (want > 0) {
		CHECK(mr->iova == iova && mr->length == len && mr->page_size == page_size,
		      "%s: iova 0x%llx length %llu page_size %u, expected 0x%llx %llu %u\n", what,
		      mr->iova, mr->length, mr->page_size, iova, len, page_size);
	}
	pr_info("rrxe_kverbs_test: ok %s\n", what);
	return 0;
}

static int check_map_mr_sg(struct ib_device *dev, struct ib_pd *pd)
{
	struct scatterlist sg[NPAGES];
	struct page *pages[NPAGES] = {};
	struct ib_mr *mr;
	unsigned int off;
	int i, n, ret = -ENOMEM;
	u64 a0;

	sg_init_table(sg, NPAGES);
	for (i = 0; i < NPAGES; i++) {
		pages[i] = alloc_page(GFP_KERNEL);
		if (!pages[i])
			goto free;
		sg_set_page(&sg[i], pages[i], PAGE_SIZE, 0);
	}
	n = ib_dma_map_sg(dev, sg, NPAGES, DMA_BIDIRECTIONAL);
	ret = -EINVAL;
	if (n != NPAGES) {
		pr_err("rrxe_kverbs_test: FAIL ib_dma_map_sg: %d\n", n);
		goto free;
	}
	a0 = sg_dma_address(&sg[0]);
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 16);
	if (IS_ERR(mr)) {
		pr_err("rrxe_kverbs_test: FAIL ib_alloc_mr(16): %ld\n", PTR_ERR(mr));
		goto unmap;
	}
	off = 100;
	ret = map(mr, sg, 4, NULL, PAGE_SIZE, 4, a0, 4 * PAGE_SIZE,
		  "ib_map_mr_sg: 4 pages") ?:
	      map(mr, sg, NPAGES, NULL, PAGE_SIZE, 16, a0, 16 * PAGE_SIZE,
		  "ib_map_mr_sg: 20 pages into a 16-page MR maps 16") ?:
	      map(mr, sg, 2, &off, PAGE_SIZE, 2, a0 + 100, 2 * PAGE_SIZE - 100,
		  "ib_map_mr_sg: with a first-entry offset") ?:
	      map(mr, sg, 2, NULL, 1000, -EINVAL, 0, 0,
		  "ib_map_mr_sg: page size 1000 fails -EINVAL") ?:
	      map(mr, sg, 1, NULL, PAGE_SIZE, 1, a0, PAGE_SIZE,
		  "ib_map_mr_sg: remapping after a failure");
	if (ib_dereg_mr(mr)) {
		pr_err("rrxe_kverbs_test: FAIL ib_dereg_mr of a mapped MR\n");
		ret = -EINVAL;
	}
unmap:
	ib_dma_unmap_sg(dev, sg, NPAGES, DMA_BIDIRECTIONAL);
free:
	for (i = 0; i < NPAGES; i++)
		if (pages[i])
			__free_page(pages[i]);
	return ret;
}

static void comp_handler(struct ib_cq *cq, void *ctx)
{
}

static int check_cqs(struct ib_device *dev)
{
	static const struct { unsigned int cqe; int vec; } bad[] = {
		/* cqe 0 is refused by the core itself, with a WARN. */
		{ 32768, 0 }, { UINT_MAX, 0 }, { 16, -1 },
	};
	struct ib_cq_init_attr ca = {};
	struct ib_wc wc[4];
	struct ib_cq *cq;
	int i, r, n;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ca.cqe = bad[i].cqe;
		ca.comp_vector = bad[i].vec < 0 ? dev->num_comp_vectors : bad[i].vec;
		cq = ib_create_cq(dev, comp_handler, NULL, NULL, &ca);
		if (!IS_ERR(cq)) {
			ib_destroy_cq(cq);
			CHECK(0, "ib_create_cq(cqe %u, vector %u) succeeded\n", ca.cqe, ca.comp_vector);
		}
		CHECK(PTR_ERR(cq) == -EINVAL, "ib_create_cq(cqe %u, vector %u): %ld, expected -EINVAL\n",
		      ca.cqe, ca.comp_vector, PTR_ERR(cq));
	}
	ca.cqe = 100;
	ca.comp_vector = dev->num_comp_vectors - 1;
	cq = ib_create_cq(dev, comp_handler, NULL, NULL, &ca);
	CHECK(!IS_ERR(cq), "ib_create_cq(100): %ld\n", PTR_ERR(cq));
	n = cq->cqe;
	r = n != 127 ? -1 : ib_poll_cq(cq, 4, wc);
	if (!r)
		r = ib_req_notify_cq(cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS);
	if (!r)
		r = ib_req_notify_cq(cq, IB_CQ_SOLICITED | IB_CQ_REPORT_MISSED_EVENTS);
	ib_destroy_cq(cq);
	CHECK(r == 0, "new kernel CQ: cqe %d, poll/notify gave %d\n", n, r);
	for (i = 0; i < 200; i++) {
		ca.cqe = 1 + i * 50;
		ca.comp_vector = i % dev->num_comp_vectors;
		cq = ib_create_cq(dev, comp_handler, NULL, NULL, &ca);
		CHECK(!IS_ERR(cq), "ib_create_cq #%d: %ld\n", i, PTR_ERR(cq));
		ib_destroy_cq(cq);
	}
	/* The helper kernel ULPs use, with direct polling. */
	cq = ib_alloc_cq(dev, NULL, 64, 0, IB_POLL_DIRECT);
	CHECK(!IS_ERR(cq), "ib_alloc_cq: %ld\n", PTR_ERR(cq));
	r = ib_process_cq_direct(cq, 16);
	ib_free_cq(cq);
	CHECK(r == 0, "ib_process_cq_direct on an empty CQ: %d\n", r);
	pr_info("rrxe_kverbs_test: ok kernel CQs: bad sizes and vectors -EINVAL, cqe 2^k - 1, empty poll, notify, 200 create/destroy, ib_alloc_cq\n");
	return 0;
}

static int __init rrxe_kverbs_test_init(void)
{
	struct net_device *nd;
	struct ib_device *dev;
	struct ib_pd *pd;
	int ret;

	nd = dev_get_by_name(&init_net, netdev);
	if (!nd) {
		pr_err("rrxe_kverbs_test: no netdev '%s'\n", netdev);
		return -ENODEV;
	}
	dev = ib_device_get_by_netdev(nd, RDMA_DRIVER_RXE);
	dev_put(nd);
	if (!dev) {
		pr_err("rrxe_kverbs_test: no RXE-driver device on %s\n", netdev);
		return -ENODEV;
	}
	ret = check_pds(dev) ?: check_cqs(dev);
	if (!ret) {
		pd = ib_alloc_pd(dev, 0);
		if (IS_ERR(pd)) {
			ret = PTR_ERR(pd);
		} else {
			ret = check_alloc_mr(pd) ?: check_map_mr_sg(dev, pd);
			ib_dealloc_pd(pd);
		}
	}
	ib_device_put(dev);
	if (!ret)
		pr_info("rrxe_kverbs_test: all passed on %s\n", netdev);
	return ret ? -EINVAL : 0;
}

static void __exit rrxe_kverbs_test_exit(void)
{
}

module_init(rrxe_kverbs_test_init);
module_exit(rrxe_kverbs_test_exit);
MODULE_DESCRIPTION("rrxe selftest: kernel verbs (PD DMA MRs, ib_alloc_mr, ib_map_mr_sg)");
MODULE_LICENSE("GPL");
