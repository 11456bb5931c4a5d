//! Container networking: bridges and veth pairs over rtnetlink, berth's own
//! nftables table for NAT and published ports, address management, and the
//! embedded DNS resolver of user-defined networks.

pub mod dns;
pub mod docker_user;
pub mod instance;
pub mod ipam;
pub mod kernel;
pub mod netlink;
pub mod netns;
pub mod nft;
