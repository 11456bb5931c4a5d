pub mod bench;
pub mod info;
pub mod serve;
pub mod version;
pub mod warm;

pub use info::InfoArgs;
