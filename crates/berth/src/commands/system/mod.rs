pub mod bench;
pub mod events;
pub mod info;
pub mod serve;
pub mod version;
pub mod warm;

pub use info::InfoArgs;
