/* SPDX-License-Identifier: GPL-2.0 */
/* What the parts of rrxe_kverbs_test share. */
#ifndef RRXE_KVERBS_H
#define RRXE_KVERBS_H

#include <rdma/ib_verbs.h>

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		pr_err("rrxe_kverbs_test: FAIL " __VA_ARGS__);		\
		return -EINVAL;						\
	}								\
} while (0)

struct ib_qp *kverbs_rc_qp(struct ib_pd *pd, struct ib_cq *cq, u32 depth);
int kverbs_rc_connect(struct ib_qp *qp, struct ib_qp *peer, union ib_gid *gid);
int kverbs_rc_connect_psn(struct ib_qp *qp, struct ib_qp *peer, union ib_gid *gid, u32 sq_psn, u32 rq_psn);
int kverbs_ud_rts(struct ib_qp *qp, u32 psn);
int kverbs_check_reset(struct ib_device *dev, struct ib_pd *pd);
int kverbs_check_contexts(struct ib_device *dev, struct ib_pd *pd);
int kverbs_check_destroy_race(struct ib_device *dev, struct ib_pd *pd, int rounds);

#endif
