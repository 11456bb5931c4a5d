mod hostile;
mod metadata;
mod streams;
mod support;
mod to_container;
mod to_host;
