#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""rrxe_rtu_wire.py TAP_A TAP_B: a wire between two tap devices that loses
the first RTU of each RDMA CM connection set up from A's side.

Every Ethernet frame read from one tap is written to the other, except the
first CM RTU (a MAD to QP1, attribute 0x0014, over RoCEv2) that A's side
sends for each local communication ID: that one is dropped. The passive
side (B) then stays in REP_SENT until its REP times out and is sent again;
the active side answers the duplicate REP with the RTU again, which passes.
Meanwhile A's side is established and sends on its RC QP: those SENDs
reach B's QP, which is in RTS since it accepted, before B's CM has seen an
RTU. That is the order a connection takes on any transport when the RTU
is lost or slow (the reason for the COMM_EST event), made certain.

One line of standard output per event (flushed):
  drop rtu comm=ID           the first RTU of comm ID, dropped
  pass rtu comm=ID sends=N   a later RTU of comm ID, forwarded after N RC
                             SEND packets from A since ID's RTU was dropped
Frames for a tap that is down are lost. Runs until SIGTERM or SIGINT;
then prints "wire: F frames, D dropped".
The taps must exist (ip tuntap add ... mode tap), without packet info.
"""

import errno
import fcntl
import os
import select
import signal
import struct
import sys

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000

ROCE_PORT = 4791
# BTH opcodes: RC SEND first/middle/last/only (with immediate, invalidate).
RC_SENDS = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x16, 0x17}
UD_SEND_ONLY = 0x64
CM_CLASS = 0x07
RTU_ATTR = 0x0014


def open_tap(name):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def roce(frame):
    """The RoCEv2 payload (BTH onwards) of an IPv4 frame, or None."""
    if len(frame) < 14 + 20 + 8 + 12 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 0x0F) * 4
    if frame[14 + 9] != 17:
        return None
    udp = 14 + ihl
    if struct.unpack_from("!H", frame, udp + 2)[0] != ROCE_PORT:
        return None
    return memoryview(frame)[udp + 8:]


def rtu_comm_id(bth):
    """The local communication ID of a CM RTU to QP1, or None."""
    # BTH (12 bytes), DETH (8), then the MAD: class at 1, attribute at 16,
    # the RTU's local comm ID at 24.
    if len(bth) < 12 + 8 + 28 or bth[0] != UD_SEND_ONLY:
        return None
    if int.from_bytes(bth[5:8], "big") != 1:
        return None
    mad = bth[20:]
    if mad[1] != CM_CLASS or struct.unpack_from("!H", mad, 16)[0] != RTU_ATTR:
        return None
    return struct.unpack_from("!I", mad, 24)[0]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: rrxe_rtu_wire.py TAP_A TAP_B")
    a, b = open_tap(sys.argv[1]), open_tap(sys.argv[2])
    peer = {a: b, b: a}
    dropped = {}  # comm ID -> RC SEND packets from A since its RTU was dropped
    frames = 0
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    print("wire: up", flush=True)
    while not stop:
        try:
            ready, _, _ = select.select([a, b], [], [], 0.5)
        except InterruptedError:
            continue
        for fd in ready:
            frame = os.read(fd, 65536)
            frames += 1
            bth = roce(frame) if fd == a else None
            if bth is not None and len(bth) >= 12:
                if bth[0] in RC_SENDS:
                    for comm in dropped:
                        dropped[comm] += 1
                comm = rtu_comm_id(bth)
                if comm is not None:
                    if comm not in dropped:
                        dropped[comm] = 0
                        print(f"drop rtu comm={comm:#x}", flush=True)
                        continue
                    print(f"pass rtu comm={comm:#x} sends={dropped[comm]}", flush=True)
            try:
                os.write(peer[fd], frame)
            except OSError as e:
                # A tap that is down takes no frame (EIO): the wire loses
                # it, as a cable to a port that is down would.
                if e.errno != errno.EIO:
                    raise
    print(f"wire: {frames} frames, {len(dropped)} dropped", flush=True)


if __name__ == "__main__":
    main()
