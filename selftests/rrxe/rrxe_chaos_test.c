// SPDX-License-Identifier: GPL-2.0
/*
 * The traffic of rrxe_chaos.sh, and its verified transfer.
 *
 * rrxe_chaos_test stream TYPE DEV_S DEV_R SIZE [srq]: a stream of TYPE (rc,
 * uc, ud, xrc) SENDs of SIZE bytes from a sender process on DEV_S to a
 * receiver process (forked) on DEV_R, each side through its device's
 * IPv4-mapped GID, the receiver from an SRQ with "srq"; on RC and XRC every
 * fourth work request is an RDMA READ of a fixed region of the receiver.
 * On XRC (which needs librxe's XRC verbs: tools/rdma-user-env) the sender
 * has an XRC initiator QP, and the receiver an XRC domain (of no file), an
 * XRC SRQ, always, and an XRC target QP. Once the receiver has
 * taken a message the sender prints "pids SENDER RECEIVER", and they
 * stream until stopped. Every message and READ that completes successfully
 * is checked word for word (its words derive from its sequence number).
 * Signals, to either process, are the disruptions that come from inside:
 *
 *   SIGRTMIN+1  close the context with everything in it, mid-stream
 *   SIGRTMIN+2  destroy the QP
 *   SIGRTMIN+3  destroy the QP, then the CQ
 *   SIGRTMIN+4  destroy the QP, then the SRQ (if any), then the CQ
 *
 * after which the process lingers 100 ms (the peer still sending) and
 * exits 0. Exit status: 0 stopped (SIGTERM) or done; 10 disrupted from
 * outside (an error completion, a failing verb, no completion for 5 s:
 * what a device going away looks like); 1 a successful completion with
 * wrong data, or the stream never started; 2 usage.
 *
 * rrxe_chaos_test long uc|rc_write|rc_read DEV MTU KILL_MS: the critical
 * trigger, a 256 MiB stream between two processes on DEV through its own
 * GID whose peer is SIGKILLed mid-stream (see long_stream()).
 *
 * rrxe_chaos_test verify DEV...: verified RC, UC and UD transfers on each
 * DEV (rrxe_verify.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rrxe_test.h"
#include "rrxe_verify.h"

#define DEPTH 32	/* receives posted, sends outstanding */
#define STALL_S 5

enum { DISRUPTED = 10, CORRUPT = 1 };

static int type; /* IBV_QPT_RC, _UC, _UD, _XRC_SEND (XRC: the sender's type) */
static uint32_t size;
static int use_srq;
static volatile sig_atomic_t action, stop;

struct side {
	struct ibv_context *ctx;
	struct ibv_xrcd *xrcd;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr, *rdmr;
	struct ibv_ah *ah;
	uint8_t *rd;
	uint8_t *buf;
	size_t len;
	union ibv_gid gid;
	int gid_index;
};

struct info {
	uint32_t qpn;
	union ibv_gid gid;
	/* The receiver's read region (RC, XRC). */
	uint64_t raddr;
	uint32_t rkey;
	/* The receiver's XRC SRQ (XRC). */
	uint32_t srqn;
};

/* The receiver's region that RC senders READ: fixed words. */
#define RD_LEN (64 * 1024)
#define RD_SEQ 0xfeedull
#define READ_FLAG (1ull << 63)

static void on_signal(int sig)
{
	if (sig == SIGTERM)
		stop = 1;
	else
		action = sig - SIGRTMIN;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Word i of message seq (word 0 is seq itself). */
static uint64_t pattern(uint64_t seq, uint32_t i)
{
	return seq * 0x9e3779b97f4a7c15ull + i * 0x2545f4914f6cdd1dull;
}

/* Exits DISRUPTED with a message: the device or the peer went. */
#define GONE(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(DISRUPTED); } while (0)

static int reliable(void)
{
	return type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND;
}

/* The XRC receiver's domain, XRC SRQ and target QP (the sender's QP is
 * an XRC initiator QP). */
static int open_xrc_receiver(struct side *s)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1,
	};
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = DEPTH, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = s->pd,
		.cq = s->cq,
	};
	struct ibv_qp_init_attr_ex qa = { .qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD };

	s->xrcd = ibv_open_xrcd(s->ctx, &xa);
	if (!s->xrcd)
		FAIL("open_xrcd: %s", strerror(errno));
	sa.xrcd = qa.xrcd = s->xrcd;
	s->srq = ibv_create_srq_ex(s->ctx, &sa);
	if (!s->srq)
		FAIL("create_srq_ex (XRC): %s", strerror(errno));
	s->qp = ibv_create_qp_ex(s->ctx, &qa);
	if (!s->qp)
		FAIL("create_qp_ex (XRC_RECV): %s", strerror(errno));
	return 0;
}

static int open_side(struct side *s, const char *dev, int receiver)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = type,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	/* An XRC initiator QP has no receive queue. */
	if (type == IBV_QPT_XRC_SEND)
		ia.cap.max_recv_wr = ia.cap.max_recv_sge = 0;
	s->ctx = rrxe_open(dev);
	if (!s->ctx)
		FAIL("cannot open %s", dev);
	s->gid_index = rrxe_ipv4_gid(s->ctx, &s->gid);
	if (s->gid_index < 0)
		FAIL("no IPv4 GID on %s", dev);
	s->len = (size_t)(size + 40) * DEPTH;
	s->buf = aligned_alloc(4096, (s->len + 4095) & ~4095ul);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 2 * DEPTH, NULL, NULL, 0);
	if (!s->buf || !s->pd || !s->cq)
		FAIL("setup on %s: %s", dev, strerror(errno));
	s->mr = ibv_reg_mr(s->pd, s->buf, s->len, IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr)
		FAIL("reg_mr: %s", strerror(errno));
	if (receiver && reliable()) {
		s->rd = aligned_alloc(4096, RD_LEN);
		if (!s->rd)
			FAIL("read region");
		for (uint32_t i = 0; i < RD_LEN / 8; i++) {
			uint64_t w = pattern(RD_SEQ, i);

			memcpy(s->rd + 8 * i, &w, 8);
		}
		s->rdmr = ibv_reg_mr(s->pd, s->rd, RD_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
		if (!s->rdmr)
			FAIL("reg_mr of the read region: %s", strerror(errno));
	}
	if (receiver && type == IBV_QPT_XRC_SEND)
		return open_xrc_receiver(s);
	if (receiver && use_srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = DEPTH, .max_sge = 1 } };

		s->srq = ibv_create_srq(s->pd, &sa);
		if (!s->srq)
			FAIL("create_srq: %s", strerror(errno));
	}
	ia.send_cq = ia.recv_cq = s->cq;
	ia.srq = s->srq;
	s->qp = ibv_create_qp(s->pd, &ia);
	if (!s->qp)
		FAIL("create_qp: %s", strerror(errno));
	return 0;
}

static int connect_qp(struct side *s, struct info *peer)
{
	/* The responder's attributes for an RC QP and an XRC target QP, the
	 * requester's for an RC QP and an XRC initiator QP. */
	int ud = type == IBV_QPT_UD, resp = s->qp->qp_type == IBV_QPT_RC ||
		 s->qp->qp_type == IBV_QPT_XRC_RECV, req = s->qp->qp_type == IBV_QPT_RC ||
		 s->qp->qp_type == IBV_QPT_XRC_SEND;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x1234,
				 .qp_access_flags = resp ? IBV_ACCESS_REMOTE_READ : 0 };

	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)))
		FAIL("INIT: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = s->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | (ud ? 0 : IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
						     IBV_QP_RQ_PSN) |
			  (resp ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0)))
		FAIL("RTR: %s", strerror(errno));
	/* An XRC target QP only receives. */
	if (s->qp->qp_type == IBV_QPT_XRC_RECV)
		return 0;
	a.qp_state = IBV_QPS_RTS;
	/* A peer that went is given up on in about half a second. */
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			  (req ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0)))
		FAIL("RTS: %s", strerror(errno));
	if (ud) {
		a.ah_attr.grh.dgid = peer->gid;
		s->ah = ibv_create_ah(s->pd, &a.ah_attr);
		if (!s->ah)
			FAIL("create_ah: %s", strerror(errno));
	}
	return 0;
}

static int post_recv(struct side *s, int slot)
{
	uint32_t len = size + (type == IBV_QPT_UD ? 40 : 0);
	struct ibv_sge sge = { (uintptr_t)s->buf + (size_t)slot * (size + 40), len, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return s->srq ? ibv_post_srq_recv(s->srq, &wr, &bad) : ibv_post_recv(s->qp, &wr, &bad);
}

static int post_send(struct side *s, struct info *peer, uint64_t seq)
{
	int slot = seq % DEPTH;
	uint8_t *p = s->buf + (size_t)slot * (size + 40);
	struct ibv_sge sge = { (uintptr_t)p, size, s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = seq, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (type == IBV_QPT_XRC_SEND)
		wr.qp_type.xrc.remote_srqn = peer->srqn;
	if (reliable() && seq % 4 == 3) {
		/* An RDMA READ of the receiver's read region, at a random
		 * word, into this slot. */
		uint32_t len = size & ~7u, k = (uint32_t)(seq * 2654435761u) % ((RD_LEN - len) / 8 + 1);

		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr_id = READ_FLAG | (uint64_t)k << 32 | seq;
		wr.wr.rdma.remote_addr = peer->raddr + 8ull * k;
		wr.wr.rdma.rkey = peer->rkey;
		sge.length = len;
		return ibv_post_send(s->qp, &wr, &bad);
	}
	memcpy(p, &seq, 8);
	for (uint32_t i = 1; i < size / 8; i++) {
		uint64_t w = pattern(seq, i);

		memcpy(p + 8 * i, &w, 8);
	}
	if (s->ah) {
		wr.wr.ud.ah = s->ah;
		wr.wr.ud.remote_qpn = peer->qpn;
		wr.wr.ud.remote_qkey = 0x1234;
	}
	return ibv_post_send(s->qp, &wr, &bad);
}

/* The disruption a signal asked for, from inside the process. */
static void act(struct side *s)
{
	int a = action;

	fprintf(stderr, "action %d in %d\n", a, getpid());
	if (a == 1) {
		/* The context closes with everything in it (the kernel
		 * cleans up when the last mapping goes, at exit). */
		ibv_close_device(s->ctx);
	} else {
		if (ibv_destroy_qp(s->qp))
			GONE("destroy_qp: %s", strerror(errno));
		/* An XRC SRQ holds its CQ: it goes first. */
		if (a == 3 && s->xrcd)
			a = 4;
		if (a == 4 && s->srq && ibv_destroy_srq(s->srq))
			GONE("destroy_srq: %s", strerror(errno));
		if (a >= 3) {
			if (s->ah && ibv_destroy_ah(s->ah))
				GONE("destroy_ah: %s", strerror(errno));
			if (ibv_destroy_cq(s->cq))
				GONE("destroy_cq: %s", strerror(errno));
		}
	}
	usleep(100000);
	exit(0);
}

static void check_data(struct side *s, struct ibv_wc *wc)
{
	uint8_t *p = s->buf + wc->wr_id * (size + 40) + (type == IBV_QPT_UD ? 40 : 0);
	uint32_t want = size + (type == IBV_QPT_UD ? 40 : 0);
	uint64_t seq;

	if (wc->byte_len != want) {
		fprintf(stderr, "CORRUPT: a receive of %u bytes, expected %u\n", wc->byte_len, want);
		exit(CORRUPT);
	}
	memcpy(&seq, p, 8);
	for (uint32_t i = 1; i < size / 8; i++) {
		uint64_t w;

		memcpy(&w, p + 8 * i, 8);
		if (w != pattern(seq, i)) {
			fprintf(stderr, "CORRUPT: message %llu word %u is %#llx, expected %#llx\n",
				(unsigned long long)seq, i, (unsigned long long)w,
				(unsigned long long)pattern(seq, i));
			exit(CORRUPT);
		}
	}
}

static pid_t receiver_pid;

/* Checks the bytes an RDMA READ brought (wr_id: flag, word, sequence). */
static void check_read(struct side *s, uint64_t id)
{
	uint32_t seq = (uint32_t)id, k = (uint32_t)(id >> 32) & 0x7fffffff;
	uint8_t *p = s->buf + (size_t)(seq % DEPTH) * (size + 40);

	for (uint32_t i = 0; i < size / 8; i++) {
		uint64_t w;

		memcpy(&w, p + 8 * i, 8);
		if (w != pattern(RD_SEQ, k + i)) {
			fprintf(stderr, "CORRUPT: READ %u word %u is %#llx, expected %#llx\n", seq, i,
				(unsigned long long)w, (unsigned long long)pattern(RD_SEQ, k + i));
			exit(CORRUPT);
		}
	}
}

/* Streams until stopped. The receiver writes a byte to `ready` (a pipe)
 * at its first completion; the sender, reading the other end, then
 * prints the pids line. */
static void run(struct side *s, struct info *peer, int receiver, int ready)
{
	uint64_t seq = 0, done = 0;
	double last = now();
	struct ibv_wc wc[16];

	if (receiver)
		for (int i = 0; i < DEPTH; i++)
			if (post_recv(s, i))
				GONE("post_recv: %s", strerror(errno));
	while (!stop) {
		int n;

		if (action)
			act(s);
		if (!receiver)
			while (seq - done < DEPTH / 4)
				if (post_send(s, peer, seq++))
					GONE("post_send: %s", strerror(errno));
		n = ibv_poll_cq(s->cq, 16, wc);
		if (n < 0)
			GONE("poll_cq failed");
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				GONE("%s completion status %d (%s)", receiver ? "receive" : "send", wc[i].status,
				     ibv_wc_status_str(wc[i].status));
			if (receiver) {
				check_data(s, &wc[i]);
				if (post_recv(s, wc[i].wr_id))
					GONE("post_recv: %s", strerror(errno));
			} else {
				if (wc[i].wr_id & READ_FLAG)
					check_read(s, wc[i].wr_id);
				done++;
			}
			if (receiver && ready >= 0) {
				char c = 'r';

				if (write(ready, &c, 1) != 1)
					GONE("ready pipe");
				close(ready);
				ready = -1;
			}
		}
		if (!receiver && ready >= 0) {
			char c;

			ssize_t r = read(ready, &c, 1);

			if (r == 1) {
				printf("pids %d %d\n", getpid(), receiver_pid);
				fflush(stdout);
			}
			if (r >= 0) {
				close(ready);
				ready = -1;
			}
		}
		if (n) {
			last = now();
		} else if (now() - last > STALL_S) {
			GONE("no completion for %d s", STALL_S);
		}
		/* Traffic, not a flood: the disruptions and checks of the
		 * test need the CPUs too. */
		if (!n || !receiver)
			usleep(2000);
	}
	exit(0);
}

static int stream(const char *dev_s, const char *dev_r)
{
	int to_child[2], to_parent[2], ready[2];
	struct side s = {0};
	struct info me = {0}, other;
	pid_t child;
	char c;

	if (pipe(to_child) || pipe(to_parent) || pipe(ready))
		FAIL("pipe");
	/* libibverbs loads its providers once, here, for both processes
	 * (slow in the guest); no device is opened before the fork. */
	ibv_free_device_list(ibv_get_device_list(NULL));
	child = fork();
	if (child < 0)
		FAIL("fork");
	if (child == 0) {
		close(ready[0]);
		if (open_side(&s, dev_r, 1))
			exit(1);
		me.qpn = s.qp->qp_num;
		me.gid = s.gid;
		if (s.xrcd && ibv_get_srq_num(s.srq, &me.srqn))
			FAIL("receiver: get_srq_num: %s", strerror(errno));
		if (s.rdmr) {
			me.raddr = (uintptr_t)s.rd;
			me.rkey = s.rdmr->rkey;
		}
		if (write(to_parent[1], &me, sizeof(me)) != sizeof(me) || rrxe_readall(to_child[0], &other, sizeof(other)))
			FAIL("receiver: pipe");
		if (connect_qp(&s, &other))
			exit(1);
		if (write(to_parent[1], "c", 1) != 1)
			FAIL("receiver: pipe");
		run(&s, &other, 1, ready[1]);
	}
	close(ready[1]);
	if (open_side(&s, dev_s, 0))
		goto fail;
	me.qpn = s.qp->qp_num;
	me.gid = s.gid;
	if (write(to_child[1], &me, sizeof(me)) != sizeof(me) || rrxe_readall(to_parent[0], &other, sizeof(other)) ||
	    rrxe_readall(to_parent[0], &c, 1)) {
		fprintf(stderr, "sender: the receiver did not connect\n");
		goto fail;
	}
	if (connect_qp(&s, &other))
		goto fail;
	/* The stream has started when the receiver took a message. */
	fcntl(ready[0], F_SETFL, O_NONBLOCK);
	receiver_pid = child;
	run(&s, &other, 0, ready[0]);
fail:
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 1;
}

/*
 * The critical trigger: a long message between two processes on one
 * device, through its own GID, and the peer killed while it moves.
 */
#define CHUNK (8u << 20)	/* each side's MR */
#define NSGE 32			/* a UC SEND of NSGE * CHUNK = 256 MiB */
#define NWR 32			/* RC WRITEs or READs of CHUNK (256 MiB) */
#define LONG_WAIT_S 60

enum lmode { L_UC, L_WRITE, L_READ };
static enum lmode lmode;

static uint8_t lpattern(uint64_t i)
{
	return (uint8_t)(i * 7 + (i >> 20) * 13 + 1);
}

static int long_side(struct side *s, const char *dev)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_qp_init_attr ia = {
		.qp_type = lmode == L_UC ? IBV_QPT_UC : IBV_QPT_RC,
		.cap = { .max_send_wr = NWR, .max_recv_wr = 4, .max_send_sge = NSGE, .max_recv_sge = NSGE },
	};

	s->ctx = rrxe_open(dev);
	if (!s->ctx)
		FAIL("cannot open %s", dev);
	s->gid_index = rrxe_ipv4_gid(s->ctx, &s->gid);
	if (s->gid_index < 0)
		FAIL("no IPv4 GID on %s", dev);
	s->len = CHUNK;
	s->buf = aligned_alloc(4096, CHUNK);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, NWR + 8, NULL, NULL, 0);
	if (!s->buf || !s->pd || !s->cq)
		FAIL("setup on %s: %s", dev, strerror(errno));
	for (uint64_t i = 0; i < CHUNK; i++)
		s->buf[i] = lpattern(i);
	s->mr = ibv_reg_mr(s->pd, s->buf, CHUNK, access);
	if (!s->mr)
		FAIL("reg_mr: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &ia);
	if (!s->qp)
		FAIL("create_qp: %s", strerror(errno));
	return 0;
}

static int long_connect(struct side *s, uint32_t peer, int mtu)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	int rc = lmode != L_UC;

	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		FAIL("INIT: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu == 256 ? IBV_MTU_256 : mtu == 1024 ? IBV_MTU_1024 : IBV_MTU_4096;
	a.dest_qp_num = peer;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = s->gid;	/* its own */
	a.ah_attr.grh.sgid_index = s->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  (rc ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0)))
		FAIL("RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 10;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			  (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0)))
		FAIL("RTS: %s", strerror(errno));
	return 0;
}

/*
 * rrxe_chaos_test long uc|rc_write|rc_read DEV MTU KILL_MS: the streamer
 * forks its peer, connects, prints "pids STREAMER PEER", posts the stream
 * (one UC SEND of 256 MiB, 32 SGEs over its 8 MiB MR, into a receive of
 * 32 SGEs over the peer's; or 32 RC WRITEs or READs of 8 MiB), and a
 * forked killer SIGKILLs the peer KILL_MS after the post began. The
 * streamer waits for the last completion (at most 60 s), prints
 * "done STATUS after MS ms, killed mid-stream: yes|no", checks the status
 * (UC succeeds without its peer; RC succeeds or gives up on it) and, for
 * a READ that succeeded, the bytes, then stays until SIGTERM. Exit
 * status as for stream.
 */
static int long_stream(const char *dev, int mtu, int kill_ms)
{
	int to_peer[2], from_peer[2], n = lmode == L_UC ? 1 : NWR, st;
	struct info me = {0}, other;
	struct side s = {0};
	struct ibv_sge sge[NSGE];
	struct ibv_send_wr wr[NWR], *bad;
	enum ibv_wc_status first = IBV_WC_SUCCESS;
	volatile double *shared;
	double t0, t1;
	pid_t peer, killer;
	char c;

	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED || pipe(to_peer) || pipe(from_peer))
		FAIL("mmap/pipe: %s", strerror(errno));
	ibv_free_device_list(ibv_get_device_list(NULL));
	peer = fork();
	if (peer < 0)
		FAIL("fork");
	if (peer == 0) {
		if (long_side(&s, dev))
			exit(1);
		me.qpn = s.qp->qp_num;
		me.raddr = (uintptr_t)s.buf;
		me.rkey = s.mr->rkey;
		if (write(from_peer[1], &me, sizeof(me)) != sizeof(me) || rrxe_readall(to_peer[0], &other, sizeof(other)))
			exit(1);
		if (long_connect(&s, other.qpn, mtu))
			exit(1);
		if (lmode == L_UC) {
			struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = sge, .num_sge = NSGE }, *rbad;

			for (int i = 0; i < NSGE; i++)
				sge[i] = (struct ibv_sge){ (uintptr_t)s.buf, CHUNK, s.mr->lkey };
			if (ibv_post_recv(s.qp, &rwr, &rbad))
				GONE("peer: post_recv: %s", strerror(errno));
		}
		if (write(from_peer[1], "r", 1) != 1)
			exit(1);
		/* Until killed (or the streamer goes). */
		while (read(to_peer[0], &c, 1) > 0)
			;
		exit(0);
	}
	close(to_peer[0]);
	close(from_peer[1]);
	if (long_side(&s, dev))
		goto fail;
	me.qpn = s.qp->qp_num;
	if (rrxe_readall(from_peer[0], &other, sizeof(other)) || write(to_peer[1], &me, sizeof(me)) != sizeof(me) ||
	    long_connect(&s, other.qpn, mtu) || rrxe_readall(from_peer[0], &c, 1)) {
		fprintf(stderr, "streamer: the peer did not connect\n");
		goto fail;
	}
	printf("pids %d %d\n", getpid(), peer);
	fflush(stdout);
	for (int i = 0; i < NSGE; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)s.buf, CHUNK, s.mr->lkey };
	memset(wr, 0, sizeof(wr));
	memset(s.buf, 0, lmode == L_READ ? CHUNK : 0);
	for (int i = 0; i < n; i++) {
		wr[i].wr_id = i;
		wr[i].sg_list = sge;
		wr[i].num_sge = lmode == L_UC ? NSGE : 1;
		wr[i].opcode = lmode == L_UC ? IBV_WR_SEND : lmode == L_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		wr[i].wr.rdma.remote_addr = other.raddr;
		wr[i].wr.rdma.rkey = other.rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	wr[n - 1].send_flags = IBV_SEND_SIGNALED;
	killer = fork();
	if (killer < 0)
		FAIL("fork");
	if (killer == 0) {
		/* shared[1]: the post began; shared[0]: when the SIGKILL went. */
		while (!shared[1])
			usleep(1000);
		usleep(kill_ms * 1000);
		kill(peer, SIGKILL);
		shared[0] = now();
		_exit(0);
	}
	shared[1] = t0 = now();
	if (ibv_post_send(s.qp, wr, &bad))
		GONE("post_send: %s", strerror(errno));
	for (;;) {
		struct ibv_wc wc;
		int k = ibv_poll_cq(s.cq, 1, &wc);

		if (k < 0)
			GONE("poll_cq failed");
		if (stop)
			exit(0);
		if (!k) {
			if (now() - t0 > LONG_WAIT_S) {
				fprintf(stderr, "CORRUPT: no last completion within %d s\n", LONG_WAIT_S);
				exit(CORRUPT);
			}
			usleep(1000);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS && first == IBV_WC_SUCCESS)
			first = wc.status;
		if (wc.wr_id == (uint64_t)n - 1)
			break;
	}
	t1 = now();
	/* The SIGKILL went before the last completion came (if the killer
	 * is caught between its kill and its note, this says no). */
	printf("done %s after %.0f ms, killed mid-stream: %s\n", ibv_wc_status_str(first), (t1 - t0) * 1e3,
	       shared[0] > 0 ? "yes" : "no");
	fflush(stdout);
	waitpid(killer, NULL, 0);
	/* What a device going away looks like: a flush. */
	if (first == IBV_WC_WR_FLUSH_ERR)
		GONE("flushed");
	if (first != IBV_WC_SUCCESS &&
	    (lmode == L_UC || (first != IBV_WC_RETRY_EXC_ERR && first != IBV_WC_REM_ACCESS_ERR &&
			       first != IBV_WC_REM_INV_REQ_ERR && first != IBV_WC_REM_OP_ERR))) {
		fprintf(stderr, "CORRUPT: completion status %d (%s)\n", first, ibv_wc_status_str(first));
		exit(CORRUPT);
	}
	if (lmode == L_READ && first == IBV_WC_SUCCESS)
		for (uint64_t i = 0; i < CHUNK; i++)
			if (s.buf[i] != lpattern(i)) {
				fprintf(stderr, "CORRUPT: READ byte %llu is %#x\n", (unsigned long long)i, s.buf[i]);
				exit(CORRUPT);
			}
	if (waitpid(peer, &st, 0) != peer || !WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) {
		fprintf(stderr, "CORRUPT: the peer was not killed (status %#x)\n", st);
		exit(CORRUPT);
	}
	while (!stop)
		pause();
	exit(0);
fail:
	kill(peer, SIGKILL);
	waitpid(peer, NULL, 0);
	return 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };

	setvbuf(stderr, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "verify")) {
		for (int i = 2; i < argc; i++)
			if (rrxe_verify_dev(argv[i]))
				FAIL("verify: %s failed", argv[i]);
		return 0;
	}
	sigaction(SIGTERM, &sa, NULL);
	if (argc == 6 && !strcmp(argv[1], "long")) {
		lmode = !strcmp(argv[2], "uc") ? L_UC : !strcmp(argv[2], "rc_write") ? L_WRITE : L_READ;
		return long_stream(argv[3], atoi(argv[4]), atoi(argv[5]));
	}
	if (argc < 6 || strcmp(argv[1], "stream")) {
		fprintf(stderr, "usage: %s stream rc|uc|ud|xrc DEV_S DEV_R SIZE [srq] | long uc|rc_write|rc_read DEV MTU KILL_MS |"
			" verify DEV...\n", argv[0]);
		return 2;
	}
	type = !strcmp(argv[2], "rc")	? IBV_QPT_RC :
	       !strcmp(argv[2], "uc")	? IBV_QPT_UC :
	       !strcmp(argv[2], "xrc")	? IBV_QPT_XRC_SEND : IBV_QPT_UD;
	size = atoi(argv[5]);
	use_srq = argc > 6 && !strcmp(argv[6], "srq");
	if (size < 8 || (type == IBV_QPT_UD && size > 1024))
		FAIL("bad size %u", size);
	for (int i = 1; i <= 4; i++)
		sigaction(SIGRTMIN + i, &sa, NULL);
	return stream(argv[3], argv[4]);
}
