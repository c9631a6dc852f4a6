//! What travels between processes: the real tag layout and the message header.
//!
//! Control traffic (headers, eager payloads, acknowledgements) runs on one duplicated real
//! communicator; large payloads run on a second one, on a per-message tag, so a wildcard
//! probe of the control communicator can never pick up a payload (see docs/design-decisions.md).
//! Control tag: bits 8..16 = destination subrank, bits 0..8 = source subrank (their low 8
//! bits); the header's `sub_hi` carries the rest of both, so a process may hold up to
//! [`MAX_SUBS`] subranks (SMP mode: W·V, e.g. 64 workers × V=16 = 1024) while the tag keeps
//! needing only 16 bits (every control message has a header: eager, rendezvous, ack).
//! Data tag: a per-(source process, destination process) message id below the real tag bound.

/// Eager payload followed by the header in one real message.
pub const KIND_EAGER: u32 = 1;
/// Header only; the payload follows on the data communicator with tag `msgid`.
pub const KIND_RNDV: u32 = 2;
/// Acknowledgement of a synchronous-mode send (`token` names the sender's request).
pub const KIND_ACK: u32 = 3;
// issue 18 (RMA, rma6): window-lock traffic between processes
/// A window-lock message (`transport::rma::Note`: request, release or grant), header only,
/// handled by the receiving process's progress engine (`core::rma::wlock::on_note`).
pub const KIND_RMA: u32 = 4;
/// Session 29 (issue 16): a collective's point-to-point message through the node queue
/// (`collq`): `ctx` is its real communicator's job-wide name, `tag` the call's, header and
/// payload in one cell; taken by the transport itself, never a subrank's.
pub const KIND_COLL: u32 = 5;

/// The sender waits for the receiver to match (Ssend).
pub const FLAG_SYNC: u32 = 1;

/// Envelope and protocol fields of one inter-process message.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub kind: u32,
    pub flags: u32,
    /// Context id of the communicator (collective traffic has its own).
    pub ctx: u64,
    /// Source rank in that communicator.
    pub src_rank: i32,
    pub tag: i32,
    /// Payload length in bytes.
    pub len: u64,
    /// Data-communicator tag of a rendezvous payload.
    pub msgid: u32,
    /// High bits of the subranks (`sub >> 8`): destination in bits 16..32, source in 0..16.
    /// Filled by the transport (`sub_hi`); read back with the tag by `split_subs`.
    pub sub_hi: u32,
    /// Sender's request token, echoed in the acknowledgement of a synchronous send.
    pub token: u64,
}

pub const HDR_LEN: usize = std::mem::size_of::<Header>();

impl Header {
    pub fn to_bytes(&self) -> [u8; HDR_LEN] {
        // SAFETY: Header is repr(C), made of plain integers with explicit padding fields.
        unsafe { std::mem::transmute_copy(self) }
    }
    pub fn from_bytes(b: &[u8]) -> Option<Header> {
        if b.len() < HDR_LEN {
            return None;
        }
        // SAFETY: length checked; every bit pattern is a valid Header (plain integers).
        Some(unsafe { std::ptr::read_unaligned(b.as_ptr() as *const Header) })
    }
}

/// Subranks a process may hold: 8 bits in the real tag, 16 more in the header.
pub const MAX_SUBS: usize = 1 << 24;

/// The real tag of a control message: the low 8 bits of both subranks.
#[inline(always)]
pub fn ctrl_tag(dst_sub: usize, src_sub: usize) -> i32 {
    debug_assert!(dst_sub < MAX_SUBS && src_sub < MAX_SUBS);
    (((dst_sub & 0xff) << 8) | (src_sub & 0xff)) as i32
}

/// The header's `sub_hi`: the high bits of both subranks.
#[inline(always)]
pub fn sub_hi(dst_sub: usize, src_sub: usize) -> u32 {
    (((dst_sub >> 8) as u32) << 16) | (((src_sub >> 8) as u32) & 0xffff)
}

/// (destination, source) subranks of a control message from its real tag and its header's
/// `sub_hi`.
#[inline(always)]
pub fn split_subs(tag: i32, hi: u32) -> (usize, usize) {
    let dst = ((tag as usize >> 8) & 0xff) | ((hi >> 16) as usize) << 8;
    let src = (tag as usize & 0xff) | ((hi & 0xffff) as usize) << 8;
    (dst, src)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(0, 0)]
    #[case(255, 0)]
    #[case(0, 255)]
    #[case(17, 200)]
    #[case(256, 255)]
    #[case(255, 256)]
    #[case(1023, 1023)]
    #[case(1023, 0)]
    #[case(65535, 256)]
    #[case(65536, 65535)]
    #[case(MAX_SUBS - 1, MAX_SUBS - 1)]
    fn subranks_roundtrip(#[case] d: usize, #[case] s: usize) {
        let t = ctrl_tag(d, s);
        assert!((0..(1 << 16)).contains(&t), "the tag stays within 16 bits");
        assert_eq!(t >> 8, (d & 0xff) as i32, "the destination's low 8 bits are in the tag");
        let h = Header {
            sub_hi: sub_hi(d, s),
            ..Default::default()
        };
        let h = Header::from_bytes(&h.to_bytes()).unwrap();
        assert_eq!(split_subs(t, h.sub_hi), (d, s));
    }

    #[test]
    fn header_roundtrip() {
        let h = Header {
            kind: KIND_RNDV,
            flags: FLAG_SYNC,
            ctx: 7,
            src_rank: 3,
            tag: -5,
            len: 1 << 40,
            msgid: 9,
            sub_hi: sub_hi(1023, 300),
            token: 77,
        };
        assert_eq!(Header::from_bytes(&h.to_bytes()), Some(h));
        assert_eq!(Header::from_bytes(&[0u8; 3]), None);
    }
}
