// SPDX-License-Identifier: GPL-2.0
/*
 * The wire fuzzer's injector. It runs in the peer network namespace of an
 * rrxe device and sends, over an AF_PACKET socket on its end of the veth
 * pair, RoCEv2 packets (UDP to port 4791) whose ICRC is valid and whose
 * transport headers are anything but: every BTH opcode, headers truncated
 * and oversized, edge values in XRCETH, RETH, AtomicETH, AETH and DETH,
 * wrong pad counts, QP1 MADs, multicast destinations, a few IP fragments.
 * The same socket sniffs the real traffic on the link, and part of the
 * packets go to the QPs it sees there, always at PSNs at least BLIND_GAP
 * away from any PSN it saw for that QP (a blind attacker's packets: they
 * must not break the connection), plus duplicates of READ requests long
 * answered, with their lengths changed. XRC requests to a live XRC target
 * QP mostly name the XRC SRQ its own traffic names, so that they get past
 * the SRQ check to the responder behind it.
 *
 *   rrxe_wire_fuzz fuzz IF DMAC SRC4 DST4 SRC6 DST6 COUNT SEED [RCVD_PKTS]
 *	sends COUNT datagrams to DST4/DST6 (the device's addresses, the MAC
 *	DMAC) from SRC4/SRC6 (the real peer's) and others; prints what it
 *	sent. With the device's rcvd_pkts counter file, it paces itself so
 *	that the device's receive queue never overflows, and prints how many
 *	well-formed packets the device did not count. Fails unless COUNT
 *	went out, every opcode was sent, and some went to live QPs, as
 *	fragments, MADs and multicast.
 *   rrxe_wire_fuzz nak|ack IF DMAC SRC4 DST4 SECONDS
 *	learns a requester's QP from the ACKs its peer (SRC4) sends it
 *	(DST4); then, on each request it sends the peer, sends it NAKs of
 *	every kind (invalid request, remote access, remote operation,
 *	invalid RD request, sequence, RNR) at PSNs 2^12 to 2^23 - 2^12
 *	ahead of that request's and 2^12 to 2^20 behind (nak), or positive
 *	ACKs ahead (ack), until the stream stops or SECONDS pass. Fails if
 *	it found no stream.
 *   rrxe_wire_fuzz mad IF DMAC SRC4 DST4 COUNT LEN [CLASS METHOD]
 *	sends COUNT datagrams of LEN bytes to QP1 from QP1: CM MADs, or
 *	with CLASS and METHOD, MADs of that class (version 1) and method,
 *	attribute ClassPortInfo.
 *   rrxe_wire_fuzz join IF GROUP4 GROUP6 SECONDS
 *	joins the multicast groups on IF (in the device's namespace), so
 *	that multicast packets reach the UDP socket, and sleeps.
 *   rrxe_wire_fuzz flood IF DMAC SRC4 DST4 SECONDS BAD LEN
 *	sends RC SEND ONLY datagrams of LEN payload bytes to a QP number
 *	no device has, as fast as it can for SECONDS, with a valid ICRC
 *	(BAD 0) or a wrong one (BAD 1): what any host that reaches port
 *	4791 can send. Prints how many went out.
 *   rrxe_wire_fuzz one IF DMAC SRC4 DST4 KIND QPN PSN QKEY COUNT LEN
 *	sends COUNT packets of one KIND with LEN payload bytes: ud (a
 *	well-formed UD SEND ONLY to QPN with QKEY), icrc (the same with a
 *	wrong ICRC), tver (transport version 1), pkey (a P_Key no device
 *	has), rc (an RC SEND ONLY to QPN at PSN), xrc (an XRC SEND ONLY to
 *	QPN at PSN, its XRCETH naming the XRC SRQ QKEY, byte j of its
 *	payload j * 13 + 7). For the drop counters and XRC's receives.
 *   rrxe_wire_fuzz spin SECONDS
 *	an ordinary busy process: counts loop rounds for SECONDS and
 *	prints the count (the starvation check pins one to each CPU).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ROCE_PORT 4791
#define MAX_FRAME 9014	/* a 9000-byte MTU */
#define BATCH 64
#define BLIND_GAP 0x10000	/* PSNs this far from any seen are blind */
#define NFLOWS 64
#define LIVE_MS 3000	/* a QP seen this recently is live */

/* Opcode layout flags (IB spec 9.2, as rrxe's hdr.rs reads them). */
enum {
	F_DETH = 1, F_FETH = 2, F_RETH = 4, F_ATMETH = 8, F_AETH = 16,
	F_ATMACK = 32, F_IMM = 64, F_IETH = 128, F_PAY = 256, F_KNOWN = 512,
	F_XRCETH = 1024,
};

static unsigned int layout[256];

static void init_layout(void)
{
	static const unsigned int common[12] = {
		F_PAY, F_PAY, F_PAY, F_PAY | F_IMM, F_PAY, F_PAY | F_IMM,
		F_PAY | F_RETH, F_PAY, F_PAY, F_PAY | F_IMM, F_PAY | F_RETH,
		F_PAY | F_RETH | F_IMM,
	};

	for (int op = 0; op < 256; op++) {
		unsigned int low = op & 0x1f, f = 0;

		switch (op >> 5) {
		case 0:	/* RC */
		case 5:	/* XRC: as RC but FLUSH and ATOMIC WRITE; requests add an XRCETH */
			if (low < 12)
				f = common[low];
			else if (low == 0x0c)
				f = F_RETH;
			else if (low == 0x0d || low == 0x0f || low == 0x10)
				f = F_AETH | F_PAY;
			else if (low == 0x0e)
				f = F_PAY;
			else if (low == 0x11)
				f = F_AETH;
			else if (low == 0x12)
				f = F_AETH | F_ATMACK;
			else if (low == 0x13 || low == 0x14)
				f = F_ATMETH;
			else if (low == 0x16 || low == 0x17)
				f = F_IETH | F_PAY;
			else if (low == 0x1c && op < 0x20)
				f = F_FETH | F_RETH;
			else if (low == 0x1d && op < 0x20)
				f = F_RETH | F_PAY;
			if (op >> 5 == 5 && f && (low < 0x0d || low > 0x12))
				f |= F_XRCETH;
			break;
		case 1:	/* UC */
			if (low < 12)
				f = common[low];
			break;
		case 3:	/* UD */
			if (low == 4)
				f = F_DETH | F_PAY;
			else if (low == 5)
				f = F_DETH | F_IMM | F_PAY;
			break;
		}
		layout[op] = f ? f | F_KNOWN : 0;
	}
}

/* CRC-32 (reflected 0xedb88320), sliced by eight. */
static uint32_t crc_tab[8][256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320 ^ (c >> 1) : c >> 1;
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^
					crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

static uint32_t crc_upd(uint32_t c, const uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint32_t a = c ^ (p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24);
		uint32_t b = p[4] | p[5] << 8 | p[6] << 16 | (uint32_t)p[7] << 24;

		c = crc_tab[7][a & 0xff] ^ crc_tab[6][(a >> 8) & 0xff] ^
		    crc_tab[5][(a >> 16) & 0xff] ^ crc_tab[4][a >> 24] ^
		    crc_tab[3][b & 0xff] ^ crc_tab[2][(b >> 8) & 0xff] ^
		    crc_tab[1][(b >> 16) & 0xff] ^ crc_tab[0][b >> 24];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

/*
 * The RoCEv2 ICRC of the IP packet ip[0..len) (IP header to the end of the
 * payload): 8 bytes of ones for the LRH, then the packet with the IP TOS,
 * TTL and checksum (IPv6: traffic class, flow label, hop limit), the UDP
 * checksum and the BTH's FECN/BECN byte replaced by ones.
 */
static uint32_t icrc(const uint8_t *ip, size_t len, int v6)
{
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	size_t il = v6 ? 40 : 20, n = il + 8 + 5;
	uint8_t h[40 + 8 + 5];
	uint32_t c;

	if (n > len)
		n = len;
	memcpy(h, ip, n);
	if (v6) {
		h[0] |= 0x0f;
		h[1] = h[2] = h[3] = 0xff;
		h[7] = 0xff;
	} else {
		h[1] = 0xff;
		h[8] = 0xff;
		h[10] = h[11] = 0xff;
	}
	if (n > il + 7)
		h[il + 6] = h[il + 7] = 0xff;
	if (n > il + 12)
		h[il + 12] = 0xff;
	c = crc_upd(0xffffffff, ones, 8);
	c = crc_upd(c, h, n);
	c = crc_upd(c, ip + n, len - n);
	return ~c;
}

static uint64_t rs = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs * 0x2545f4914f6cdd1dull;
}

/* True with probability p percent. */
static int pct(unsigned int p) { return rnd() % 100 < p; }

static uint32_t pick32(const uint32_t *v, size_t n) { return v[rnd() % n]; }

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int32_t psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v); }
static void put64(uint8_t *p, uint64_t v) { put32(p, v >> 32); put32(p + 4, v); }
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

/* What the sniffer learned about a QP of the device. */
struct flow {
	int used, v6;
	uint32_t qpn;
	unsigned int svc;	/* opcode >> 5 */
	uint64_t seen;
	int has_req, has_resp, has_ack, has_qkey, has_rkey, has_read, has_srqn;
	uint32_t req_psn, resp_psn, ack_psn, qkey;
	/* The XRC SRQ its XRC requests name (their XRCETH). */
	uint32_t srqn;
	uint64_t va;
	uint32_t rkey;
	/* The last READ request: duplicated once a later request shows it
	 * was answered. */
	uint32_t read_psn, read_rkey, read_len;
	uint64_t read_va, read_ms;
};

static struct flow flows[NFLOWS];

struct cfg {
	int fd;
	uint8_t dmac[6], smac[6];
	uint8_t src4[4], dst4[4];
	uint8_t src6[16], dst6[16], ll6[16];
	int has6;
};

static struct cfg cfg;

/* The multicast groups: 239.1.2.3 and ff0e::102. */
static const uint8_t group4[4] = { 239, 1, 2, 3 };
static const uint8_t group6[16] = { 0xff, 0x0e, [14] = 0x01, [15] = 0x02 };

/* Counters for the report. */
static uint64_t n_frames, n_dgrams, n_live, n_live_srq, n_dupread, n_mad, n_mcast;
static uint64_t n_frag, n_v6, n_trunc, n_over, n_learned, n_good, n_good_xrc, n_legit;
static uint64_t op_sent[256];
/* IPv4 datagrams since the last one sent as fragments. */
static uint64_t since_frag;
#define FRAG_EVERY 4096

static struct flow *flow_get(uint32_t qpn, int v6)
{
	struct flow *old = &flows[0];

	for (int i = 0; i < NFLOWS; i++) {
		struct flow *f = &flows[i];

		if (f->used && f->qpn == qpn && f->v6 == v6)
			return f;
		if (!f->used || f->seen < old->seen)
			old = f;
	}
	memset(old, 0, sizeof(*old));
	old->used = 1;
	old->qpn = qpn;
	old->v6 = v6;
	n_learned++;
	return old;
}

/* The PSN of the last RC request the device sent its peer, and how many. */
static uint32_t peer_req_psn;
static uint64_t peer_reqs;

static void peer_request(const uint8_t *u)
{
	if ((u[2] << 8 | u[3]) != ROCE_PORT || u[8] >= 0x20 ||
	    (u[8] >= 0x0d && u[8] <= 0x12))
		return;
	peer_req_psn = get32(u + 16) & 0xffffff;
	peer_reqs++;
}

/* Learns from a frame on the link: RoCEv2 packets to the device. */
static void learn(const uint8_t *f, size_t len)
{
	const uint8_t *ip = f + 14, *t;
	uint16_t type;
	int v6;
	size_t tl;

	if (len < 14 + 20 + 8 + 12)
		return;
	type = f[12] << 8 | f[13];
	if (type == ETH_P_IP) {
		if (ip[0] != 0x45 || ip[9] != 17 || (ip[6] & 0x3f) || ip[7])
			return;
		if (!memcmp(ip + 16, cfg.src4, 4)) {
			peer_request(ip + 20);
			return;
		}
		if (memcmp(ip + 16, cfg.dst4, 4))
			return;
		v6 = 0;
		t = ip + 20;
	} else if (type == ETH_P_IPV6) {
		if (len < 14 + 40 + 8 + 12 || ip[6] != 17 ||
		    (memcmp(ip + 24, cfg.dst6, 16) && memcmp(ip + 24, cfg.ll6, 16)))
			return;
		v6 = 1;
		t = ip + 40;
	} else {
		return;
	}
	if ((t[2] << 8 | t[3]) != ROCE_PORT)
		return;
	n_legit++;
	t += 8;
	tl = len - (t - f);
	unsigned int op = t[0], fl = layout[op];
	uint32_t qpn = get32(t + 4) & 0xffffff, psn = get32(t + 8) & 0xffffff;
	struct flow *w;
	size_t o = 12;

	if (!fl || qpn <= 1 || qpn == 0xffffff)
		return;
	w = flow_get(qpn, v6);
	w->svc = op >> 5;
	w->seen = now_ms();
	if (fl & F_XRCETH) {
		if (tl >= o + 4) {
			w->srqn = get32(t + o) & 0xffffff;
			w->has_srqn = 1;
		}
		o += 4;
	}
	if (fl & F_DETH) {
		if (tl >= o + 8) {
			w->qkey = get32(t + o);
			w->has_qkey = 1;
		}
		o += 8;
	}
	if (fl & F_FETH)
		o += 4;
	if (fl & F_RETH && tl >= o + 16) {
		uint64_t va = (uint64_t)get32(t + o) << 32 | get32(t + o + 4);

		w->va = va;
		w->rkey = get32(t + o + 8);
		w->has_rkey = 1;
		if (op == 0x0c) {
			w->read_psn = psn;
			w->read_va = va;
			w->read_rkey = w->rkey;
			w->read_len = get32(t + o + 12);
			w->read_ms = w->seen;
			w->has_read = 1;
		}
	}
	if (op >= 0x0d && op <= 0x12) {
		w->resp_psn = psn;
		w->has_resp = 1;
		if (op == 0x11 && !(t[12] & 0x60)) {
			w->ack_psn = psn;
			w->has_ack = 1;
		}
	} else {
		w->req_psn = psn;
		w->has_req = 1;
	}
}

/* Drains what the socket received since the last call. */
static void sniff(void)
{
	static uint8_t buf[BATCH][2048];
	struct mmsghdr m[BATCH];
	struct iovec v[BATCH];
	int n;

	do {
		for (int i = 0; i < BATCH; i++) {
			v[i].iov_base = buf[i];
			v[i].iov_len = sizeof(buf[i]);
			memset(&m[i], 0, sizeof(m[i]));
			m[i].msg_hdr.msg_iov = &v[i];
			m[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(cfg.fd, m, BATCH, MSG_DONTWAIT, NULL);
		for (int i = 0; i < n; i++)
			learn(buf[i], m[i].msg_len);
	} while (n == BATCH);
}

/* A live QP, at random (or NULL). */
static struct flow *live_flow(void)
{
	uint64_t t = now_ms();
	struct flow *c[NFLOWS];
	int n = 0;

	for (int i = 0; i < NFLOWS; i++)
		if (flows[i].used && t - flows[i].seen < LIVE_MS)
			c[n++] = &flows[i];
	return n ? c[rnd() % n] : NULL;
}

static struct flow *flow_of(uint32_t qpn, int v6)
{
	uint64_t t = now_ms();

	for (int i = 0; i < NFLOWS; i++)
		if (flows[i].used && flows[i].qpn == qpn && flows[i].v6 == v6 &&
		    t - flows[i].seen < 2 * LIVE_MS)
			return &flows[i];
	return NULL;
}

/* Whether psn is at least BLIND_GAP from every PSN seen for QP w. */
static int blind_ok(const struct flow *w, uint32_t psn)
{
	if (w->has_req && abs(psn_diff(psn, w->req_psn)) < BLIND_GAP)
		return 0;
	if (w->has_resp && abs(psn_diff(psn, w->resp_psn)) < BLIND_GAP)
		return 0;
	return 1;
}

/* A PSN a blind attacker might guess for QP w: anywhere, or just
 * outside BLIND_GAP of what was seen, either side. */
static uint32_t blind_psn(const struct flow *w)
{
	for (int i = 0; i < 16; i++) {
		uint32_t base = w->has_req ? w->req_psn : w->resp_psn, psn;

		if (pct(50) && (w->has_req || w->has_resp)) {
			if (w->has_resp && pct(50))
				base = w->resp_psn;
			psn = base + (pct(50) ? BLIND_GAP + rnd() % 4096 : -(BLIND_GAP + rnd() % 4096));
		} else {
			psn = rnd();
		}
		psn &= 0xffffff;
		if (blind_ok(w, psn))
			return psn;
	}
	return ((w->has_req ? w->req_psn : w->resp_psn) + 0x800000) & 0xffffff;
}

/* Edge values. */
static const uint32_t len_edges[] = {
	0, 1, 2, 3, 4, 7, 8, 255, 256, 1023, 1024, 1025, 4095, 4096, 4097,
	0x10000, 0x7fffffff, 0x80000000u, 0x80000001u, 0xfffffffeu, 0xffffffffu,
};
static const uint64_t va_edges[] = {
	0, 1, 8, 0xfff, 0x1000, 0x7fffffffffffffffull, 0x8000000000000000ull,
	0xffffffffffff0000ull, 0xfffffffffffff000ull, 0xfffffffffffffff8ull,
	0xfffffffffffffffcull, 0xffffffffffffffffull, 0xffffffff00000000ull,
	0x00000000ffffffffull,
};
static const uint32_t key_edges[] = { 0, 1, 0xff, 0x100, 0xffffffffu, 0x80000000u, 0x7fffffffu };
static const uint32_t qkey_edges[] = { 0, 0x11111111, 0x80010000u, 0x80000000u, 0xffffffffu, 1 };

static uint64_t fz_va(const struct flow *w, uint32_t len)
{
	if (w && w->has_rkey && pct(30))
		return pct(50) ? w->va : w->va + (rnd() % 8192) - 4096;
	switch (rnd() % 4) {
	case 0: return va_edges[rnd() % (sizeof(va_edges) / 8)];
	case 1: return -(uint64_t)len - rnd() % 16;	/* ends near 2^64 */
	default: return rnd();
	}
}

static uint32_t fz_key(const struct flow *w)
{
	if (w && w->has_rkey && pct(40))
		return pct(50) ? w->rkey : w->rkey ^ (1u << (rnd() % 32));
	return pct(40) ? pick32(key_edges, sizeof(key_edges) / 4) : (uint32_t)rnd();
}

static uint32_t fz_len(uint32_t pay)
{
	if (pct(30))
		return pay;
	return pct(70) ? pick32(len_edges, sizeof(len_edges) / 4) : (uint32_t)rnd();
}

/* A payload length: mostly small, some MTU-sized, some beyond any MTU. */
static size_t fz_paylen(size_t room)
{
	static const size_t mtus[] = { 256, 512, 1024, 2048, 4096 };
	size_t n;

	switch (rnd() % 20) {
	case 0: case 1: case 2: case 3: n = 0; break;
	case 4: case 5: case 6: case 7: case 8: case 9: n = rnd() % 17; break;
	case 10: case 11: case 12: case 13: case 14: n = rnd() % 257; break;
	case 15: case 16: case 17: n = mtus[rnd() % 5] + rnd() % 3 - 1; break;
	default: n = rnd() % room; n_over++; break;
	}
	return n < room ? n : room;
}

/* The send batch. */
static uint8_t frames[BATCH][MAX_FRAME];
static size_t flen[BATCH];
static int nb;
static uint16_t ip_id = 1;

static uint16_t csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s;
}

static uint32_t csum_add(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += p[i] << 8 | p[i + 1];
	if (n & 1)
		s += p[n - 1] << 8;
	return s;
}

/* Where the transport headers of frame b start. */
static uint8_t *tptr(int b, int v6) { return frames[b] + 14 + (v6 ? 40 : 20) + 8; }

struct dst {
	int v6, mcast, ll;
	int frag;	/* send as IP fragments */
	int short_udp;	/* UDP length shorter than IP's */
	int exact;	/* always from the real peer's address */
};

/*
 * Finishes frame b (whose transport part, tl bytes, is in place): the
 * Ethernet, IP and UDP headers, and the ICRC after the transport part.
 */
static void finish(int b, size_t tl, const struct dst *d)
{
	uint8_t *f = frames[b], *ip = f + 14;
	size_t il = d->v6 ? 40 : 20, ulen = 8 + tl + 4;
	uint8_t *u = ip + il;
	uint32_t c;

	if (d->mcast) {
		if (d->v6) {
			f[0] = f[1] = 0x33;
			memcpy(f + 2, group6 + 12, 4);
		} else {
			f[0] = 0x01;
			f[1] = 0x00;
			f[2] = 0x5e;
			memcpy(f + 3, group4 + 1, 3);
			f[3] &= 0x7f;
		}
	} else {
		memcpy(f, cfg.dmac, 6);
	}
	memcpy(f + 6, cfg.smac, 6);
	put16(f + 12, d->v6 ? ETH_P_IPV6 : ETH_P_IP);
	if (d->v6) {
		put32(ip, 6u << 28 | (uint32_t)(rnd() & 0xfffffff));
		put16(ip + 4, ulen);
		ip[6] = 17;
		ip[7] = 64;
		memcpy(ip + 8, cfg.src6, 16);
		if (!d->exact && pct(10)) {
			put64(ip + 16, rnd());
			ip[23] |= 1;
		}
		memcpy(ip + 24, d->mcast ? group6 : d->ll ? cfg.ll6 : cfg.dst6, 16);
	} else {
		ip[0] = 0x45;
		ip[1] = rnd();
		put16(ip + 2, 20 + ulen);
		if (!++ip_id)
			ip_id = 1;
		put16(ip + 4, ip_id);
		put16(ip + 6, d->frag || pct(50) ? 0 : 0x4000);
		ip[8] = 64;
		ip[9] = 17;
		ip[10] = ip[11] = 0;
		if (d->exact || pct(90)) {
			memcpy(ip + 12, cfg.src4, 4);
		} else {
			uint32_t r = rnd();

			memcpy(ip + 12, &r, 4);
			ip[12] = 10;
		}
		memcpy(ip + 16, d->mcast ? group4 : cfg.dst4, 4);
	}
	put16(u, 0xc000 | (rnd() & 0x3fff));
	put16(u + 2, ROCE_PORT);
	put16(u + 4, d->short_udp ? 8 + rnd() % (tl + 4) : ulen);
	put16(u + 6, 0);
	c = icrc(ip, il + 8 + tl, d->v6);
	memcpy(u + 8 + tl, &c, 4);	/* little-endian on x86 */
	if (d->v6) {
		uint32_t s = csum_add(0, ip + 8, 32) + ulen + 17;

		s = csum_add(s, u, ulen);
		c = csum_fold(s);
		put16(u + 6, c ? c : 0xffff);
	} else {
		put16(ip + 10, csum_fold(csum_add(0, ip, 20)));
	}
	flen[b] = 14 + il + ulen;
}

static int send_batch(void);

/*
 * Sends frame b (an IPv4 datagram) as two or three fragments instead,
 * taking more slots of the batch. The ICRC stays that of the whole
 * datagram, as the receiver reassembles it.
 */
static void fragment(int b)
{
	static uint8_t whole[MAX_FRAME];
	size_t len = flen[b], pl = len - 34, off = 0;
	int parts = 2 + rnd() % 2;

	memcpy(whole, frames[b], len);
	nb = b;
	for (int i = 0; i < parts && off < pl; i++) {
		size_t n = i == parts - 1 ? pl - off : ((pl / parts) & ~7u);
		uint8_t *f, *ip;

		if (!n)
			n = pl - off;
		if (nb == BATCH)
			send_batch();
		f = frames[nb];
		ip = f + 14;
		memcpy(f, whole, 34);
		memcpy(f + 34, whole + 34 + off, n);
		put16(ip + 2, 20 + n);
		put16(ip + 6, (off + n < pl ? 0x2000 : 0) | off / 8);
		ip[10] = ip[11] = 0;
		put16(ip + 10, csum_fold(csum_add(0, ip, 20)));
		flen[nb++] = 34 + n;
		off += n;
	}
	n_frag++;
}

static uint64_t fails;

/*
 * Pacing. rrxe queues what arrives on its UDP sockets for one worker, in
 * order, and drops beyond 8192 packets: a flood faster than the worker
 * would only measure those drops (of the real traffic too), and a deep
 * queue holds the real traffic up behind it. So, given the device's
 * rcvd_pkts, the injector keeps few of its well-formed packets (and the
 * real ones it saw) uncounted by the device: what the worker counts in
 * PACE_MS, measured as it goes, about twice as many packets of all kinds
 * in the queue. What stays uncounted while the count stands still for a
 * second is written off as lost (a short stall is only the worker waiting
 * for a CPU).
 */
#define PACE_MS 20
#define PACE_MIN 4
#define PACE_MAX 1024
static int rcvd_fd = -1;
static uint64_t rcvd0, n_lost, n_waits;
static int64_t pace_limit = PACE_MIN;

static uint64_t read_rcvd(void)
{
	char b[32];
	ssize_t n = pread(rcvd_fd, b, sizeof(b) - 1, 0);

	if (n <= 0)
		return 0;
	b[n] = 0;
	return strtoull(b, NULL, 10);
}

static int64_t in_flight(void)
{
	return (int64_t)(n_good + n_legit - n_lost) - (int64_t)(read_rcvd() - rcvd0);
}

/* Sets pace_limit from the device's counting rate over the last second. */
static void pace_rate(void)
{
	static uint64_t t0, c0;
	uint64_t t = now_ms(), c;

	if (t - t0 < 1000)
		return;
	c = read_rcvd();
	if (t0) {
		int64_t l = (int64_t)((c - c0) * PACE_MS / (t - t0));

		pace_limit = l < PACE_MIN ? PACE_MIN : l > PACE_MAX ? PACE_MAX : l;
	}
	t0 = t;
	c0 = c;
}

static void sniff(void);

/* Waits until at most `limit` packets are in flight, or nothing moves. */
static void pace(int64_t limit)
{
	uint64_t since = now_ms();
	int64_t f, last = -1;

	while ((f = in_flight()) > limit) {
		if (f != last) {
			last = f;
			since = now_ms();
		} else if (now_ms() - since >= 1000) {
			n_lost += f;
			break;
		}
		n_waits++;
		usleep(100);
		sniff();
	}
}

static int send_batch(void)
{
	struct mmsghdr m[BATCH];
	struct iovec v[BATCH];
	int done = 0;

	if (rcvd_fd >= 0) {
		pace_rate();
		pace(pace_limit);
	}
	for (int i = 0; i < nb; i++) {
		v[i].iov_base = frames[i];
		v[i].iov_len = flen[i];
		memset(&m[i], 0, sizeof(m[i]));
		m[i].msg_hdr.msg_iov = &v[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	while (done < nb) {
		int r = sendmmsg(cfg.fd, m + done, nb - done, 0);

		if (r < 0) {
			if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
				perror("sendmmsg");
				exit(1);
			}
			/* Dropped on the way: skip it (not counted). */
			fails++;
			done++;
			continue;
		}
		n_frames += r;
		done += r;
	}
	nb = 0;
	return 0;
}


/*
 * Whether the transport part t[0..o) passes rrxe's first checks (net::rx:
 * a known opcode whose headers fit, the pad within the payload, TVer 0,
 * the default P_Key, QP 0 unused), which count it in rcvd_pkts.
 */
static int well_formed(const uint8_t *t, size_t o, const struct dst *d)
{
	unsigned int fl = layout[t[0]], pad = (t[1] >> 4) & 3;
	size_t hl = 12;

	if (d->short_udp || o < 12 || !fl || (t[1] & 0xf) ||
	    ((t[2] << 8 | t[3]) & 0x7fff) != 0x7fff || !(get32(t + 4) & 0xffffff))
		return 0;
	hl += (fl & F_XRCETH ? 4 : 0) + (fl & F_DETH ? 8 : 0) + (fl & F_FETH ? 4 : 0) + (fl & F_RETH ? 16 : 0) +
	      (fl & F_ATMETH ? 28 : 0) + (fl & F_AETH ? 4 : 0) + (fl & F_ATMACK ? 8 : 0) +
	      (fl & F_IMM ? 4 : 0) + (fl & F_IETH ? 4 : 0);
	if (o < pad + hl || (!(fl & F_PAY) && o - pad != hl))
		return 0;
	return 1;
}

/* Builds one fuzzed packet into the batch. */
static void gen(void)
{
	struct dst d = { 0 };
	struct flow *w = NULL;
	unsigned int op, fl;
	uint32_t qpn, psn;
	uint8_t *t;
	size_t o = 12, room, pay;
	int b;

	if (nb == BATCH)
		send_batch();
	b = nb++;
	d.v6 = cfg.has6 && pct(12);

	/* The opcode: every one, weighted to what the transports know. */
	switch (rnd() % 20) {
	case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7:
		op = rnd() % 32; break;		/* RC */
	case 8: case 9: case 10: op = 0x20 + rnd() % 32; break;	/* UC */
	case 11: case 12: op = pct(70) ? 0x64 + rnd() % 2 : 0x60 + rnd() % 32; break;
	case 13: op = 0x81; break;		/* CNP */
	case 14: op = pct(50) ? 0x40 + rnd() % 32 : 0xa0 + rnd() % 32; break;	/* RD, XRC */
	default: op = rnd() % 256; break;
	}

	/* The destination QP: a live one, one no one uses, or special. */
	switch (rnd() % 20) {
	case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7:
		w = live_flow();
		if (w) {
			qpn = w->qpn;
			d.v6 = w->v6;
			/* Mostly the opcodes of its transport. */
			if (pct(70))
				op = (w->svc << 5) | (op & 0x1f);
			break;
		}
		/* fallthrough */
	case 8: case 9: case 10: case 11: case 12:
		qpn = rnd() % 512; break;
	case 13: case 14: qpn = rnd() & 0xffffff; break;
	case 15: qpn = 1; break;
	case 16: qpn = 0xffffff; break;
	case 17: qpn = 0; break;
	default: qpn = (rnd() % 64) + 0x10; break;
	}
	if (!w)
		w = flow_of(qpn, d.v6);
	if (w)
		psn = blind_psn(w);
	if (!w)
		psn = pct(10) ? pick32((const uint32_t[]){ 0, 1, 0xffffff, 0x7fffff, 0x800000 }, 5)
			      : rnd() & 0xffffff;
	d.ll = d.v6 && pct(10);
	/*
	 * Rare, but at least one IPv4 datagram in FRAG_EVERY: at 1 in 8192
	 * alone, 30,000 datagrams (about 27,000 IPv4) carry 3.3 fragmented
	 * ones on average and none in about one run in 27, which fails.
	 */
	d.frag = !d.v6 && (++since_frag >= FRAG_EVERY || rnd() % 8192 == 0);
	if (d.frag)
		since_frag = 0;
	d.short_udp = !d.frag && pct(1);
	t = tptr(b, d.v6);
	room = d.frag ? 3000 : MAX_FRAME - (t - frames[b]) - 4;

	/* QP1 MADs and multicast. */
	if (!w && pct(3)) {
		op = 0x64;
		qpn = 1;
		n_mad++;
	} else if (!w && !d.frag && pct(2) && !d.ll) {
		d.mcast = 1;
		qpn = pct(80) ? 0xffffff : qpn;
		if (pct(70))
			op = 0x64 + rnd() % 2;
		n_mcast++;
	}
	/* A duplicate of a READ long answered, its length changed. */
	if (w && w->has_read && pct(15) && now_ms() - w->read_ms > 200 &&
	    psn_diff(w->req_psn, w->read_psn) > 0) {
		op = 0x0c;
		psn = w->read_psn;
		n_dupread++;
	}

	fl = layout[op];
	t[0] = op;
	t[1] = (rnd() & 0xc0) | (pct(97) ? 0 : rnd() & 0xf);	/* SE, M, TVer */
	put16(t + 2, pct(97) ? (pct(50) ? 0xffff : 0x7fff) : rnd());
	put32(t + 4, qpn);
	t[4] = rnd();	/* FECN, BECN, reserved: masked */
	put32(t + 8, psn);
	t[8] = rnd() & 0xff;	/* AckReq and reserved bits */

	if (!(fl & F_KNOWN)) {
		/* Unknown opcodes: random extension headers. */
		size_t n = rnd() % 48;

		for (size_t i = 0; i < n; i++)
			t[o++] = rnd();
		fl = F_PAY;
	}
	pay = fz_paylen(room - 80);
	if (op == 0x64 && qpn == 1 && pay < 256 && pct(90))
		pay = 256;	/* a MAD */
	if (fl & F_XRCETH) {
		/* The XRC SRQ number: a live target QP's own (or its
		 * neighbour), small ones, edges, or any, reserved bits set at
		 * times. */
		if (w && w->has_srqn && pct(70)) {
			put32(t + o, pct(90) ? w->srqn : (w->srqn + 1) & 0xffffff);
			n_live_srq++;
		} else {
			put32(t + o, pct(50) ? rnd() % 64 : pct(50) ? 0xffffff : rnd() & 0xffffff);
		}
		if (pct(10))
			t[o] = rnd();
		o += 4;
	}
	if (fl & F_DETH) {
		uint32_t qk = pct(30) ? pick32(qkey_edges, sizeof(qkey_edges) / 4) : (uint32_t)rnd();

		if (qpn == 1 && pct(80))
			qk = 0x80010000u;
		/* A live UD QP's Q_Key is the key to it: never send it. */
		if (w && w->has_qkey && qk == w->qkey)
			qk ^= 1;
		put32(t + o, qk);
		put32(t + o + 4, pct(20) ? 1 : rnd() & 0xffffff);
		o += 8;
	}
	if (fl & F_FETH) {
		put32(t + o, pct(50) ? rnd() & 0x33 : rnd());
		o += 4;
	}
	if (fl & F_RETH) {
		uint32_t len = fz_len(pay);
		uint64_t va = fz_va(w, len);
		uint32_t key = fz_key(w);

		if (op == 0x0c && w && w->has_read && psn == w->read_psn) {
			static const int32_t dl[] = { -1, 1, 4096, -4096 };

			va = w->read_va + (pct(80) ? 0 : rnd() % 64);
			key = w->read_rkey;
			len = pct(50) ? w->read_len + dl[rnd() % 4] : pick32(len_edges, sizeof(len_edges) / 4);
		}
		put64(t + o, va);
		put32(t + o + 8, key);
		put32(t + o + 12, len);
		o += 16;
	}
	if (fl & F_ATMETH) {
		uint64_t va = fz_va(w, 8);

		if (pct(50))
			va &= ~7ull;
		put64(t + o, va);
		put32(t + o + 8, fz_key(w));
		put64(t + o + 12, rnd());
		put64(t + o + 20, pct(20) ? 0 : rnd());
		o += 28;
	}
	if (fl & F_AETH) {
		t[o] = rnd();	/* ACK, RNR NAK, NAK or reserved */
		put16(t + o + 1, rnd() >> 8);
		t[o + 3] = rnd();
		o += 4;
	}
	if (fl & F_ATMACK) {
		put64(t + o, rnd());
		o += 8;
	}
	if (fl & F_IMM) {
		put32(t + o, rnd());
		o += 4;
	}
	if (fl & F_IETH) {
		put32(t + o, fz_key(w));
		o += 4;
	}
	if (!(fl & F_PAY) && !pct(3))
		pay = 0;	/* mostly as the opcode says */
	if (op == 0x64 && qpn == 1 && pay >= 24) {
		/* A MAD header: versions, class, method, status, TID, attr. */
		static const uint8_t cls[] = { 0x01, 0x03, 0x04, 0x07, 0x10, 0x81, 0xff };

		for (size_t i = 0; i < pay; i++)
			t[o + i] = rnd();
		t[o] = pct(90) ? 1 : rnd();
		t[o + 1] = cls[rnd() % sizeof(cls)];
		t[o + 2] = pct(80) ? (t[o + 1] == 0x07 ? 2 : 1) : rnd();
		if (pct(50))
			t[o + 3] = rnd() & 0x8f;
		if (pct(60))
			t[o + 4] = t[o + 5] = 0;
	} else {
		for (size_t i = 0; i < pay; i += 8) {
			uint64_t r = rnd();

			memcpy(t + o + i, &r, pay - i < 8 ? pay - i : 8);
		}
	}
	o += pay;
	/* The pad count: right (bytes of zero to a multiple of 4), or not. */
	if (pct(85)) {
		unsigned int pad = (4 - pay % 4) % 4;

		t[1] |= pad << 4;
		memset(t + o, 0, pad);
		o += pad;
	} else {
		t[1] |= (rnd() & 3) << 4;
	}
	/* Truncated anywhere, even inside the BTH. */
	if (pct(6)) {
		o = rnd() % o;
		n_trunc++;
	}
	if (well_formed(t, o, &d)) {
		n_good++;
		n_good_xrc += op >> 5 == 5;
	}
	if (w)
		n_live++;
	if (d.v6)
		n_v6++;
	op_sent[op]++;
	n_dgrams++;
	finish(b, o, &d);
	if (d.frag)
		fragment(b);
}

static int open_sock(const char *ifname)
{
	struct sockaddr_ll a = { 0 };
	int one = 1, fd;

	fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (fd < 0) {
		perror("socket");
		exit(1);
	}
	a.sll_family = AF_PACKET;
	a.sll_protocol = htons(ETH_P_ALL);
	a.sll_ifindex = if_nametoindex(ifname);
	if (!a.sll_ifindex || bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror(ifname);
		exit(1);
	}
	setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	return fd;
}

static void read_mac(const char *ifname, uint8_t *mac)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "/sys/class/net/%s/address", ifname);
	f = fopen(p, "r");
	if (!f || fscanf(f, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1],
			 &mac[2], &mac[3], &mac[4], &mac[5]) != 6) {
		fprintf(stderr, "cannot read %s\n", p);
		exit(1);
	}
	fclose(f);
}

static void parse_mac(const char *s, uint8_t *mac)
{
	if (sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2],
		   &mac[3], &mac[4], &mac[5]) != 6) {
		fprintf(stderr, "bad MAC %s\n", s);
		exit(2);
	}
}

static void parse_ip(int af, const char *s, void *out)
{
	if (inet_pton(af, s, out) != 1) {
		fprintf(stderr, "bad address %s\n", s);
		exit(2);
	}
}

/* The device's link-local IPv6 address (its default GID) from its MAC. */
static void link_local(const uint8_t *mac, uint8_t *a)
{
	memset(a, 0, 16);
	a[0] = 0xfe;
	a[1] = 0x80;
	a[8] = mac[0] ^ 2;
	a[9] = mac[1];
	a[10] = mac[2];
	a[11] = 0xff;
	a[12] = 0xfe;
	a[13] = mac[3];
	a[14] = mac[4];
	a[15] = mac[5];
}

static int fuzz(uint64_t count)
{
	uint64_t t0 = now_ms(), t, missing = 0;
	unsigned int k = 0;
	int64_t lost = 0;

	while (n_dgrams < count) {
		if (++k % 4 == 0)
			sniff();
		gen();
	}
	send_batch();
	t = now_ms() - t0;
	if (rcvd_fd >= 0) {
		pace(0);
		lost = n_lost + in_flight();
	}
	for (int i = 0; i < 256; i++)
		missing += !op_sent[i];
	printf("# injected %llu packets (%llu datagrams, %llu fragmented, %llu IPv6; "
	       "%llu to live QPs of %llu learned, %llu naming a live XRC SRQ, "
	       "%llu duplicate READs, %llu QP1 MADs, "
	       "%llu multicast, %llu truncated, %llu oversized; %llu dropped on send) "
	       "in %llu.%03llu s, %llu/s\n",
	       (unsigned long long)n_frames, (unsigned long long)n_dgrams,
	       (unsigned long long)n_frag, (unsigned long long)n_v6,
	       (unsigned long long)n_live, (unsigned long long)n_learned,
	       (unsigned long long)n_live_srq, (unsigned long long)n_dupread, (unsigned long long)n_mad,
	       (unsigned long long)n_mcast, (unsigned long long)n_trunc,
	       (unsigned long long)n_over, (unsigned long long)fails,
	       (unsigned long long)t / 1000, (unsigned long long)t % 1000,
	       (unsigned long long)(t ? n_frames * 1000 / t : 0));
	printf("# %llu of them well-formed up to their transport headers (%llu XRC), with %llu "
	       "real packets: the device counted all but %lld (%llu pacing waits)\n",
	       (unsigned long long)n_good, (unsigned long long)n_good_xrc,
	       (unsigned long long)n_legit, (long long)lost,
	       (unsigned long long)n_waits);
	if (n_frames < count) {
		printf("# only %llu of %llu packets went out\n",
		       (unsigned long long)n_frames, (unsigned long long)count);
		return 1;
	}
	if (missing) {
		printf("# %llu opcodes never sent\n", (unsigned long long)missing);
		return 1;
	}
	if (n_live < count / 100 || n_frag == 0 || n_mad == 0 || n_mcast == 0) {
		printf("# too few packets to live QPs, fragments, MADs or multicast\n");
		return 1;
	}
	return 0;
}

/*
 * Acknowledgements a blind attacker sends a live requester: the QP the
 * peer sends ACKs to, and on each request it sends the peer (a request
 * outstanding, most likely, as the peer has yet to answer it), the AETH
 * syndromes `syns` at that request's PSN plus one of `fwd` in turn, and one
 * of them at the PSN minus one of `back` (none if nback is 0), until the
 * stream stops (no ACK for a second) or `seconds` pass. No outstanding
 * request has those PSNs: the requester must ignore them.
 */
static int blind_acks(unsigned int seconds, const uint8_t *syns, size_t ns,
		      const int32_t *fwd, size_t nfwd, const int32_t *back,
		      size_t nback, const char *what)
{
	struct pollfd p = { .fd = cfg.fd, .events = POLLIN };
	struct dst d = { .exact = 1 };
	uint64_t t0 = now_ms(), sent = 0, last = 0, seen = 0;
	uint32_t qpn = 0, psn = 0;
	unsigned int k = 0;

	while (now_ms() - t0 < seconds * 1000ull) {
		struct flow *w = NULL;

		poll(&p, 1, 1);
		sniff();
		for (int i = 0; i < NFLOWS; i++)
			if (flows[i].used && flows[i].has_ack && !flows[i].v6 &&
			    (!w || flows[i].seen > w->seen))
				w = &flows[i];
		if (!w || now_ms() - w->seen > 1000) {
			/* No stream yet, or it has ended. */
			if (sent)
				break;
			continue;
		}
		if (peer_reqs == seen)
			continue;
		seen = peer_reqs;
		if (!sent || w->qpn != qpn)
			printf("# %s: QP 0x%06x, request PSN 0x%06x\n", what, w->qpn, peer_req_psn);
		qpn = w->qpn;
		psn = peer_req_psn;
		for (size_t s = 0; s <= ns; s++) {
			uint32_t at;
			uint8_t *t;
			int b;

			if (s < ns)
				at = psn + fwd[k % nfwd];
			else if (nback)
				at = psn - back[k % nback];
			else
				break;
			if (nb == BATCH)
				send_batch();
			b = nb++;
			t = tptr(b, 0);
			memset(t, 0, 16);
			t[0] = 0x11;	/* ACKNOWLEDGE */
			put16(t + 2, 0xffff);
			put32(t + 4, qpn);
			put32(t + 8, at & 0xffffff);
			t[12] = syns[s < ns ? s : k % ns];
			put16(t + 13, rnd());
			t[15] = rnd();
			finish(b, 16, &d);
			sent++;
		}
		k++;
		send_batch();
		last = now_ms();
	}
	printf("# %s: sent %llu to QP 0x%06x (last request PSN 0x%06x) in %llu ms\n",
	       what, (unsigned long long)sent, qpn, psn, (unsigned long long)(last - t0));
	return sent >= 100 ? 0 : 1;
}

static const int32_t ahead[] = { 0x1000, 0x10000, 0x100000, 0x7ff000 };

/*
 * NAKs of every kind: invalid request, remote access, remote operation,
 * invalid RD request, sequence, RNR (short timers, so that a requester
 * waiting out one still has requests in flight for the next).
 */
static int nak(unsigned int seconds)
{
	static const uint8_t syns[] = { 0x61, 0x62, 0x63, 0x64, 0x60, 0x21, 0x2f };
	static const int32_t behind[] = { 0x1000, 0x100000 };

	return blind_acks(seconds, syns, sizeof(syns), ahead, 4, behind, 2, "NAKs");
}

/* Positive ACKs ahead of anything sent. */
static int ack(unsigned int seconds)
{
	static const uint8_t syns[] = { 0x1f, 0x00 };

	return blind_acks(seconds, syns, sizeof(syns), ahead, 4, NULL, 0, "ACKs");
}

/*
 * `count` UD datagrams of `len` bytes to QP1, from QP1: CM MADs (class -1;
 * too long to be MADs with `len` over 256), or MADs of class `cls` and
 * method `method`.
 */
static int mad(unsigned int count, unsigned int len, int cls, int method)
{
	struct dst d = { .exact = 1 };

	if (len > 4096)
		return 2;
	for (unsigned int i = 0; i < count; i++) {
		uint8_t *t;
		int b;

		if (nb == BATCH)
			send_batch();
		b = nb++;
		t = tptr(b, 0);
		t[0] = 0x64;	/* UD SEND_ONLY */
		t[1] = ((4 - len % 4) % 4) << 4;
		put16(t + 2, 0xffff);
		put32(t + 4, 1);
		put32(t + 8, i);
		put32(t + 12, 0x80010000u);
		put32(t + 16, 1);
		for (unsigned int j = 0; j < len; j++)
			t[20 + j] = rnd();
		/* A CM MAD header: base version 1, class 7, version 2. */
		t[20] = 1;
		t[21] = 7;
		t[22] = 2;
		if (cls >= 0) {
			/* Class version 1, status 0, attribute 1. */
			t[21] = cls;
			t[22] = 1;
			t[23] = method;
			memset(t + 24, 0, 4);
			t[36] = 0;
			t[37] = 1;
		}
		memset(t + 20 + len, 0, (4 - len % 4) % 4);
		finish(b, 20 + len + (4 - len % 4) % 4, &d);
	}
	send_batch();
	printf("# mad: sent %llu datagrams of %u bytes to QP1\n", (unsigned long long)n_frames, len);
	return n_frames == count ? 0 : 1;
}

/* The QP number the flood sends to: no device has one this high. */
#define FLOOD_QPN 0xfedcbau

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int flood(unsigned int seconds, int bad, unsigned int len)
{
	struct dst d = { .exact = 1 };
	double end;

	if (len > 4096 || len % 4)
		return 2;
	for (int b = 0; b < BATCH; b++) {
		uint8_t *t = tptr(b, 0);

		t[0] = 0x04;	/* RC SEND_ONLY */
		t[1] = 0;
		put16(t + 2, 0xffff);
		put32(t + 4, FLOOD_QPN);
		put32(t + 8, b);
		for (unsigned int j = 0; j < len; j++)
			t[12 + j] = rnd();
		finish(b, 12 + len, &d);
		if (bad)
			frames[b][flen[b] - 1] ^= 0x5a;
	}
	end = now_s() + seconds;
	while (now_s() < end) {
		nb = BATCH;
		send_batch();
	}
	printf("# flood: sent %llu datagrams, ICRC %s, in %u s\n", (unsigned long long)n_frames,
	       bad ? "wrong" : "valid", seconds);
	return n_frames ? 0 : 1;
}

/*
 * `count` packets of one kind, each with `len` payload bytes: "ud" a
 * well-formed UD SEND_ONLY to QP `qpn` with Q_Key `qkey`; "icrc" the same
 * with a wrong ICRC, "tver" with transport version 1, "pkey" with P_Key
 * 0x1234; "rc" an RC SEND_ONLY to QP `qpn` at PSN `psn`; "xrc" an XRC
 * SEND_ONLY to QP `qpn` at PSN `psn` for XRC SRQ `qkey` (its XRCETH),
 * byte j of its payload j * 13 + 7. Other payloads are random.
 */
static int one(const char *kind, uint32_t qpn, uint32_t psn, uint32_t qkey,
	       unsigned int count, unsigned int len)
{
	struct dst d = { .exact = 1 };
	int rc = !strcmp(kind, "rc"), bad = !strcmp(kind, "icrc"), xrc = !strcmp(kind, "xrc");

	if (len > 4096 || len % 4 ||
	    (!rc && !bad && !xrc && strcmp(kind, "ud") && strcmp(kind, "tver") &&
	     strcmp(kind, "pkey")))
		return 2;
	for (unsigned int i = 0; i < count; i++) {
		size_t h = rc ? 12 : xrc ? 16 : 20;
		uint8_t *t;
		int b;

		if (nb == BATCH)
			send_batch();
		b = nb++;
		t = tptr(b, 0);
		t[0] = rc ? 0x04 : xrc ? 0xa4 : 0x64;	/* RC, XRC or UD SEND_ONLY */
		t[1] = !strcmp(kind, "tver") ? 1 : 0;
		put16(t + 2, !strcmp(kind, "pkey") ? 0x1234 : 0xffff);
		put32(t + 4, qpn);
		put32(t + 8, psn & 0xffffff);
		if (xrc) {
			put32(t + 12, qkey & 0xffffff);	/* the XRCETH: an XRC SRQ number */
		} else if (!rc) {
			put32(t + 12, qkey);
			put32(t + 16, 0x1);	/* the source QP */
		}
		/* An XRC SEND's payload is a pattern its receiver checks. */
		for (unsigned int j = 0; j < len; j++)
			t[h + j] = xrc ? (uint8_t)(j * 13 + 7) : rnd();
		finish(b, h + len, &d);
		if (bad)
			frames[b][flen[b] - 1] ^= 0x5a;
	}
	send_batch();
	printf("# one: sent %llu %s packets\n", (unsigned long long)n_frames, kind);
	return n_frames == count ? 0 : 1;
}

static int spin(unsigned int seconds)
{
	volatile uint64_t x = 0;
	uint64_t rounds = 0;
	double end = now_s() + seconds;

	do {
		for (int i = 0; i < 100000; i++)
			x++;
		rounds++;
	} while (now_s() < end);
	printf("%llu\n", (unsigned long long)rounds);
	return 0;
}

static int join(const char *ifname, const char *g4, const char *g6, unsigned int seconds)
{
	int s4 = socket(AF_INET, SOCK_DGRAM, 0), s6 = socket(AF_INET6, SOCK_DGRAM, 0);
	struct ip_mreqn m4 = { 0 };
	struct ipv6_mreq m6 = { 0 };

	m4.imr_ifindex = if_nametoindex(ifname);
	parse_ip(AF_INET, g4, &m4.imr_multiaddr);
	m6.ipv6mr_interface = m4.imr_ifindex;
	parse_ip(AF_INET6, g6, &m6.ipv6mr_multiaddr);
	if (setsockopt(s4, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m4, sizeof(m4)) ||
	    setsockopt(s6, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m6, sizeof(m6))) {
		perror("join");
		return 1;
	}
	sleep(seconds);
	return 0;
}

/* The AF_PACKET socket on argv[0] and the addresses that follow. */
static void setup(char **argv, int v6)
{
	cfg.fd = open_sock(argv[0]);
	read_mac(argv[0], cfg.smac);
	parse_mac(argv[1], cfg.dmac);
	parse_ip(AF_INET, argv[2], cfg.src4);
	parse_ip(AF_INET, argv[3], cfg.dst4);
	if (v6) {
		parse_ip(AF_INET6, argv[4], cfg.src6);
		parse_ip(AF_INET6, argv[5], cfg.dst6);
		link_local(cfg.dmac, cfg.ll6);
		cfg.has6 = 1;
	}
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	if (argc == 6 && !strcmp(m, "join"))
		return join(argv[2], argv[3], argv[4], atoi(argv[5]));
	if (argc == 3 && !strcmp(m, "spin"))
		return spin(atoi(argv[2]));
	init_layout();
	crc_init();
	if ((argc == 10 || argc == 11) && !strcmp(m, "fuzz")) {
		setup(argv + 2, 1);
		rs ^= strtoull(argv[9], NULL, 0) * 0x9e3779b97f4a7c15ull;
		if (!rs)
			rs = 1;
		if (argc == 11) {
			rcvd_fd = open(argv[10], O_RDONLY);
			if (rcvd_fd < 0) {
				perror(argv[10]);
				return 1;
			}
			rcvd0 = read_rcvd();
		}
		return fuzz(strtoull(argv[8], NULL, 0));
	}
	if (argc == 7 && (!strcmp(m, "nak") || !strcmp(m, "ack"))) {
		setup(argv + 2, 0);
		return *m == 'n' ? nak(atoi(argv[6])) : ack(atoi(argv[6]));
	}
	if ((argc == 8 || argc == 10) && !strcmp(m, "mad")) {
		setup(argv + 2, 0);
		return mad(atoi(argv[6]), atoi(argv[7]), argc == 10 ? (int)strtol(argv[8], NULL, 0) : -1,
			   argc == 10 ? (int)strtol(argv[9], NULL, 0) : 0);
	}
	if (argc == 12 && !strcmp(m, "one")) {
		setup(argv + 2, 0);
		return one(argv[6], strtoul(argv[7], NULL, 0), strtoul(argv[8], NULL, 0),
			   strtoul(argv[9], NULL, 0), atoi(argv[10]), atoi(argv[11]));
	}
	if (argc == 9 && !strcmp(m, "flood")) {
		setup(argv + 2, 0);
		return flood(atoi(argv[6]), atoi(argv[7]), atoi(argv[8]));
	}
	fprintf(stderr,
		"usage: %s fuzz IF DMAC SRC4 DST4 SRC6 DST6 COUNT SEED [RCVD_PKTS]\n"
		"       %s nak|ack IF DMAC SRC4 DST4 SECONDS\n"
		"       %s mad IF DMAC SRC4 DST4 COUNT LEN [CLASS METHOD]\n"
		"       %s join IF GROUP4 GROUP6 SECONDS\n"
		"       %s flood IF DMAC SRC4 DST4 SECONDS BAD LEN\n"
		"       %s one IF DMAC SRC4 DST4 KIND QPN PSN QKEY COUNT LEN\n"
		"       %s spin SECONDS\n", argv[0], argv[0], argv[0], argv[0], argv[0], argv[0],
		argv[0]);
	return 2;
}
