//! Layer unpacking (being written).
