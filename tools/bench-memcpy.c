// SPDX-License-Identifier: GPL-2.0
/*
 * tools/bench-memcpy SIZE SECONDS: memcpy bandwidth, for tools/bench-wire's
 * ceilings. Copies a SIZE-byte buffer into another, again and again, for
 * about SECONDS, and prints the bytes copied per second in MiB/s (2^20
 * bytes, as perftest's MB/sec). A cache-sized SIZE shows the copy a
 * provider makes of a message it just touched; a large one shows memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? strtoull(argv[1], NULL, 0) : 1 << 26;
	double secs = argc > 2 ? atof(argv[2]) : 2, t0, t;
	unsigned long long n = 0, batch;
	char *src = malloc(size), *dst = malloc(size);
	volatile char sink;

	if (!src || !dst || !size)
		return 1;
	memset(src, 1, size);
	memset(dst, 2, size);
	memcpy(dst, src, size);
	/* About 64 MiB between two readings of the clock. */
	batch = size < (1 << 22) ? (1 << 26) / size : 16;
	t0 = now();
	do {
		for (unsigned long long i = 0; i < batch; i++) {
			src[(n + i) % size]++;
			memcpy(dst, src, size);
		}
		n += batch;
		t = now() - t0;
	} while (t < secs);
	sink = dst[n % size];
	(void)sink;
	printf("%.0f\n", (double)n * size / t / (1 << 20));
	return 0;
}
