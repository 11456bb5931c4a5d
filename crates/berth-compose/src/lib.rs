//! berth's compose: compose files -> a normalised project model -> containers, networks and
//! volumes converged by dependency level through berth-engine. No clap and no HTTP here: the
//! CLI (`berth compose ...`) parses flags into [`load::ProjectOptions`] and calls in.
//!
//! - [`yaml`]: YAML into a tree that keeps file, line and column (`yaml-rust2`, see there why)
//! - [`interpolate`], [`dotenv`]: `${VAR}` forms and `.env` files
//! - [`merge`]: several `-f` files and `extends` by the compose specification's merge rules
//! - [`load`]: files, variables, `include`, `extends`, profiles, the project name
//! - [`normalize`]: every short syntax expanded, as `docker compose config` prints it; fields
//!   berth does not implement refused by name
//! - [`render`]: that model as compose's YAML or JSON
//! - [`graph`]: dependency levels and cycles
//! - [`converge`]: `up`, `down`, `ps`, … against the engine, with compose's labels and names

#[cfg(feature = "engine")]
pub mod converge;
pub mod dotenv;
pub mod error;
pub mod graph;
pub mod interpolate;
pub mod load;
pub mod merge;
pub mod normalize;
pub mod render;
pub mod yaml;

#[cfg(test)]
mod fuzz_tests;

pub use error::ComposeError;
pub use load::{load, Project, ProjectOptions};
