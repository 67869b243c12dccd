// SPDX-License-Identifier: GPL-2.0
/*
 * Hooks for the selftests, built only into the test build of rrxe
 * (RRXE_TEST_HOOKS=1, as tools/guest builds it by default). They hold or
 * slow the module at named places, so that a test can put the two sides
 * of a race in the order it wants, every time, instead of hoping for it.
 * The module users build has none of this code and none of these
 * parameters.
 *
 * test_hold_site=N holds whoever reaches site N (enum rrxe_test_site)
 * until test_hold_site changes or RRXE_TEST_HOLD_MAX_US pass; each hold
 * counts in test_hold_hits, which a test polls to know that the other
 * side of its race is in place. test_rx_inline_delay_us widens a window
 * of the in-place receive (see rrxe_rx_inline_drain).
 */
#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/sysfs.h>

#include "net_glue.h"

/* A hold busy-waits (its caller may hold spinlocks): at most this long. */
#define RRXE_TEST_HOLD_MAX_US 5000000
#define RRXE_TEST_INLINE_MAX_US 10000

static unsigned int rrxe_test_site;
static unsigned int rrxe_test_inline_us;
static atomic_t rrxe_test_hits = ATOMIC_INIT(0);

/* Sets *val from s, refusing values above max with a logged reason. */
static int rrxe_test_set(const char *s, unsigned int *val, unsigned int max, const char *name)
{
	unsigned int v;
	int err = kstrtouint(s, 0, &v);

	if (err)
		return err;
	if (v > max) {
		pr_err_ratelimited("rrxe: %s must be 0 to %u\n", name, max);
		return -EINVAL;
	}
	WRITE_ONCE(*val, v);
	return 0;
}

static int rrxe_test_site_set(const char *s, const struct kernel_param *kp)
{
	return rrxe_test_set(s, &rrxe_test_site, RRXE_TEST_SITES - 1, "test_hold_site");
}

static int rrxe_test_inline_set(const char *s, const struct kernel_param *kp)
{
	return rrxe_test_set(s, &rrxe_test_inline_us, RRXE_TEST_INLINE_MAX_US,
			     "test_rx_inline_delay_us");
}

static int rrxe_test_uint_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(*(unsigned int *)kp->arg));
}

static int rrxe_test_hits_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&rrxe_test_hits));
}

static const struct kernel_param_ops rrxe_test_site_ops = {
	.set = rrxe_test_site_set,
	.get = rrxe_test_uint_get,
};

static const struct kernel_param_ops rrxe_test_inline_ops = {
	.set = rrxe_test_inline_set,
	.get = rrxe_test_uint_get,
};

static const struct kernel_param_ops rrxe_test_hits_ops = {
	.get = rrxe_test_hits_get,
};

module_param_cb(test_hold_site, &rrxe_test_site_ops, &rrxe_test_site, 0644);
MODULE_PARM_DESC(test_hold_site, "test build: the site where the module holds (0: none)");
module_param_cb(test_hold_hits, &rrxe_test_hits_ops, &rrxe_test_hits, 0444);
MODULE_PARM_DESC(test_hold_hits, "test build: how many times a site held");
module_param_cb(test_rx_inline_delay_us, &rrxe_test_inline_ops, &rrxe_test_inline_us, 0644);
MODULE_PARM_DESC(test_rx_inline_delay_us,
		 "test build: widens a receive race window by this many microseconds, 0 to 10000 (default 0)");

void rrxe_test_hold(unsigned int site)
{
	unsigned int waited = 0;

	if (READ_ONCE(rrxe_test_site) != site)
		return;
	atomic_inc(&rrxe_test_hits);
	while (READ_ONCE(rrxe_test_site) == site && waited < RRXE_TEST_HOLD_MAX_US) {
		udelay(100);
		waited += 100;
	}
}

void rrxe_test_rx_inline_wait(void)
{
	unsigned int left = READ_ONCE(rrxe_test_inline_us);

	while (left) {
		unsigned int step = min(left, 100U);

		udelay(step);
		left -= step;
	}
}
