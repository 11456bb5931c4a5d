//! Output formatting (being written).
