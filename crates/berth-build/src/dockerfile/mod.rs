//! The Dockerfile frontend (to be written: parser, words, expansion).

pub mod ast;

pub use ast::*;
