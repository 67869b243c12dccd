// SPDX-License-Identifier: GPL-2.0
/*
 * tools/bench-udp-pingpong: the latency floor of a link for tools/bench-pair.
 *
 *   bench-udp-pingpong s PORT MODE ITERS        (the server, in guest a)
 *   bench-udp-pingpong c ADDR PORT MODE ITERS   (the client, in guest b)
 *
 * A ping-pong of 64-byte UDP datagrams, each side spinning on its socket
 * (MSG_DONTWAIT) as perftest's latency tests spin on their CQ. MODE says
 * what each side sends when the other's request arrives:
 *   1      its own request: one datagram a one-way trip, as a protocol
 *          whose acknowledgement rides on the next request (siw's TCP);
 *   2      an acknowledgement, then its request, in two sendto calls: two
 *          datagrams a one-way trip, as RoCE RC, whose ACK is a packet of
 *          its own that the requester waits for;
 *   2b     the same two datagrams in one sendmmsg call.
 * The client prints the median one-way time in microseconds (half of the
 * median round trip, as perftest's t_typical), over ITERS round trips
 * after one that is not counted.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define LEN 64

static int fd;
static struct sockaddr_in peer;
static int have_peer;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Spins until a datagram comes; it must be of kind @want. */
static void take(char want)
{
	struct sockaddr_in from;
	socklen_t flen;
	char b[LEN];
	ssize_t n;

	for (;;) {
		flen = sizeof(from);
		n = recvfrom(fd, b, sizeof(b), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
		if (n >= 0)
			break;
		if (errno != EAGAIN && errno != EINTR) {
			perror("recvfrom");
			exit(1);
		}
	}
	if (!have_peer) {
		peer = from;
		have_peer = 1;
	}
	if (n < 1 || b[0] != want) {
		fprintf(stderr, "bench-udp-pingpong: a datagram of kind %c, not %c\n",
			n < 1 ? '?' : b[0], want);
		exit(1);
	}
}

/* Sends one datagram of each kind in @kinds, as MODE says. */
static void give(const char *mode, const char *kinds)
{
	struct mmsghdr m[2];
	struct iovec v[2];
	char b[2][LEN];
	int i, n = strlen(kinds);

	memset(m, 0, sizeof(m));
	for (i = 0; i < n; i++) {
		memset(b[i], 0, LEN);
		b[i][0] = kinds[i];
		v[i].iov_base = b[i];
		v[i].iov_len = LEN;
		m[i].msg_hdr.msg_name = &peer;
		m[i].msg_hdr.msg_namelen = sizeof(peer);
		m[i].msg_hdr.msg_iov = &v[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	if (!strcmp(mode, "2b")) {
		if (sendmmsg(fd, m, n, 0) != n) {
			perror("sendmmsg");
			exit(1);
		}
		return;
	}
	for (i = 0; i < n; i++) {
		if (sendmsg(fd, &m[i].msg_hdr, 0) != LEN) {
			perror("sendmsg");
			exit(1);
		}
	}
}

/* Waits for the other side's request (after the ACK of ours, when there
 * is one of ours to acknowledge) and answers it. */
static void answer(const char *mode, int first)
{
	if (!strcmp(mode, "1")) {
		take('R');
		give(mode, "R");
		return;
	}
	if (!first)
		take('A');
	take('R');
	give(mode, "AR");
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct sockaddr_in me = { .sin_family = AF_INET };
	int server = argc == 5 && !strcmp(argv[1], "s");
	const char *mode;
	double *rtt, t;
	int iters, i;

	if (!server && !(argc == 6 && !strcmp(argv[1], "c"))) {
		fprintf(stderr, "usage: bench-udp-pingpong s PORT MODE ITERS | c ADDR PORT MODE ITERS\n");
		return 2;
	}
	mode = argv[server ? 3 : 4];
	iters = atoi(argv[server ? 4 : 5]);
	if (iters < 1 || (strcmp(mode, "1") && strcmp(mode, "2") && strcmp(mode, "2b"))) {
		fprintf(stderr, "bench-udp-pingpong: MODE is 1, 2 or 2b, ITERS at least 1\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	if (server) {
		me.sin_port = htons(atoi(argv[2]));
		if (bind(fd, (struct sockaddr *)&me, sizeof(me))) {
			perror("bind");
			return 1;
		}
		for (i = 0; i <= iters; i++)
			answer(mode, i == 0);
		/* The ACK of the last request. */
		if (strcmp(mode, "1"))
			take('A');
		return 0;
	}
	peer.sin_family = AF_INET;
	peer.sin_port = htons(atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &peer.sin_addr) != 1) {
		fprintf(stderr, "bench-udp-pingpong: %s is no IPv4 address\n", argv[2]);
		return 2;
	}
	have_peer = 1;
	rtt = calloc(iters, sizeof(*rtt));
	if (!rtt)
		return 1;
	give(mode, "R");
	t = now_us();
	for (i = 0; i <= iters; i++) {
		/* The ACK of our request, then the server's own. */
		if (strcmp(mode, "1"))
			take('A');
		take('R');
		if (i > 0)
			rtt[i - 1] = now_us() - t;
		t = now_us();
		give(mode, strcmp(mode, "1") ? "AR" : "R");
	}
	qsort(rtt, iters, sizeof(*rtt), cmp);
	printf("%.1f\n", rtt[iters / 2] / 2);
	return 0;
}
