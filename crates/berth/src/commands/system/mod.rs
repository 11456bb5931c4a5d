pub mod info;
pub mod version;
pub mod warm;

pub use info::InfoArgs;
