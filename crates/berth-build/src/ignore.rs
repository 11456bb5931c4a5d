//! `.dockerignore` (to be written).
