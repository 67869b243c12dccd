/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the rrxe selftest programs. */
#ifndef RRXE_TEST_H
#define RRXE_TEST_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
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
