//! Converging a project through the engine.
