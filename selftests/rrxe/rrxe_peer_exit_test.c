// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_peer_exit_test DEV MODE ROUNDS: a process streams a long message to
 * a QP of another process on the same device (loopback through the
 * device's own IPv4-mapped GID), and that other process is killed with
 * SIGKILL while the message moves. The kernel must tear the killed
 * process's context down cleanly (the test script scans the kernel log),
 * and the streaming process must get its completion and carry on.
 *
 *   uc        one UC SEND of 256 MiB (32 SGEs over one 8 MiB MR, path MTU
 *             256: a million packets) into a 256 MiB receive
 *   rc_write  128 RC RDMA WRITEs of 8 MiB (1 GiB) into the peer's 8 MiB MR
 *   rc_read   128 RC RDMA READs of 8 MiB from the peer's 8 MiB MR (the peer
 *             answers each READ in one loop that holds its QP)
 *
 * Round 0 kills nothing: it checks the data byte for byte and measures how
 * long the stream takes. Each later round starts a fresh peer and kills it
 * at a fraction of that time, and counts the rounds whose SIGKILL was sent
 * before the last completion arrived; at least one must be. Exits non-zero,
 * saying why, on any failure.
 *
 * ROUNDS "hold" starts round 0's peer, connects to it and then waits to be
 * killed, with the peer waiting on its pipe: the caller kills it there,
 * however slowly it gets to run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rrxe_test.h"

#define CHUNK (8u << 20)		/* the sender's MR */
#define NSGE 32
#define TOTAL ((uint64_t)CHUNK * NSGE)	/* 256 MiB */
#define NWR 128				/* RC work requests of CHUNK bytes */
#define WAIT_S 120			/* for one completion */

enum mode { UC, RC_WRITE, RC_READ };

struct info {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
};

static enum mode mode;
static const char *devname;
static int hold;

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 7 + (i >> 20) * 13 + 1);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int ipv4_gid(struct ibv_context *c, union ibv_gid *gid)
{
	for (int i = 0; i < 16; i++) {
		if (ibv_query_gid(c, 1, i, gid))
			break;
		if (!memcmp(gid->raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
			return i;
	}
	return -1;
}

/* One side: a device context, a PD, a CQ, a QP and a buffer with its MR. */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t len;
	union ibv_gid gid;
	int gid_index;
};

static int open_side(struct side *s, size_t len)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_qp_init_attr ia = {
		.qp_type = mode == UC ? IBV_QPT_UC : IBV_QPT_RC,
		.cap = { .max_send_wr = NWR, .max_recv_wr = 4, .max_send_sge = NSGE, .max_recv_sge = 1 },
	};

	s->ctx = rrxe_open(devname);
	if (!s->ctx)
		FAIL("cannot open %s", devname);
	s->gid_index = ipv4_gid(s->ctx, &s->gid);
	if (s->gid_index < 0)
		FAIL("no IPv4 GID on %s", devname);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, NWR + 16, NULL, NULL, 0);
	if (!s->pd || !s->cq)
		FAIL("pd/cq: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &ia);
	if (!s->qp)
		FAIL("create_qp: %s", strerror(errno));
	s->len = len;
	s->buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (s->buf == MAP_FAILED)
		FAIL("mmap %zu: %s", len, strerror(errno));
	s->mr = ibv_reg_mr(s->pd, s->buf, len, access);
	if (!s->mr)
		FAIL("reg_mr %zu: %s", len, strerror(errno));
	return 0;
}

/* Takes the QP to RTS, connected to QP `peer` through the device's own GID. */
static int connect_qp(struct side *s, uint32_t peer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	int rc_mask = mode == UC ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		FAIL("INIT: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_256;
	a.dest_qp_num = peer;
	a.rq_psn = 0x100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = s->gid;
	a.ah_attr.grh.sgid_index = s->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | rc_mask))
		FAIL("RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	/* A dead peer is given up on quickly: one retry of about 4 ms. */
	a.timeout = 10;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 4;
	rc_mask = mode == UC ? 0 : IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | rc_mask))
		FAIL("RTS: %s", strerror(errno));
	return 0;
}

static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	double end = now_ms() + WAIT_S * 1e3;

	while (now_ms() < end) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			FAIL("poll_cq failed");
		if (n)
			return 0;
		usleep(200);
	}
	FAIL("no completion within %d s", WAIT_S);
}

/*
 * The peer, in its own process: tells the streamer its QP and MR, connects,
 * posts its receive, says it is ready, then waits for "done" (round 0, and
 * then checks what it received) or to be killed.
 */
static int peer(int rfd, int wfd)
{
	struct side s = {0};
	struct info me, other;
	char c;

	/* A UC receive takes the whole message; RC targets one chunk. */
	if (open_side(&s, mode == UC ? TOTAL : CHUNK))
		return 1;
	if (mode == RC_READ)
		for (uint64_t i = 0; i < CHUNK; i++)
			s.buf[i] = pattern(i);
	me.qpn = s.qp->qp_num;
	me.rkey = s.mr->rkey;
	me.addr = (uintptr_t)s.buf;
	if (write(wfd, &me, sizeof(me)) != sizeof(me) || rrxe_readall(rfd, &other, sizeof(other)))
		FAIL("peer: pipe");
	if (connect_qp(&s, other.qpn))
		return 1;
	if (mode == UC) {
		struct ibv_sge sge = { (uintptr_t)s.buf, (uint32_t)TOTAL, s.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_recv(s.qp, &wr, &bad))
			FAIL("peer: post_recv: %s", strerror(errno));
	}
	c = 'r';
	if (write(wfd, &c, 1) != 1 || rrxe_readall(rfd, &c, 1))
		FAIL("peer: pipe");
	/* Round 0: the streamer is done; check what arrived. */
	if (mode == UC) {
		struct ibv_wc wc;

		if (wait_wc(s.cq, &wc))
			return 1;
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 7 || wc.byte_len != TOTAL)
			FAIL("peer: receive completion status %d wr_id %llu len %u", wc.status,
			     (unsigned long long)wc.wr_id, wc.byte_len);
	}
	if (mode != RC_READ)
		for (uint64_t i = 0; i < s.len; i++)
			if (s.buf[i] != pattern(i % CHUNK))
				FAIL("peer: byte %llu is %#x, not %#x", (unsigned long long)i, s.buf[i],
				     pattern(i % CHUNK));
	c = 'k';
	if (write(wfd, &c, 1) != 1)
		FAIL("peer: pipe");
	return 0;
}

/*
 * In a child just forked from `parent`: the child dies with its parent.
 * A streamer that stops early (a failed check, or killed) must not leave
 * its peer waiting on a pipe for ever, holding the caller's output open.
 */
static void die_with(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
}

/* When the killer sent its SIGKILL (ms, CLOCK_MONOTONIC), shared with it. */
static volatile double *killed_at;

/*
 * Posts the stream: the UC SEND (its doorbell returns once the whole
 * message has moved), or NWR RC work requests of one chunk each.
 */
static int post_stream(struct side *s, struct info *other)
{
	struct ibv_sge sge[NSGE];
	struct ibv_send_wr wr[NWR], *bad;
	int n = mode == UC ? 1 : NWR;

	for (int i = 0; i < NSGE; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)s->buf, CHUNK, s->mr->lkey };
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < n; i++) {
		wr[i].wr_id = i;
		wr[i].sg_list = sge;
		wr[i].num_sge = mode == UC ? NSGE : 1;
		wr[i].opcode = mode == UC ? IBV_WR_SEND : mode == RC_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		wr[i].wr.rdma.remote_addr = other->addr;
		wr[i].wr.rdma.rkey = other->rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	/* Only the last is signaled; a failed one completes anyway. */
	wr[n - 1].send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(s->qp, wr, &bad))
		FAIL("post_send: %s", strerror(errno));
	return n;
}

/*
 * Waits for the stream's last completion; *first gets the first error
 * status seen (IBV_WC_SUCCESS if none).
 */
static int wait_last(struct side *s, int n, enum ibv_wc_status *first)
{
	struct ibv_wc wc;

	*first = IBV_WC_SUCCESS;
	for (;;) {
		if (wait_wc(s->cq, &wc))
			return 1;
		if (wc.status != IBV_WC_SUCCESS && *first == IBV_WC_SUCCESS)
			*first = wc.status;
		if (wc.wr_id == (uint64_t)n - 1)
			return 0;
		if (wc.wr_id >= (uint64_t)n)
			FAIL("completion for unknown wr_id %llu", (unsigned long long)wc.wr_id);
	}
}

/*
 * One round: a fresh peer, the stream, and (when kill_ms >= 0) a SIGKILL
 * for the peer kill_ms after the post. Returns 0 on success and sets
 * *took (ms) and *mid (the SIGKILL went before the last completion).
 */
static int round_(struct side *s, double kill_ms, double *took, int *mid)
{
	int to_peer[2], from_peer[2], st, n;
	struct info other, me = { .qpn = s->qp->qp_num };
	enum ibv_wc_status first;
	pid_t p, killer = -1, self = getpid();
	double t0, t1;
	char c;

	if (pipe(to_peer) || pipe(from_peer))
		FAIL("pipe: %s", strerror(errno));
	p = fork();
	if (p < 0)
		FAIL("fork: %s", strerror(errno));
	if (p == 0) {
		die_with(self);
		close(to_peer[1]);
		close(from_peer[0]);
		_exit(peer(to_peer[0], from_peer[1]));
	}
	close(to_peer[0]);
	close(from_peer[1]);
	if (rrxe_readall(from_peer[0], &other, sizeof(other)))
		FAIL("the peer failed to start");
	if (write(to_peer[1], &me, sizeof(me)) != sizeof(me))
		FAIL("pipe");
	if (connect_qp(s, other.qpn) || rrxe_readall(from_peer[0], &c, 1))
		FAIL("the peer failed to connect");
	if (hold) {
		printf("holding with peer %d\n", (int)p);
		fflush(stdout);
		for (;;)
			pause();
	}

	*killed_at = 0;
	if (kill_ms >= 0) {
		killer = fork();
		if (killer < 0)
			FAIL("fork: %s", strerror(errno));
		if (killer == 0) {
			die_with(self);
			usleep((useconds_t)(kill_ms * 1e3));
			kill(p, SIGKILL);
			*killed_at = now_ms();
			_exit(0);
		}
	}
	t0 = now_ms();
	n = post_stream(s, &other);
	if (n < 0 || wait_last(s, n, &first))
		return 1;
	t1 = now_ms();
	*took = t1 - t0;
	if (kill_ms < 0) {
		if (first != IBV_WC_SUCCESS)
			FAIL("completion status %d (%s)", first, ibv_wc_status_str(first));
		if (mode == RC_READ)
			for (uint64_t i = 0; i < CHUNK; i++)
				if (s->buf[i] != pattern(i))
					FAIL("READ: byte %llu is %#x", (unsigned long long)i, s->buf[i]);
		c = 'd';
		if (write(to_peer[1], &c, 1) != 1 || rrxe_readall(from_peer[0], &c, 1) || c != 'k')
			FAIL("the peer found the data wrong");
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
			FAIL("the peer failed");
		*mid = 0;
	} else {
		/*
		 * UC completes without the peer. RC either finished before the
		 * peer died or gives up on it: a retry error, or an access error
		 * when its MR went first (the rest flush).
		 */
		if (first != IBV_WC_SUCCESS &&
		    (mode == UC || (first != IBV_WC_RETRY_EXC_ERR && first != IBV_WC_REM_ACCESS_ERR &&
				    first != IBV_WC_REM_INV_REQ_ERR && first != IBV_WC_REM_OP_ERR)))
			FAIL("completion status %d (%s)", first, ibv_wc_status_str(first));
		if (waitpid(killer, NULL, 0) != killer || waitpid(p, &st, 0) != p)
			FAIL("waitpid: %s", strerror(errno));
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
			FAIL("the peer was not killed (status %#x)", st);
		*mid = *killed_at > 0 && *killed_at < t1;
	}
	close(to_peer[1]);
	close(from_peer[0]);
	return 0;
}

int main(int argc, char **argv)
{
	double base = 0, took;
	int rounds, mid, landed = 0;
	struct side s = {0};

	if (argc != 4)
		FAIL("usage: %s DEV uc|rc_write|rc_read ROUNDS|hold", argv[0]);
	devname = argv[1];
	if (!strcmp(argv[2], "uc"))
		mode = UC;
	else if (!strcmp(argv[2], "rc_write"))
		mode = RC_WRITE;
	else if (!strcmp(argv[2], "rc_read"))
		mode = RC_READ;
	else
		FAIL("unknown mode %s", argv[2]);
	hold = !strcmp(argv[3], "hold");
	rounds = hold ? 0 : atoi(argv[3]);
	killed_at = mmap(NULL, sizeof(*killed_at), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (killed_at == MAP_FAILED)
		FAIL("mmap: %s", strerror(errno));
	for (int r = 0; r <= rounds; r++) {
		/* A fresh QP each round: an RC QP that lost its peer is in ERR. */
		if (s.ctx) {
			ibv_destroy_qp(s.qp);
			ibv_dereg_mr(s.mr);
			munmap(s.buf, s.len);
			ibv_destroy_cq(s.cq);
			ibv_dealloc_pd(s.pd);
			ibv_close_device(s.ctx);
			memset(&s, 0, sizeof(s));
		}
		if (open_side(&s, CHUNK))
			return 1;
		for (uint64_t i = 0; i < CHUNK; i++)
			s.buf[i] = pattern(i);
		/* Kill at 10%, 40%, 70%, 10%, ... of the unhindered time. */
		double at = r ? base * (0.1 + 0.3 * ((r - 1) % 3)) : -1;

		if (round_(&s, at, &took, &mid))
			return 1;
		if (!r)
			base = took;
		landed += mid;
		printf("round %d: kill at %.0f ms, stream took %.0f ms, killed mid-stream: %s\n", r, at, took,
		       r ? (mid ? "yes" : "no") : "-");
		fflush(stdout);
	}
	if (rounds && !landed)
		FAIL("no kill landed while the message moved");
	return 0;
}
