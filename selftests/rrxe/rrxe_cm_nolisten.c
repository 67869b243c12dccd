// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_cm_nolisten.so, for LD_PRELOAD: a process's first rdma_listen is
 * librdmacm's; every later one returns success and listens on nothing.
 * Under a perftest -R server (rrxe_cm_reject.sh) the first is its control
 * connection's listener and the second its QPs' one, so the client's
 * connection of its QPs meets no listener, every time: what happens when
 * that server is slower than its client after their hand-shake.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <rdma/rdma_cma.h>

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	static int (*real)(struct rdma_cm_id *, int);
	static int calls;

	if (!real)
		real = (int (*)(struct rdma_cm_id *, int))dlsym(RTLD_NEXT, "rdma_listen");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (++calls > 1) {
		fprintf(stderr, "rrxe_cm_nolisten: rdma_listen call %d not made\n", calls);
		return 0;
	}
	return real(id, backlog);
}
