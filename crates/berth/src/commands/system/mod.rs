pub mod info;
pub mod version;

pub use info::InfoArgs;
