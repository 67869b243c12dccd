/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the rrxe selftest programs. */
#ifndef RRXE_TEST_H
#define RRXE_TEST_H

#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

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

#endif
