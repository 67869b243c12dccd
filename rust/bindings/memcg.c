// SPDX-License-Identifier: GPL-2.0
/*
 * Room in a memory cgroup, for rust/ib/memcg.rs. Rust allocates a user's
 * objects with GFP_KERNEL_ACCOUNT, which cannot say __GFP_RETRY_MAYFAIL:
 * past the cgroup's limit such a charge calls the cgroup's OOM killer
 * instead of failing. So before it allocates, the caller makes sure the
 * cgroup has room: rrxe_memcg_room takes that many pages with
 * __GFP_RETRY_MAYFAIL (reclaiming the cgroup's memory as needed, failing
 * -ENOMEM where reclaim finds too little, never killing) and gives them
 * back at once. Their charge stays in the CPU's charge stock or goes back
 * to the cgroup's margin, where the allocations that follow find it.
 */
#include <linux/gfp.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <rdma/uverbs_ioctl.h>

#include "helpers.h"

/*
 * 0 when the memory cgroup charged now (the charging scope's, else the
 * caller's) has room for @bytes more, -ENOMEM when it has not. Process
 * context; may sleep. @bytes is what the caller is about to allocate
 * anyway: the check costs no more than the allocation.
 */
int rrxe_memcg_room(size_t bytes)
{
	unsigned long n = DIV_ROUND_UP(bytes, PAGE_SIZE), i;
	struct page *p, *tmp;
	LIST_HEAD(pages);
	int err = 0;

	for (i = 0; i < n; i++) {
		p = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
		if (!p) {
			err = -ENOMEM;
			break;
		}
		list_add(&p->lru, &pages);
		cond_resched();
	}
	list_for_each_entry_safe(p, tmp, &pages, lru) {
		list_del(&p->lru);
		__free_page(p);
	}
	return err;
}
