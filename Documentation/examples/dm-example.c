// SPDX-License-Identifier: GPL-2.0
/*
 * Device memory on an rrxe device through libibverbs: rdma-core 59 with the
 * project's rxe provider patch series (tools/rdma-core/), put first by
 * `. tools/rdma-user-env`. Build and run:
 *
 *   . tools/rdma-user-env
 *   cc -o dm-example Documentation/examples/dm-example.c \
 *      -I"$RRXE_RDMA_CORE/include" -L"$RRXE_RDMA_CORE/lib" -libverbs
 *   ./dm-example rrxe0
 *
 * It allocates 8 KiB of device memory, fills it with ibv_memcpy_to_dm(),
 * registers it as a zero-based MR and has an RC QP on the same device
 * WRITE into it and READ it back, checking every byte. The device needs an
 * IPv4 address (a RoCEv2 GID) on its netdev.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define DM_LEN 8192

static void __attribute__((noreturn)) die(const char *what)
{
	perror(what);
	exit(1);
}

/* The first RoCEv2 GID that holds an IPv4 address. */
static int ipv4_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	static const unsigned char v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_port_attr port;
	struct ibv_gid_entry e;
	int i;

	if (ibv_query_port(ctx, 1, &port))
		die("ibv_query_port");
	for (i = 0; i < port.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, v4mapped, sizeof(v4mapped))) {
			*gid = e.gid;
			return i;
		}
	}
	fprintf(stderr, "no IPv4 RoCEv2 GID on port 1\n");
	exit(1);
}

/* Takes @qp to RTS, connected to @dest_qpn at @gid. */
static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn, union ibv_gid *gid,
		       int gid_index)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

/* Posts one RDMA @opcode of DM_LEN bytes between @buf and the DM MR. */
static void rdma_op(struct ibv_qp *qp, struct ibv_cq *cq, enum ibv_wr_opcode opcode,
		    struct ibv_mr *mr, char *buf, uint32_t rkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = DM_LEN, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = opcode,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = 0, .rkey = rkey },  /* zero based */
	}, *bad;
	struct ibv_wc wc;
	int n;

	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send");
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		;
	if (n < 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "completion: %s\n", ibv_wc_status_str(wc.status));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct ibv_alloc_dm_attr dm_attr = { .length = DM_LEN };
	struct ibv_device_attr_ex attr;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp *qp[2];
	struct ibv_mr *mr, *dm_mr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_dm *dm;
	union ibv_gid gid;
	char *buf, *check;
	int i, gid_index;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DEVICE\n", argv[0]);
		return 2;
	}
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die(argv[1]);
	if (ibv_query_device_ex(ctx, NULL, &attr))
		die("ibv_query_device_ex");
	printf("%s: max_dm_size %llu\n", argv[1], (unsigned long long)attr.max_dm_size);
	gid_index = ipv4_gid(ctx, &gid);

	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	if (!pd || !cq)
		die("ibv_alloc_pd/ibv_create_cq");
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 2, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qp[i] = ibv_create_qp(pd, &qa);
		if (!qp[i])
			die("ibv_create_qp");
	}
	connect_qp(qp[0], qp[1]->qp_num, &gid, gid_index);
	connect_qp(qp[1], qp[0]->qp_num, &gid, gid_index);

	/* The device memory: filled by the CPU, then registered. */
	dm = ibv_alloc_dm(ctx, &dm_attr);
	if (!dm)
		die("ibv_alloc_dm");
	buf = malloc(2 * DM_LEN);
	check = malloc(DM_LEN);
	if (!buf || !check)
		die("malloc");
	memset(buf, 0x5a, DM_LEN);
	if (ibv_memcpy_to_dm(dm, 0, buf, DM_LEN))
		die("ibv_memcpy_to_dm");
	dm_mr = ibv_reg_dm_mr(pd, dm, 0, DM_LEN, IBV_ACCESS_ZERO_BASED |
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ);
	if (!dm_mr)
		die("ibv_reg_dm_mr");

	/* An RC peer writes a new pattern into it and reads it back. */
	for (i = 0; i < DM_LEN; i++)
		buf[i] = (char)(i * 7 + 3);
	memset(buf + DM_LEN, 0, DM_LEN);
	mr = ibv_reg_mr(pd, buf, 2 * DM_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	rdma_op(qp[0], cq, IBV_WR_RDMA_WRITE, mr, buf, dm_mr->rkey);
	if (ibv_memcpy_from_dm(check, dm, 0, DM_LEN))
		die("ibv_memcpy_from_dm");
	if (memcmp(check, buf, DM_LEN)) {
		fprintf(stderr, "the DM does not hold what the RDMA WRITE sent\n");
		return 1;
	}
	rdma_op(qp[0], cq, IBV_WR_RDMA_READ, mr, buf + DM_LEN, dm_mr->rkey);
	if (memcmp(buf + DM_LEN, buf, DM_LEN)) {
		fprintf(stderr, "the RDMA READ of the DM returned other bytes\n");
		return 1;
	}
	printf("%s: %d bytes of device memory: ibv_memcpy_to_dm, RDMA WRITE into a "
	       "zero-based DM MR, ibv_memcpy_from_dm and RDMA READ back, byte for byte\n",
	       argv[1], DM_LEN);

	ibv_dereg_mr(mr);
	ibv_dereg_mr(dm_mr);
	if (ibv_free_dm(dm))
		die("ibv_free_dm");
	for (i = 0; i < 2; i++)
		ibv_destroy_qp(qp[i]);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(buf);
	free(check);
	return 0;
}
