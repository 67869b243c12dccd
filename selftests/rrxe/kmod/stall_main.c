// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_stall_test: memory whose page faults do not complete, as a file on
 * a FUSE or network file system whose server stopped answering. A process
 * maps /dev/rrxe_stall (MAP_SHARED, up to STALL_PAGES pages) and registers
 * the mapping as an on-demand MR; a fault on it then waits until
 * `release` is set to 1, as a file system's read waits for its server.
 * A fault that asks not to wait (FAULT_FLAG_RETRY_NOWAIT, as a file
 * system's does when the page is not ready) is answered with
 * VM_FAULT_RETRY at once. `waiting` counts the faults waiting now,
 * `nowait` those answered VM_FAULT_RETRY. Setting `release` to 0 stalls
 * faults again; unloading the module releases them.
 */
#include <linux/atomic.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/wait.h>

#define STALL_PAGES 64

static DECLARE_WAIT_QUEUE_HEAD(stall_wq);
static bool release;
static atomic_t waiting = ATOMIC_INIT(0);
static atomic_t nowait = ATOMIC_INIT(0);

static int release_set(const char *s, const struct kernel_param *kp)
{
	int r = param_set_bool(s, kp);

	if (!r)
		wake_up_all(&stall_wq);
	return r;
}

static const struct kernel_param_ops release_ops = {
	.set = release_set,
	.get = param_get_bool,
};
module_param_cb(release, &release_ops, &release, 0644);
MODULE_PARM_DESC(release, "1: faults complete; 0: they wait (default)");

static int atomic_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read((atomic_t *)kp->arg));
}

static const struct kernel_param_ops count_ops = { .get = atomic_get };
module_param_cb(waiting, &count_ops, &waiting, 0444);
MODULE_PARM_DESC(waiting, "faults waiting now");
module_param_cb(nowait, &count_ops, &nowait, 0444);
MODULE_PARM_DESC(nowait, "faults that asked not to wait, answered VM_FAULT_RETRY");

/* The pages of one mapping, allocated zeroed at mmap. */
struct stall_map {
	unsigned long n;
	struct page *pages[];
};

static vm_fault_t stall_fault(struct vm_fault *vmf)
{
	struct stall_map *m = vmf->vma->vm_private_data;
	int r;

	if (vmf->pgoff >= m->n)
		return VM_FAULT_SIGBUS;
	if (!READ_ONCE(release)) {
		if (vmf->flags & FAULT_FLAG_RETRY_NOWAIT) {
			atomic_inc(&nowait);
			return VM_FAULT_RETRY;
		}
		atomic_inc(&waiting);
		/* Killable, as a file system's wait for its server is. */
		r = wait_event_killable(stall_wq, READ_ONCE(release));
		atomic_dec(&waiting);
		if (r)
			return VM_FAULT_SIGBUS;
	}
	get_page(m->pages[vmf->pgoff]);
	vmf->page = m->pages[vmf->pgoff];
	return 0;
}

static void stall_free(struct stall_map *m)
{
	for (unsigned long i = 0; i < m->n; i++)
		put_page(m->pages[i]);
	kfree(m);
}

static void stall_close(struct vm_area_struct *vma)
{
	stall_free(vma->vm_private_data);
}

static const struct vm_operations_struct stall_vm_ops = {
	.fault = stall_fault,
	.close = stall_close,
};

static int stall_mmap(struct file *f, struct vm_area_struct *vma)
{
	unsigned long n = vma_pages(vma);
	struct stall_map *m;

	if (vma->vm_pgoff || !n || n > STALL_PAGES || !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	m = kzalloc(struct_size(m, pages, n), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	for (m->n = 0; m->n < n; m->n++) {
		m->pages[m->n] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!m->pages[m->n]) {
			stall_free(m);
			return -ENOMEM;
		}
	}
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_private_data = m;
	vma->vm_ops = &stall_vm_ops;
	return 0;
}

static const struct file_operations stall_fops = {
	.owner = THIS_MODULE,
	.mmap = stall_mmap,
};

static struct miscdevice stall_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "rrxe_stall",
	.fops = &stall_fops,
	.mode = 0600,
};

static int __init stall_init(void)
{
	return misc_register(&stall_dev);
}

static void __exit stall_exit(void)
{
	WRITE_ONCE(release, true);
	wake_up_all(&stall_wq);
	misc_deregister(&stall_dev);
}

module_init(stall_init);
module_exit(stall_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rrxe selftest: memory whose page faults wait until released");
