//! Tests of `changes`, `layer_from_upper` and `export_rootfs`. Most need root: they make
//! whiteout devices, set `trusted.*` xattrs and mount overlays (in a private mount
//! namespace, see `support::in_mount_namespace`).

mod conformance;
mod diff_rules;
mod export;
mod layer;
mod support;
