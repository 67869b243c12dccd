// SPDX-License-Identifier: GPL-2.0

//! InfiniBand transport headers as RoCEv2 carries them after UDP (IB spec
//! chapter 9), and the opcode table saying which follow the BTH. Views are
//! parsed from and written to byte slices in network order; nothing here
//! trusts a length it did not check.

/// UDP destination port of RoCEv2.
pub const ROCE_V2_PORT: u16 = 4791;
/// UD SEND_ONLY.
pub const UD_SEND_ONLY: u8 = 0x64;
/// UD SEND_ONLY_WITH_IMMEDIATE.
pub const UD_SEND_ONLY_IMM: u8 = 0x65;

/// Size of the ICRC trailer.
pub const ICRC_SIZE: usize = 4;

/// Base transport header size.
pub const BTH: usize = 12;
/// Datagram extended transport header size.
pub const DETH: usize = 8;
/// RDMA extended transport header size.
pub const RETH: usize = 16;
/// Atomic extended transport header size.
pub const ATMETH: usize = 28;
/// ACK extended transport header size.
pub const AETH: usize = 4;
/// Atomic acknowledge extended transport header size.
pub const ATMACK: usize = 8;
/// Immediate data size.
pub const IMMDT: usize = 4;
/// Invalidate extended transport header size.
pub const IETH: usize = 4;
/// Flush extended transport header size.
pub const FETH: usize = 4;
/// XRC extended transport header size: the XRC SRQ number.
pub const XRCETH: usize = 4;

fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn be64(b: &[u8], o: usize) -> u64 {
    (u64::from(be32(b, o)) << 32) | u64::from(be32(b, o + 4))
}

/// The base transport header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bth {
    /// Opcode.
    pub opcode: u8,
    /// Solicited event.
    pub se: bool,
    /// Migration state.
    pub mig: bool,
    /// Pad bytes at the end of the payload (0..=3).
    pub pad: u8,
    /// Transport version (0).
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward congestion notification.
    pub fecn: bool,
    /// Backward congestion notification.
    pub becn: bool,
    /// Destination QP (24 bits).
    pub dqpn: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

impl Bth {
    /// Reads a BTH from the start of `b`.
    pub fn parse(b: &[u8]) -> Option<Self> {
        if b.len() < BTH {
            return None;
        }
        Some(Self {
            opcode: b[0],
            se: b[1] & 0x80 != 0,
            mig: b[1] & 0x40 != 0,
            pad: (b[1] >> 4) & 3,
            tver: b[1] & 0x0f,
            pkey: be16(b, 2),
            fecn: b[4] & 0x80 != 0,
            becn: b[4] & 0x40 != 0,
            dqpn: be32(b, 4) & 0x00ff_ffff,
            ack_req: b[8] & 0x80 != 0,
            psn: be32(b, 8) & 0x00ff_ffff,
        })
    }

    /// Writes it to the start of `b` (which must hold [`BTH`] bytes).
    pub fn write(&self, b: &mut [u8]) -> Option<()> {
        let b = b.get_mut(..BTH)?;
        b[0] = self.opcode;
        b[1] = (u8::from(self.se) << 7)
            | (u8::from(self.mig) << 6)
            | ((self.pad & 3) << 4)
            | (self.tver & 0x0f);
        b[2..4].copy_from_slice(&self.pkey.to_be_bytes());
        b[4..8].copy_from_slice(&(self.dqpn & 0x00ff_ffff).to_be_bytes());
        b[4] = (u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6);
        b[8..12].copy_from_slice(&(self.psn & 0x00ff_ffff).to_be_bytes());
        b[8] = u8::from(self.ack_req) << 7;
        Some(())
    }
}

/// The datagram header: Q_Key and source QP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deth {
    /// Queue key.
    pub qkey: u32,
    /// Source QP (24 bits).
    pub sqpn: u32,
}

impl Deth {
    /// Reads it from the start of `b`.
    pub fn parse(b: &[u8]) -> Option<Self> {
        (b.len() >= DETH).then(|| Self {
            qkey: be32(b, 0),
            sqpn: be32(b, 4) & 0x00ff_ffff,
        })
    }

    /// Writes it to the start of `b`.
    pub fn write(&self, b: &mut [u8]) -> Option<()> {
        let b = b.get_mut(..DETH)?;
        b[0..4].copy_from_slice(&self.qkey.to_be_bytes());
        b[4..8].copy_from_slice(&(self.sqpn & 0x00ff_ffff).to_be_bytes());
        Some(())
    }
}

/// The RDMA header: virtual address, key and length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reth {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length of the whole operation.
    pub len: u32,
}

impl Reth {
    /// Reads it from the start of `b`.
    pub fn parse(b: &[u8]) -> Option<Self> {
        (b.len() >= RETH).then(|| Self {
            va: be64(b, 0),
            rkey: be32(b, 8),
            len: be32(b, 12),
        })
    }

    /// Writes it to the start of `b`.
    pub fn write(&self, b: &mut [u8]) -> Option<()> {
        let b = b.get_mut(..RETH)?;
        b[0..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..16].copy_from_slice(&self.len.to_be_bytes());
        Some(())
    }
}

/// The ACK header: syndrome and message sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Aeth {
    /// Syndrome (ACK, RNR NAK or NAK, and its code).
    pub syndrome: u8,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

impl Aeth {
    /// Reads it from the start of `b`.
    pub fn parse(b: &[u8]) -> Option<Self> {
        (b.len() >= AETH).then(|| Self {
            syndrome: b[0],
            msn: be32(b, 0) & 0x00ff_ffff,
        })
    }

    /// Writes it to the start of `b`.
    pub fn write(&self, b: &mut [u8]) -> Option<()> {
        let b = b.get_mut(..AETH)?;
        b.copy_from_slice(&(self.msn & 0x00ff_ffff).to_be_bytes());
        b[0] = self.syndrome;
        Some(())
    }
}

/// The XRC SRQ number an XRCETH carries (its low 24 bits; the rest is
/// reserved), read from the start of `b`.
pub fn xrc_srqn(b: &[u8]) -> Option<u32> {
    (b.len() >= XRCETH).then(|| be32(b, 0) & 0x00ff_ffff)
}

/// The atomic header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtmEth {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap (CAS) or add (FAA) operand.
    pub swap_add: u64,
    /// Compare operand.
    pub compare: u64,
}

impl AtmEth {
    /// Reads it from the start of `b`.
    pub fn parse(b: &[u8]) -> Option<Self> {
        (b.len() >= ATMETH).then(|| Self {
            va: be64(b, 0),
            rkey: be32(b, 8),
            swap_add: be64(b, 12),
            compare: be64(b, 20),
        })
    }

    /// Writes it to the start of `b`.
    pub fn write(&self, b: &mut [u8]) -> Option<()> {
        let b = b.get_mut(..ATMETH)?;
        b[0..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..20].copy_from_slice(&self.swap_add.to_be_bytes());
        b[20..28].copy_from_slice(&self.compare.to_be_bytes());
        Some(())
    }
}

/// Transport of an opcode (its top three bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// Extended reliable connected (XRC).
    Xrc,
}

/// Room for a BTH and every extension header at once (no packet carries
/// them all).
pub const MAX_HDRS: usize =
    BTH + XRCETH + DETH + FETH + RETH + ATMETH + AETH + ATMACK + IMMDT + IETH;

/// The transport headers of a packet to send: the BTH and the extension
/// headers present, which [`Headers::write`] puts in wire order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    /// The BTH.
    pub bth: Bth,
    /// The XRCETH (XRC requests): the XRC SRQ number, 24 bits.
    pub xrceth: Option<u32>,
    /// The DETH (UD).
    pub deth: Option<Deth>,
    /// The FETH (FLUSH).
    pub feth: Option<u32>,
    /// The RETH.
    pub reth: Option<Reth>,
    /// The AtomicETH.
    pub atm: Option<AtmEth>,
    /// The AETH.
    pub aeth: Option<Aeth>,
    /// The AtomicAckETH: the original value.
    pub atmack: Option<u64>,
    /// Immediate data (as stored, network order).
    pub imm: Option<u32>,
    /// The IETH: the rkey to invalidate.
    pub ieth: Option<u32>,
}

impl Headers {
    /// A BTH and no extension headers.
    pub fn new(bth: Bth) -> Self {
        Self {
            bth,
            ..Default::default()
        }
    }

    /// The length [`Headers::write`] writes.
    pub fn wire_len(&self) -> usize {
        BTH + self.xrceth.map_or(0, |_| XRCETH)
            + self.deth.map_or(0, |_| DETH)
            + self.feth.map_or(0, |_| FETH)
            + self.reth.map_or(0, |_| RETH)
            + self.atm.map_or(0, |_| ATMETH)
            + self.aeth.map_or(0, |_| AETH)
            + self.atmack.map_or(0, |_| ATMACK)
            + self.imm.map_or(0, |_| IMMDT)
            + self.ieth.map_or(0, |_| IETH)
    }

    /// The UDP payload of a packet with these headers and `payload` bytes:
    /// the headers, the payload padded to four bytes, the ICRC.
    pub fn udp_len(&self, payload: usize) -> usize {
        self.wire_len() + payload.next_multiple_of(4) + ICRC_SIZE
    }

    /// Writes the headers to the start of `b`, in wire order; returns their
    /// length.
    pub fn write(&self, b: &mut [u8; MAX_HDRS]) -> usize {
        // Every header fits: `b` has room for all of them.
        let _ = self.bth.write(&mut b[..]);
        let mut o = BTH;
        if let Some(x) = self.xrceth {
            b[o..o + XRCETH].copy_from_slice(&(x & 0x00ff_ffff).to_be_bytes());
            o += XRCETH;
        }
        if let Some(d) = self.deth {
            let _ = d.write(&mut b[o..]);
            o += DETH;
        }
        if let Some(f) = self.feth {
            b[o..o + FETH].copy_from_slice(&f.to_be_bytes());
            o += FETH;
        }
        if let Some(r) = self.reth {
            let _ = r.write(&mut b[o..]);
            o += RETH;
        }
        if let Some(a) = self.atm {
            let _ = a.write(&mut b[o..]);
            o += ATMETH;
        }
        if let Some(a) = self.aeth {
            let _ = a.write(&mut b[o..]);
            o += AETH;
        }
        if let Some(v) = self.atmack {
            b[o..o + ATMACK].copy_from_slice(&v.to_be_bytes());
            o += ATMACK;
        }
        if let Some(x) = self.imm {
            b[o..o + IMMDT].copy_from_slice(&x.to_ne_bytes());
            o += IMMDT;
        }
        if let Some(x) = self.ieth {
            b[o..o + IETH].copy_from_slice(&x.to_be_bytes());
            o += IETH;
        }
        o
    }
}

/// Which headers follow the BTH for an opcode, and where.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Offset of the XRCETH from the BTH's start, if present.
    pub xrceth: Option<usize>,
    /// Offset of the DETH.
    pub deth: Option<usize>,
    /// Offset of the FETH.
    pub feth: Option<usize>,
    /// Offset of the RETH.
    pub reth: Option<usize>,
    /// Offset of the AtomicETH.
    pub atmeth: Option<usize>,
    /// Offset of the AETH.
    pub aeth: Option<usize>,
    /// Offset of the AtomicAckETH.
    pub atmack: Option<usize>,
    /// Offset of the immediate data.
    pub immdt: Option<usize>,
    /// Offset of the IETH.
    pub ieth: Option<usize>,
    /// Length of BTH plus extension headers (where the payload starts).
    pub hdr_len: usize,
    /// Whether a payload may follow.
    pub payload: bool,
}

/// Extension headers of an opcode, in wire order.
#[derive(Clone, Copy)]
struct Has {
    xrceth: bool,
    deth: bool,
    feth: bool,
    reth: bool,
    atmeth: bool,
    aeth: bool,
    atmack: bool,
    immdt: bool,
    ieth: bool,
    payload: bool,
}

const NONE: Has = Has {
    xrceth: false,
    deth: false,
    feth: false,
    reth: false,
    atmeth: false,
    aeth: false,
    atmack: false,
    immdt: false,
    ieth: false,
    payload: false,
};

/// The opcode bits of the XRC service (the top three bits 101): an XRC
/// opcode is RC's with these.
pub const XRC_SERVICE: u8 = 0xa0;

/// The service of a known opcode.
pub const fn service(opcode: u8) -> Option<Service> {
    match opcode >> 5 {
        0 => Some(Service::Rc),
        1 => Some(Service::Uc),
        3 => Some(Service::Ud),
        5 => Some(Service::Xrc),
        _ => None,
    }
}

fn has(opcode: u8) -> Option<Has> {
    let p = Has {
        payload: true,
        ..NONE
    };
    let low = opcode & 0x1f;
    // Sends and writes: the same low codes on RC and UC.
    let common = match low {
        0x00..=0x02 => Some(p),                 // send first/middle/last
        0x03 => Some(Has { immdt: true, ..p }), // send last with immediate
        0x04 => Some(p),                        // send only
        0x05 => Some(Has { immdt: true, ..p }), // send only with immediate
        0x06 => Some(Has { reth: true, ..p }),  // write first
        0x07 | 0x08 => Some(p),                 // write middle/last
        0x09 => Some(Has { immdt: true, ..p }), // write last with immediate
        0x0a => Some(Has { reth: true, ..p }),  // write only
        0x0b => Some(Has {
            reth: true,
            immdt: true,
            ..p
        }), // write only with immediate
        _ => None,
    };
    match service(opcode)? {
        Service::Uc => common,
        Service::Ud => match low {
            0x04 => Some(Has { deth: true, ..p }),
            0x05 => Some(Has {
                deth: true,
                immdt: true,
                ..p
            }),
            _ => None,
        },
        Service::Rc => common.or(rc_only(low)),
        // XRC (IB spec annex A14): RC's opcodes up to SEND ONLY WITH
        // INVALIDATE (FLUSH and ATOMIC WRITE are RC's only here). A request
        // carries an XRCETH right after the BTH; a response (read
        // responses and acknowledges) is laid out as RC's.
        Service::Xrc => match low {
            0x0d..=0x12 => rc_only(low),
            0x1c | 0x1d => None,
            _ => common.or(rc_only(low)).map(|h| Has { xrceth: true, ..h }),
        },
    }
}

/// The extension headers of RC's opcodes that UC lacks, by their low five
/// bits.
fn rc_only(low: u8) -> Option<Has> {
    let p = Has {
        payload: true,
        ..NONE
    };
    match low {
        0x0c => Some(Has { reth: true, ..NONE }), // read request
        0x0d | 0x0f | 0x10 => Some(Has { aeth: true, ..p }), // read response first/last/only
        0x0e => Some(p),                          // read response middle
        0x11 => Some(Has { aeth: true, ..NONE }), // acknowledge
        0x12 => Some(Has {
            aeth: true,
            atmack: true,
            ..NONE
        }), // atomic acknowledge
        0x13 | 0x14 => Some(Has {
            atmeth: true,
            ..NONE
        }), // compare-swap, fetch-add
        0x16 | 0x17 => Some(Has { ieth: true, ..p }), // send last/only with invalidate
        0x1c => Some(Has {
            feth: true,
            reth: true,
            ..NONE
        }), // flush
        0x1d => Some(Has { reth: true, ..p }),    // atomic write
        _ => None,
    }
}

/// The header layout of `opcode`, or `None` for opcodes rrxe does not
/// know (such packets are dropped).
pub fn layout(opcode: u8) -> Option<Layout> {
    let h = has(opcode)?;
    let mut l = Layout {
        payload: h.payload,
        ..Default::default()
    };
    let mut off = BTH;
    let mut take = |present: bool, size: usize| {
        present.then(|| {
            let o = off;
            off += size;
            o
        })
    };
    l.xrceth = take(h.xrceth, XRCETH);
    l.deth = take(h.deth, DETH);
    l.feth = take(h.feth, FETH);
    l.reth = take(h.reth, RETH);
    l.atmeth = take(h.atmeth, ATMETH);
    l.aeth = take(h.aeth, AETH);
    l.atmack = take(h.atmack, ATMACK);
    l.immdt = take(h.immdt, IMMDT);
    l.ieth = take(h.ieth, IETH);
    l.hdr_len = off;
    Some(l)
}

/// Splits a RoCEv2 UDP payload (from the BTH to the end of the ICRC) into
/// its BTH, layout and the payload's range, checking the pad count and
/// that nothing overlaps.
pub fn split(udp_payload: &[u8]) -> Option<(Bth, Layout, core::ops::Range<usize>)> {
    let bth = Bth::parse(udp_payload)?;
    let l = layout(bth.opcode)?;
    let end = udp_payload
        .len()
        .checked_sub(ICRC_SIZE)?
        .checked_sub(bth.pad as usize)?;
    if end < l.hdr_len || (!l.payload && end != l.hdr_len) {
        return None;
    }
    Some((bth, l, l.hdr_len..end))
}

// The host crate loads this file by its path, so the path is spelled out.
#[cfg(test)]
#[path = "hdr/tests.rs"]
mod tests;
