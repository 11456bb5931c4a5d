//! One module per metric of the suite; each returns its part of the report
//! and never fails as a whole: what cannot be measured is a skipped
//! measurement with its reason.

mod binary;
mod bind;
mod build;
mod copy;
mod dockerfile;
mod memory;
mod network;
mod oci;
mod pull;
mod seccomp;
mod start;
mod vm_phases;

use crate::context::Context;
use crate::options::Metric;
use crate::report::MetricReport;

pub fn run(metric: Metric, context: &mut Context) -> MetricReport {
    match metric {
        Metric::Start => start::run(context),
        Metric::Memory => memory::run(context),
        Metric::Copy => copy::run(context),
        Metric::Bind => bind::run(context),
        Metric::Build => build::run(context),
        Metric::Network => network::run(context),
        Metric::Seccomp => seccomp::run(context),
        Metric::Pull => pull::run(context),
        Metric::Binary => binary::run(context),
        Metric::Dockerfile => dockerfile::run(context),
        Metric::Oci => oci::run(context),
    }
}
