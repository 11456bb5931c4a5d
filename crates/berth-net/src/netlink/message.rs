//! Bytes of rtnetlink messages: the `nlmsghdr` header, the fixed family
//! headers (`ifinfomsg`, `ifaddrmsg`, `rtmsg`) and (nested) attributes, in
//! native byte order, each part padded to 4 bytes (`NLMSG_ALIGN`,
//! `NLA_ALIGN`). Layouts from `include/uapi/linux/netlink.h`,
//! `rtnetlink.h`, `if_link.h`, `if_addr.h` and `veth.h`.

// netlink.h: message types and flags.
pub(crate) const NLMSG_NOOP: u16 = 1;
pub(crate) const NLMSG_ERROR: u16 = 2;
pub(crate) const NLMSG_DONE: u16 = 3;
pub(crate) const NLM_F_REQUEST: u16 = 0x1;
pub(crate) const NLM_F_ACK: u16 = 0x4;
pub(crate) const NLM_F_EXCL: u16 = 0x200;
pub(crate) const NLM_F_CREATE: u16 = 0x400;
pub(crate) const NLM_F_DUMP: u16 = 0x300;
const NLA_F_NESTED: u16 = 1 << 15;
const NLA_F_NET_BYTEORDER: u16 = 1 << 14;
const ALIGN_TO: usize = 4;
const MESSAGE_HEADER_LEN: usize = 16;
const ATTRIBUTE_HEADER_LEN: usize = 4;

// rtnetlink.h: message types.
pub(crate) const RTM_NEWLINK: u16 = 16;
pub(crate) const RTM_DELLINK: u16 = 17;
pub(crate) const RTM_GETLINK: u16 = 18;
pub(crate) const RTM_SETLINK: u16 = 19;
pub(crate) const RTM_NEWADDR: u16 = 20;
pub(crate) const RTM_DELADDR: u16 = 21;
pub(crate) const RTM_NEWROUTE: u16 = 24;
pub(crate) const RTM_GETROUTE: u16 = 26;

// if_link.h and veth.h: link attributes.
pub(crate) const IFLA_ADDRESS: u16 = 1;
pub(crate) const IFLA_IFNAME: u16 = 3;
pub(crate) const IFLA_MASTER: u16 = 10;
pub(crate) const IFLA_LINKINFO: u16 = 18;
pub(crate) const IFLA_NET_NS_FD: u16 = 28;
pub(crate) const IFLA_INFO_KIND: u16 = 1;
pub(crate) const IFLA_INFO_DATA: u16 = 2;
pub(crate) const VETH_INFO_PEER: u16 = 1;
pub(crate) const IFF_UP: u32 = 1;

// if_addr.h: address attributes.
pub(crate) const IFA_ADDRESS: u16 = 1;
pub(crate) const IFA_LOCAL: u16 = 2;
pub(crate) const IFA_BROADCAST: u16 = 4;

// rtnetlink.h: route attributes and rtmsg values.
pub(crate) const RTA_DST: u16 = 1;
pub(crate) const RTA_GATEWAY: u16 = 5;
pub(crate) const RTA_TABLE: u16 = 15;
pub(crate) const RT_TABLE_MAIN: u8 = 254;
pub(crate) const RTPROT_BOOT: u8 = 3;
pub(crate) const RT_SCOPE_UNIVERSE: u8 = 0;
pub(crate) const RTN_UNICAST: u8 = 1;

pub(crate) const AF_UNSPEC: u8 = 0;
pub(crate) const AF_INET: u8 = 2;
pub(crate) const AF_INET6: u8 = 10;
/// `ifa_flags`: no duplicate address detection, so an address is usable at
/// once (libnetwork sets it on the IPv6 addresses it gives).
pub(crate) const IFA_F_NODAD: u8 = 0x02;
pub(crate) const RTA_OIF: u16 = 4;

pub(crate) const LINK_HEADER_LEN: usize = 16;
pub(crate) const ROUTE_HEADER_LEN: usize = 12;

/// A reply the kernel sent that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("malformed netlink message: {0}")]
pub struct MalformedMessage(pub(crate) &'static str);

fn align(length: usize) -> usize {
    length.div_ceil(ALIGN_TO) * ALIGN_TO
}

/// `struct ifinfomsg`: family, pad, type, index, flags, change.
pub(crate) fn link_header(index: u32, flags: u32, change: u32) -> [u8; LINK_HEADER_LEN] {
    let mut header = [0; LINK_HEADER_LEN];
    header[0] = AF_UNSPEC;
    header[4..8].copy_from_slice(&index.to_ne_bytes());
    header[8..12].copy_from_slice(&flags.to_ne_bytes());
    header[12..16].copy_from_slice(&change.to_ne_bytes());
    header
}

/// `struct ifaddrmsg`: family, prefix length, flags,
/// scope, index.
pub(crate) fn address_header(family: u8, prefix_len: u8, flags: u8, index: u32) -> [u8; 8] {
    let mut header = [family, prefix_len, flags, RT_SCOPE_UNIVERSE, 0, 0, 0, 0];
    header[4..8].copy_from_slice(&index.to_ne_bytes());
    header
}

/// `struct rtmsg` of a unicast route of `family` in the main table:
/// family, dst_len, src_len, tos, table, protocol, scope, type, flags.
pub(crate) fn route_header(family: u8, destination_len: u8) -> [u8; ROUTE_HEADER_LEN] {
    let mut header = [0; ROUTE_HEADER_LEN];
    header[..8].copy_from_slice(&[
        family,
        destination_len,
        0,
        0,
        RT_TABLE_MAIN,
        RTPROT_BOOT,
        RT_SCOPE_UNIVERSE,
        RTN_UNICAST,
    ]);
    header
}

/// Builds one request: header, then a family header, then attributes.
pub(crate) struct MessageBuilder {
    buffer: Vec<u8>,
}

impl MessageBuilder {
    pub(crate) fn new(kind: u16, flags: u16, family_header: &[u8]) -> Self {
        let mut builder = Self {
            buffer: Vec::with_capacity(256),
        };
        builder.buffer.extend_from_slice(&0u32.to_ne_bytes()); // length, set by finish
        builder.buffer.extend_from_slice(&kind.to_ne_bytes());
        builder.buffer.extend_from_slice(&flags.to_ne_bytes());
        builder.buffer.extend_from_slice(&[0; 8]); // sequence (set by finish), port id
        builder.header(family_header);
        builder
    }

    /// Raw bytes, padded: a family header, also inside a nest (the veth
    /// peer starts with its own `ifinfomsg`).
    pub(crate) fn header(&mut self, bytes: &[u8]) -> &mut Self {
        self.buffer.extend_from_slice(bytes);
        self.buffer.resize(align(self.buffer.len()), 0);
        self
    }

    pub(crate) fn attribute(&mut self, kind: u16, payload: &[u8]) -> &mut Self {
        let length = ATTRIBUTE_HEADER_LEN + payload.len();
        self.buffer
            .extend_from_slice(&attribute_len(length).to_ne_bytes());
        self.buffer.extend_from_slice(&kind.to_ne_bytes());
        self.header(payload);
        self
    }

    pub(crate) fn attribute_u32(&mut self, kind: u16, value: u32) -> &mut Self {
        self.attribute(kind, &value.to_ne_bytes())
    }

    /// A NUL-terminated string, as the kernel's `NLA_STRING` names expect.
    pub(crate) fn attribute_string(&mut self, kind: u16, value: &str) -> &mut Self {
        let mut payload = Vec::with_capacity(value.len() + 1);
        payload.extend_from_slice(value.as_bytes());
        payload.push(0);
        self.attribute(kind, &payload)
    }

    /// An attribute whose payload `fill` writes: a family header and/or
    /// further attributes. Its length covers everything `fill` added.
    pub(crate) fn nested(&mut self, kind: u16, fill: impl FnOnce(&mut Self)) -> &mut Self {
        let start = self.buffer.len();
        self.buffer.extend_from_slice(&0u16.to_ne_bytes());
        self.buffer.extend_from_slice(&kind.to_ne_bytes());
        fill(self);
        let length = attribute_len(self.buffer.len() - start);
        self.buffer[start..start + 2].copy_from_slice(&length.to_ne_bytes());
        self
    }

    /// Adds `flags` and the sequence number and returns the datagram.
    pub(crate) fn finish(mut self, sequence: u32, flags: u16) -> Vec<u8> {
        let length = u32::try_from(self.buffer.len()).unwrap_or(u32::MAX);
        self.buffer[0..4].copy_from_slice(&length.to_ne_bytes());
        let flags = read_u16(&self.buffer, 6) | flags;
        self.buffer[6..8].copy_from_slice(&flags.to_ne_bytes());
        self.buffer[8..12].copy_from_slice(&sequence.to_ne_bytes());
        self.buffer
    }
}

/// Our attributes hold names, addresses and small nests: far below the
/// 64 KiB an `nla_len` can describe.
fn attribute_len(length: usize) -> u16 {
    u16::try_from(length).unwrap_or(u16::MAX)
}

fn read_u16(bytes: &[u8], offset: usize) -> u16 {
    let mut value = [0; 2];
    value.copy_from_slice(&bytes[offset..offset + 2]);
    u16::from_ne_bytes(value)
}

/// A native-endian u32 at `offset`, if the bytes are there.
pub(crate) fn read_u32(bytes: &[u8], offset: usize) -> Option<u32> {
    let field = bytes.get(offset..offset.checked_add(4)?)?;
    Some(u32::from_ne_bytes(field.try_into().ok()?))
}

/// A string attribute without its NUL terminator.
pub(crate) fn read_string(payload: &[u8]) -> String {
    let end = payload
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(payload.len());
    String::from_utf8_lossy(&payload[..end]).into_owned()
}

/// One message the kernel sent.
#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) kind: u16,
    pub(crate) sequence: u32,
    pub(crate) payload: Vec<u8>,
}

impl Message {
    /// The family header of `header_len` bytes and the attributes after it.
    pub(crate) fn split(&self, header_len: usize) -> Result<(&[u8], &[u8]), MalformedMessage> {
        if self.payload.len() < header_len {
            return Err(MalformedMessage("message shorter than its family header"));
        }
        let attributes_start = align(header_len).min(self.payload.len());
        Ok((
            &self.payload[..header_len],
            &self.payload[attributes_start..],
        ))
    }

    /// The (negative) errno of an `NLMSG_ERROR` or `NLMSG_DONE`; 0 for an
    /// acknowledgement. An empty `NLMSG_DONE` (old kernels) counts as 0.
    pub(crate) fn error_code(&self) -> Result<i32, MalformedMessage> {
        match read_u32(&self.payload, 0) {
            Some(code) => Ok(i32::from_ne_bytes(code.to_ne_bytes())),
            None if self.kind == NLMSG_DONE => Ok(0),
            None => Err(MalformedMessage("error message without an error code")),
        }
    }
}

/// Splits one received datagram into its (possibly several) messages.
pub(crate) fn parse_messages(mut bytes: &[u8]) -> Result<Vec<Message>, MalformedMessage> {
    let mut messages = Vec::new();
    while bytes.len() >= MESSAGE_HEADER_LEN {
        let length = read_u32(bytes, 0).map_or(0, |length| length as usize);
        if length < MESSAGE_HEADER_LEN || length > bytes.len() {
            return Err(MalformedMessage("message length outside the datagram"));
        }
        messages.push(Message {
            kind: read_u16(bytes, 4),
            sequence: read_u32(bytes, 8).unwrap_or(0),
            payload: bytes[MESSAGE_HEADER_LEN..length].to_vec(),
        });
        bytes = &bytes[align(length).min(bytes.len())..];
    }
    Ok(messages)
}

/// Iterates over `(type, payload)` of the attributes in `bytes`, the type
/// without its `NLA_F_NESTED`/`NLA_F_NET_BYTEORDER` bits. A truncated
/// attribute ends the iteration.
pub(crate) fn attributes(bytes: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.len() < ATTRIBUTE_HEADER_LEN {
            return None;
        }
        let length = usize::from(read_u16(rest, 0));
        if length < ATTRIBUTE_HEADER_LEN || length > rest.len() {
            rest = &[];
            return None;
        }
        let kind = read_u16(rest, 2) & !(NLA_F_NESTED | NLA_F_NET_BYTEORDER);
        let payload = &rest[ATTRIBUTE_HEADER_LEN..length];
        rest = &rest[align(length).min(rest.len())..];
        Some((kind, payload))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // unit tests: a failed step is a failed test
mod tests {
    use super::*;

    #[test]
    fn header_carries_length_type_flags_and_sequence() {
        let message = MessageBuilder::new(RTM_GETLINK, NLM_F_CREATE, &link_header(7, 0, 0));
        let bytes = message.finish(42, NLM_F_REQUEST | NLM_F_ACK);
        assert_eq!(bytes.len(), 32);
        assert_eq!(read_u32(&bytes, 0), Some(32));
        assert_eq!(read_u16(&bytes, 4), RTM_GETLINK);
        assert_eq!(
            read_u16(&bytes, 6),
            NLM_F_CREATE | NLM_F_REQUEST | NLM_F_ACK
        );
        assert_eq!(read_u32(&bytes, 8), Some(42));
        assert_eq!(read_u32(&bytes, 20), Some(7)); // ifi_index
    }

    #[test]
    fn attributes_are_padded_to_four_bytes() {
        let mut message = MessageBuilder::new(RTM_NEWLINK, 0, &address_header(AF_INET, 24, 0, 3));
        message
            .attribute_string(IFLA_IFNAME, "eth0") // 4 + 5 bytes, padded to 12
            .attribute_u32(IFLA_MASTER, 9);
        let bytes = message.finish(1, 0);
        let body = &bytes[MESSAGE_HEADER_LEN + 8..];
        assert_eq!(body.len(), 12 + 8);
        assert_eq!(read_u16(body, 0), 9); // nla_len excludes the padding
        assert_eq!(&body[4..12], b"eth0\0\0\0\0");
        let parsed: Vec<_> = attributes(body).collect();
        assert_eq!(parsed.len(), 2);
        assert_eq!(read_string(parsed[0].1), "eth0");
        assert_eq!(parsed[1], (IFLA_MASTER, &9u32.to_ne_bytes()[..]));
    }

    #[test]
    fn nested_attributes_cover_their_contents() {
        let mut message = MessageBuilder::new(RTM_NEWLINK, 0, &link_header(0, 0, 0));
        message.nested(IFLA_LINKINFO, |info| {
            info.attribute_string(IFLA_INFO_KIND, "veth");
            info.nested(IFLA_INFO_DATA, |data| {
                data.nested(VETH_INFO_PEER, |peer| {
                    peer.header(&link_header(0, 0, 0));
                    peer.attribute_u32(IFLA_NET_NS_FD, 5);
                });
            });
        });
        let bytes = message.finish(1, 0);
        let body = &bytes[MESSAGE_HEADER_LEN + LINK_HEADER_LEN..];
        let (kind, link_info) = attributes(body).next().unwrap();
        assert_eq!(kind, IFLA_LINKINFO);
        assert_eq!(link_info.len() + 4, body.len());
        let inner: Vec<_> = attributes(link_info).collect();
        assert_eq!(read_string(inner[0].1), "veth");
        let (_, peer) = attributes(inner[1].1).next().unwrap();
        assert_eq!(peer.len(), LINK_HEADER_LEN + 8);
        let (kind, fd) = attributes(&peer[LINK_HEADER_LEN..]).next().unwrap();
        assert_eq!((kind, read_u32(fd, 0)), (IFLA_NET_NS_FD, Some(5)));
    }

    #[test]
    fn nested_flag_is_masked_and_truncated_attribute_stops() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&8u16.to_ne_bytes());
        bytes.extend_from_slice(&(IFLA_LINKINFO | NLA_F_NESTED).to_ne_bytes());
        bytes.extend_from_slice(&[1, 2, 3, 4]);
        bytes.extend_from_slice(&40u16.to_ne_bytes()); // claims more than is there
        bytes.extend_from_slice(&IFLA_MASTER.to_ne_bytes());
        let parsed: Vec<_> = attributes(&bytes).collect();
        assert_eq!(parsed, vec![(IFLA_LINKINFO, &[1u8, 2, 3, 4][..])]);
    }

    fn raw_message(kind: u16, sequence: u32, payload: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::new();
        let length = u32::try_from(MESSAGE_HEADER_LEN + payload.len()).unwrap();
        bytes.extend_from_slice(&length.to_ne_bytes());
        bytes.extend_from_slice(&kind.to_ne_bytes());
        bytes.extend_from_slice(&2u16.to_ne_bytes()); // NLM_F_MULTI
        bytes.extend_from_slice(&sequence.to_ne_bytes());
        bytes.extend_from_slice(&0u32.to_ne_bytes());
        bytes.extend_from_slice(payload);
        bytes.resize(align(bytes.len()), 0);
        bytes
    }

    #[test]
    fn datagram_splits_into_aligned_messages() {
        let mut datagram = raw_message(RTM_NEWLINK, 3, &[1, 2, 3, 4, 5]);
        datagram.extend(raw_message(NLMSG_ERROR, 3, &(-17i32).to_ne_bytes()));
        datagram.extend(raw_message(NLMSG_DONE, 4, &[]));
        let messages = parse_messages(&datagram).unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0].kind, RTM_NEWLINK);
        assert_eq!(messages[0].payload, [1, 2, 3, 4, 5]);
        assert_eq!(messages[1].error_code().unwrap(), -17);
        assert_eq!(
            (messages[2].sequence, messages[2].error_code().unwrap()),
            (4, 0)
        );
    }

    #[test]
    fn truncated_message_is_malformed() {
        let mut datagram = raw_message(RTM_NEWLINK, 1, &[0; 16]);
        datagram.truncate(20);
        assert!(parse_messages(&datagram).is_err());
        let empty_error = parse_messages(&raw_message(NLMSG_ERROR, 1, &[])).unwrap();
        assert!(empty_error[0].error_code().is_err());
    }

    #[test]
    fn family_headers_have_kernel_layout() {
        assert_eq!(
            address_header(AF_INET, 24, 0, 0x0102_0304)[..4],
            [AF_INET, 24, 0, 0]
        );
        assert_eq!(
            address_header(AF_INET6, 64, IFA_F_NODAD, 1)[..4],
            [AF_INET6, 64, 2, 0]
        );
        assert_eq!(read_u32(&address_header(AF_INET, 24, 0, 9), 4), Some(9));
        let route = route_header(AF_INET, 0);
        assert_eq!(route[..8], [AF_INET, 0, 0, 0, 254, 3, 0, 1]);
        assert_eq!(read_u32(&link_header(1, IFF_UP, IFF_UP), 8), Some(IFF_UP));
    }
}
