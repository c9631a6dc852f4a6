//! What travels between processes: the real tag layout and the message header.
//!
//! Control traffic (headers, eager payloads, acknowledgements) runs on one duplicated real
//! communicator; large payloads run on a second one, on a per-message tag, so a wildcard
//! probe of the control communicator can never pick up a payload (see README, "Design").
//! Control tag: bits 8..16 = destination subrank, bits 0..8 = source subrank.
//! Data tag: a per-(source process, destination process) message id below the real tag bound.

/// Eager payload followed by the header in one real message.
pub const KIND_EAGER: u32 = 1;
/// Header only; the payload follows on the data communicator with tag `msgid`.
pub const KIND_RNDV: u32 = 2;
/// Acknowledgement of a synchronous-mode send (`token` names the sender's request).
pub const KIND_ACK: u32 = 3;

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
    pub _pad: u32,
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

pub fn ctrl_tag(dst_sub: usize, src_sub: usize) -> i32 {
    ((dst_sub as i32) << 8) | src_sub as i32
}

pub fn split_ctrl_tag(tag: i32) -> (usize, usize) {
    (((tag >> 8) & 0xff) as usize, (tag & 0xff) as usize)
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
    fn ctrl_tags_roundtrip(#[case] d: usize, #[case] s: usize) {
        let t = ctrl_tag(d, s);
        assert!((0..(1 << 16)).contains(&t));
        assert_eq!(split_ctrl_tag(t), (d, s));
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
            _pad: 0,
            token: 77,
        };
        assert_eq!(Header::from_bytes(&h.to_bytes()), Some(h));
        assert_eq!(Header::from_bytes(&[0u8; 3]), None);
    }
}
