//! Image formats: layer unpacking, Docker/OCI archives, import.

pub mod unpack;
