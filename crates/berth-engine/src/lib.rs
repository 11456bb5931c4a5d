//! berth-engine
