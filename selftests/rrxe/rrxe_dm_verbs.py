#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""rrxe_dm_verbs.py DEV GID_INDEX MODE: device memory through libibverbs.

Runs with the project's rdma-core 59 userspace (. tools/rdma-user-env):
its pyverbs, libibverbs and the rxe provider with the device memory verbs.
Each mode prints what went wrong and exits non-zero on failure.

  copy   8 KiB of DM: ibv_memcpy_to_dm/from_dm whole and in parts, byte
         for byte, and a 100-byte DM whose last word is reachable
  rc     an RC peer (another context's QP on the device) WRITEs, READs and
         does fetch-and-add and compare-and-swap on a zero-based DM MR over
         8 KiB of DM, and WRITEs through a DM MR at DM offset 4096; every
         byte of the DM and of the peer's buffer compared
  bad    unaligned copies EINVAL, copies past the allocated length EFAULT
         (also at offsets that would wrap), oversized and unknown-comp_mask
         allocations EINVAL, exhaustion ENOMEM, DM MRs without
         IBV_ACCESS_ZERO_BASED or past the end refused
  stale  after the DM MR is deregistered and the DM freed, the peer's WRITE
         and READ with the old rkey complete with a remote access error
  import a context imported from a duplicate of the command fd imports
         the DM by handle (ibv_import_dm): the same memory in both, copies
         bounded by the allocated length; a stale or foreign handle fails;
         the PD and an MR import too (ibv_import_pd, ibv_import_mr)
  exit   exits (without closing anything) with 8 KiB of DM mapped and a DM
         MR on it, after checking that the kernel lists the MR
"""

import errno
import os
import random
import struct
import subprocess
import sys
import time

from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import DM, AllocDmAttr, Context
from pyverbs.libibverbs_enums import (ibv_access_flags, ibv_mtu, ibv_qp_type,
                                      ibv_wc_status, ibv_wr_opcode)
from pyverbs.mr import DMMR, MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

KIB8 = 8192
A = ibv_access_flags
DM_ACCESS = (A.IBV_ACCESS_ZERO_BASED | A.IBV_ACCESS_LOCAL_WRITE |
             A.IBV_ACCESS_REMOTE_WRITE | A.IBV_ACCESS_REMOTE_READ |
             A.IBV_ACCESS_REMOTE_ATOMIC)


class Fail(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Fail(what)


def expect_errno(code, what, fn, *args):
    """fn(*args) must raise PyverbsRDMAError with error_code `code`."""
    try:
        fn(*args)
    except PyverbsRDMAError as ex:
        if ex.error_code != code:
            raise Fail(f'{what}: errno {ex.error_code} ({os.strerror(ex.error_code)}), '
                       f'expected {errno.errorcode[code]}') from ex
        return
    raise Fail(f'{what}: succeeded, expected {errno.errorcode[code]}')


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f'byte {i}: 0x{x:02x}, expected 0x{y:02x}'
    return f'length {len(a)}, expected {len(b)}'


def expect_bytes(got, want, what):
    if got != want:
        raise Fail(f'{what}: {first_diff(got, want)}')


class Side:
    """One end of an RC connection: its own context, PD, CQ and QP."""

    def __init__(self, dev, gid_index):
        self.ctx = Context(name=dev)
        self.gid_index = gid_index
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 16, None, None, 0)
        self.qp = None

    def new_qp(self):
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        init = QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap)
        self.qp = QP(self.pd, init)

    def connect(self, peer):
        attr = QPAttr(port_num=1)
        attr.path_mtu = ibv_mtu.IBV_MTU_1024
        attr.max_dest_rd_atomic = 4
        attr.max_rd_atomic = 4
        attr.min_rnr_timer = 12
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        attr.qp_access_flags = (A.IBV_ACCESS_REMOTE_WRITE | A.IBV_ACCESS_REMOTE_READ |
                                A.IBV_ACCESS_REMOTE_ATOMIC | A.IBV_ACCESS_LOCAL_WRITE)
        gr = GlobalRoute(dgid=peer.ctx.query_gid(1, peer.gid_index), sgid_index=self.gid_index)
        attr.ah_attr = AHAttr(port_num=1, is_global=1, gr=gr)
        attr.dest_qp_num = peer.qp.qp_num
        attr.rq_psn = 0
        attr.sq_psn = 0
        self.qp.to_rts(attr)

    def post(self, opcode, mr, length, rkey, raddr, local_off=0, compare_add=0, swap=0):
        """Posts one signaled WR and returns its completion's status."""
        sge = SGE(mr.buf + local_off, length, mr.lkey)
        wr = SendWR(wr_id=1, opcode=opcode, num_sge=1, sg=[sge])
        if opcode in (ibv_wr_opcode.IBV_WR_ATOMIC_FETCH_AND_ADD,
                      ibv_wr_opcode.IBV_WR_ATOMIC_CMP_AND_SWP):
            wr.set_wr_atomic(rkey, raddr, compare_add, swap)
        else:
            wr.set_wr_rdma(rkey, raddr)
        self.qp.post_send(wr)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            n, wcs = self.cq.poll()
            if n:
                return wcs[0].status
        raise Fail(f'no completion for opcode {opcode} in 30 s')


def pair(dev, gid_index):
    """The DM owner and its peer, connected."""
    owner, peer = Side(dev, gid_index), Side(dev, gid_index)
    owner.new_qp()
    peer.new_qp()
    owner.connect(peer)
    peer.connect(owner)
    return owner, peer


def connect_again(owner, peer):
    """New QPs for both sides (one in error cannot carry more work)."""
    owner.qp.close()
    peer.qp.close()
    owner.new_qp()
    peer.new_qp()
    owner.connect(peer)
    peer.connect(owner)


def ok(status, what):
    expect(status == ibv_wc_status.IBV_WC_SUCCESS, f'{what}: completion status {status}')


def mode_copy(dev, _gid):
    ctx = Context(name=dev)
    max_dm = ctx.query_device_ex().max_dm_size
    expect(max_dm >= KIB8, f'max_dm_size is {max_dm}')
    dm = DM(ctx, AllocDmAttr(length=KIB8))
    data = random.randbytes(KIB8)
    dm.copy_to_dm(0, data, KIB8)
    expect_bytes(dm.copy_from_dm(0, KIB8), data, '8 KiB read back')
    # Parts: words at the start, across the page boundary and at the end.
    model = bytearray(data)
    for off, n in ((0, 4), (4092, 8), (4096, 12), (KIB8 - 4, 4), (100, 1000)):
        part = random.randbytes(n)
        dm.copy_to_dm(off, part, n)
        model[off:off + n] = part
        expect_bytes(dm.copy_from_dm(off, n), part, f'{n} bytes at {off} read back')
    expect_bytes(dm.copy_from_dm(0, KIB8), bytes(model), 'the whole DM after partial copies')
    # A second DM is other memory.
    dm2 = DM(ctx, AllocDmAttr(length=KIB8))
    other = random.randbytes(KIB8)
    dm2.copy_to_dm(0, other, KIB8)
    expect_bytes(dm.copy_from_dm(0, KIB8), bytes(model), 'the first DM after writing a second')
    expect_bytes(dm2.copy_from_dm(0, KIB8), other, 'the second DM')
    # A 100-byte DM: its last word is in range.
    small = DM(ctx, AllocDmAttr(length=100))
    small.copy_to_dm(96, b'\x01\x02\x03\x04', 4)
    expect_bytes(small.copy_from_dm(96, 4), b'\x01\x02\x03\x04', 'the last word of a 100-byte DM')
    for d in (small, dm2, dm):
        d.close()
    ctx.close()
    print(f'# max_dm_size {max_dm}; 8 KiB copied to and from DM, byte for byte')


def mode_rc(dev, gid):
    owner, peer = pair(dev, gid)
    dm = DM(owner.ctx, AllocDmAttr(length=KIB8))
    dmmr = DMMR(owner.pd, KIB8, DM_ACCESS, dm, 0)
    expect(dmmr.rkey != 0 or dmmr.lkey != 0, 'DM MR has no keys')
    buf = MR(peer.pd, KIB8, A.IBV_ACCESS_LOCAL_WRITE)
    W = ibv_wr_opcode

    # WRITE 8 KiB into the DM.
    data = random.randbytes(KIB8)
    buf.write(data, KIB8)
    ok(peer.post(W.IBV_WR_RDMA_WRITE, buf, KIB8, dmmr.rkey, 0), 'RDMA WRITE of 8 KiB into DM')
    expect_bytes(dm.copy_from_dm(0, KIB8), data, 'DM after the peer\'s WRITE')

    # A WRITE at an offset changes only its bytes.
    model = bytearray(data)
    part = random.randbytes(300)
    buf.write(part, 300)
    ok(peer.post(W.IBV_WR_RDMA_WRITE, buf, 300, dmmr.rkey, 4000), 'RDMA WRITE at 4000')
    model[4000:4300] = part
    expect_bytes(dm.copy_from_dm(0, KIB8), bytes(model), 'DM after a WRITE at 4000')

    # READ 8 KiB back after the owner changed it.
    data = random.randbytes(KIB8)
    dm.copy_to_dm(0, data, KIB8)
    buf.write(bytes(KIB8), KIB8)
    ok(peer.post(W.IBV_WR_RDMA_READ, buf, KIB8, dmmr.rkey, 0), 'RDMA READ of 8 KiB from DM')
    expect_bytes(buf.read(KIB8, 0), data, 'the peer\'s buffer after READ')

    # Fetch-and-add and compare-and-swap on words of the DM.
    model = bytearray(data)
    for off in (0, 4088, 4096, KIB8 - 8):
        old = random.getrandbits(64)
        add = random.getrandbits(63)
        dm.copy_to_dm(off, struct.pack('<Q', old), 8)
        model[off:off + 8] = struct.pack('<Q', old)
        ok(peer.post(W.IBV_WR_ATOMIC_FETCH_AND_ADD, buf, 8, dmmr.rkey, off, compare_add=add),
           f'fetch-and-add at {off}')
        new = (old + add) % (1 << 64)
        expect_bytes(buf.read(8, 0), struct.pack('<Q', old), f'value fetched at {off}')
        expect_bytes(dm.copy_from_dm(off, 8), struct.pack('<Q', new), f'DM word at {off} after add')
        model[off:off + 8] = struct.pack('<Q', new)
    swap = random.getrandbits(64)
    cur = struct.unpack('<Q', bytes(model[16:24]))[0]
    ok(peer.post(W.IBV_WR_ATOMIC_CMP_AND_SWP, buf, 8, dmmr.rkey, 16, compare_add=cur, swap=swap),
       'compare-and-swap at 16')
    expect_bytes(buf.read(8, 0), struct.pack('<Q', cur), 'value fetched by compare-and-swap')
    model[16:24] = struct.pack('<Q', swap)
    expect_bytes(dm.copy_from_dm(0, KIB8), bytes(model), 'DM after the atomics')

    # A DM MR at DM offset 4096: its address 0 is DM byte 4096.
    half = DMMR(owner.pd, 4096, DM_ACCESS, dm, 4096)
    part = random.randbytes(4096)
    buf.write(part, 4096)
    ok(peer.post(W.IBV_WR_RDMA_WRITE, buf, 4096, half.rkey, 0), 'WRITE through the offset DM MR')
    model[4096:] = part
    expect_bytes(dm.copy_from_dm(0, KIB8), bytes(model), 'DM after a WRITE through the offset DM MR')
    # It ends where the DM does: one byte more is a remote access error.
    status = peer.post(W.IBV_WR_RDMA_WRITE, buf, 8, half.rkey, 4092)
    expect(status == ibv_wc_status.IBV_WC_REM_ACCESS_ERR,
           f'WRITE past the end of the offset DM MR: status {status}')
    expect_bytes(dm.copy_from_dm(0, KIB8), bytes(model), 'DM after the refused WRITE')

    half.close()
    dmmr.close()
    dm.close()
    print('# the peer WROTE, READ, added and swapped in DM through zero-based DM MRs, byte for byte')


def mode_bad(dev, _gid):
    ctx = Context(name=dev)
    max_dm = ctx.query_device_ex().max_dm_size
    pd = PD(ctx)
    dm = DM(ctx, AllocDmAttr(length=KIB8))
    small = DM(ctx, AllocDmAttr(length=100))
    four = b'abcd'
    # Unaligned offsets and lengths.
    expect_errno(errno.EINVAL, 'copy to offset 1', dm.copy_to_dm, 1, four, 4)
    expect_errno(errno.EINVAL, 'copy of 3 bytes', dm.copy_to_dm, 0, four, 3)
    expect_errno(errno.EINVAL, 'copy from offset 2', dm.copy_from_dm, 2, 4)
    expect_errno(errno.EINVAL, 'copy of 6 bytes from DM', dm.copy_from_dm, 0, 6)
    # Past the allocated length, which is not the page-rounded one.
    expect_errno(errno.EFAULT, 'copy to 8 KiB', dm.copy_to_dm, KIB8, four, 4)
    expect_errno(errno.EFAULT, 'copy from 8 KiB - 4, 8 bytes', dm.copy_from_dm, KIB8 - 4, 8)
    expect_errno(errno.EFAULT, 'copy to a 100-byte DM at 100', small.copy_to_dm, 100, four, 4)
    expect_errno(errno.EFAULT, 'copy from a 100-byte DM at 96, 8 bytes', small.copy_from_dm, 96, 8)
    expect_errno(errno.EFAULT, 'copy to offset 2^64 - 4, 8 bytes (wraps)',
                 dm.copy_to_dm, (1 << 64) - 4, four * 2, 8)
    expect_errno(errno.EFAULT, 'copy from offset 2^64 - 4096', dm.copy_from_dm, (1 << 64) - 4096, 8)
    # Allocations.
    expect_errno(errno.EINVAL, f'alloc of max_dm_size + 4 KiB ({max_dm + 4096})',
                 DM, ctx, AllocDmAttr(length=max_dm + 4096))
    expect_errno(errno.EINVAL, 'alloc with comp_mask 1', DM, ctx, AllocDmAttr(length=4096, comp_mask=1))
    expect_errno(errno.EINVAL, 'alloc of 0 bytes', DM, ctx, AllocDmAttr(length=0))
    # Registration.
    expect_errno(errno.EINVAL, 'DM MR without IBV_ACCESS_ZERO_BASED',
                 DMMR, pd, 4096, DM_ACCESS & ~A.IBV_ACCESS_ZERO_BASED, dm, 0)
    expect_errno(errno.EINVAL, 'DM MR of 8 KiB + 4', DMMR, pd, KIB8 + 4, DM_ACCESS, dm, 0)
    expect_errno(errno.EINVAL, 'DM MR of 8 bytes at 8 KiB - 4', DMMR, pd, 8, DM_ACCESS, dm, KIB8 - 4)
    expect_errno(errno.EINVAL, 'DM MR of 104 bytes on a 100-byte DM', DMMR, pd, 104, DM_ACCESS, small, 0)
    # The failed calls changed nothing: the DM still works.
    dm.copy_to_dm(KIB8 - 4, four, 4)
    expect_bytes(dm.copy_from_dm(KIB8 - 4, 4), four, 'the last word after the refused calls')
    small.close()
    dm.close()
    # Exhaustion: all of max_dm_size in 64 KiB pieces, then one page more.
    chunk = 65536
    held = [DM(ctx, AllocDmAttr(length=chunk)) for _ in range(max_dm // chunk)]
    expect_errno(errno.ENOMEM, 'alloc beyond max_dm_size in total', DM, ctx, AllocDmAttr(length=4096))
    held.pop().close()
    held.append(DM(ctx, AllocDmAttr(length=chunk)))
    for d in held:
        d.close()
    ctx.close()
    print(f'# EINVAL, EFAULT and ENOMEM where expected; {max_dm // chunk} x 64 KiB fill max_dm_size')


def mode_stale(dev, gid):
    owner, peer = pair(dev, gid)
    W = ibv_wr_opcode
    dm = DM(owner.ctx, AllocDmAttr(length=KIB8))
    dmmr = DMMR(owner.pd, KIB8, DM_ACCESS, dm, 0)
    rkey = dmmr.rkey
    buf = MR(peer.pd, KIB8, A.IBV_ACCESS_LOCAL_WRITE)
    buf.write(random.randbytes(KIB8), KIB8)
    ok(peer.post(W.IBV_WR_RDMA_WRITE, buf, KIB8, rkey, 0), 'WRITE before the free')
    dmmr.close()
    dm.close()
    # New memory in the owner's context; the old key must name none of it.
    dm2 = DM(owner.ctx, AllocDmAttr(length=KIB8))
    fill = b'\x5a' * KIB8
    dm2.copy_to_dm(0, fill, KIB8)
    status = peer.post(W.IBV_WR_RDMA_WRITE, buf, KIB8, rkey, 0)
    expect(status == ibv_wc_status.IBV_WC_REM_ACCESS_ERR,
           f'WRITE with the freed DM MR\'s rkey: status {status}')
    connect_again(owner, peer)
    status = peer.post(W.IBV_WR_RDMA_READ, buf, KIB8, rkey, 0)
    expect(status == ibv_wc_status.IBV_WC_REM_ACCESS_ERR,
           f'READ with the freed DM MR\'s rkey: status {status}')
    expect_bytes(dm2.copy_from_dm(0, KIB8), fill, 'the new DM after the refused WRITE')
    dm2.close()
    print('# WRITE and READ with a freed DM MR\'s rkey: remote access errors')


def mode_import(dev, _gid):
    ctx = Context(name=dev)
    pd = PD(ctx)
    size = 10000  # not whole pages: copies must stop at the allocated length
    dm = DM(ctx, AllocDmAttr(length=size))
    data = random.randbytes(size)
    dm.copy_to_dm(0, data, size)
    ictx = Context(cmd_fd=os.dup(ctx.cmd_fd))
    idm = DM(ictx, handle=dm.handle)
    expect_bytes(idm.copy_from_dm(0, size), data, 'the imported DM read whole')
    more = random.randbytes(1000)
    idm.copy_to_dm(4000, more, 1000)
    expect_bytes(dm.copy_from_dm(4000, 1000), more, 'a write through the import, read by the owner')
    expect_errno(errno.EFAULT, 'a copy past the imported length', idm.copy_from_dm, size - 4, 8)
    # A handle that names no DM: a PD's, and one never allocated.
    for what, h in (('a PD handle', pd.handle), ('an unused handle', dm.handle + 1000)):
        try:
            DM(ictx, handle=h).unimport()
        except PyverbsRDMAError as ex:
            print(f'# importing {what} as a DM: errno {ex.error_code}')
            continue
        raise Fail(f'importing {what} as a DM succeeded')
    # The PD and an MR import by handle too (ibv_import_pd/ibv_import_mr);
    # a handle that names no PD is refused at once.
    buf = MR(pd, 4096, A.IBV_ACCESS_LOCAL_WRITE | A.IBV_ACCESS_REMOTE_READ)
    ipd = PD(ictx, handle=pd.handle)
    imr = MR(ipd, handle=buf.handle)
    expect((imr.lkey, imr.rkey, imr.length) == (buf.lkey, buf.rkey, 4096),
           f'imported MR keys/length {imr.lkey:#x}/{imr.rkey:#x}/{imr.length}, '
           f'owner {buf.lkey:#x}/{buf.rkey:#x}/4096')
    imr.unimport()
    ipd.unimport()
    try:
        PD(ictx, handle=dm.handle).unimport()
    except PyverbsRDMAError as ex:
        print(f'# importing a DM handle as a PD: errno {ex.error_code}')
    else:
        raise Fail('importing a DM handle as a PD succeeded')
    buf.close()
    idm.unimport()
    expect_bytes(dm.copy_from_dm(4000, 1000), more, 'the owner after the import is gone')
    h = dm.handle
    dm.close()
    try:
        DM(ictx, handle=h).unimport()
    except PyverbsRDMAError as ex:
        print(f'# importing a freed DM: errno {ex.error_code}')
    else:
        raise Fail('importing a freed DM succeeded')
    ictx.close()
    pd.close()
    ctx.close()
    print(f'# {size} bytes of DM imported into a duplicated context, both ways byte for byte')


def mode_exit(dev, _gid):
    ctx = Context(name=dev)
    pd = PD(ctx)
    dm = DM(ctx, AllocDmAttr(length=KIB8))
    dm.copy_to_dm(0, b'\xa5' * KIB8, KIB8)
    mr = DMMR(pd, KIB8, DM_ACCESS, dm, 0)
    res = subprocess.run(['rdma', 'resource', 'show', 'mr', 'dev', dev],
                         capture_output=True, text=True, check=False).stdout
    expect('mrn' in res, f'rdma resource shows no MR while the DM MR exists: {res!r}')
    print(f'# exiting with a DM mapped and DM MR rkey 0x{mr.rkey:x} registered')
    sys.stdout.flush()
    os._exit(0)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    dev, gid, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    modes = {'copy': mode_copy, 'rc': mode_rc, 'bad': mode_bad, 'stale': mode_stale,
             'import': mode_import, 'exit': mode_exit}
    if mode not in modes:
        print(f'unknown mode {mode}', file=sys.stderr)
        return 2
    try:
        modes[mode](dev, gid)
    except Fail as ex:
        print(f'{mode}: {ex}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
