//! Checks on resource limits that need no host information (moby
//! `verifyPlatformContainerResources`, `validateResources`).

use super::ValidationError;
use crate::container::resources::Resources;

/// The smallest memory limit the kernel can enforce usefully, per Docker.
const MINIMUM_MEMORY: i64 = 6 * 1024 * 1024;

pub(super) fn validate(resources: &Resources) -> Result<(), ValidationError> {
    let memory = resources.memory;
    let swap = resources.memory_swap;
    if memory != 0 && memory < MINIMUM_MEMORY {
        return Err(ValidationError::MemoryMinimum);
    }
    if memory > 0 && swap > 0 && swap < memory {
        return Err(ValidationError::SwapBelowMemory);
    }
    if memory == 0 && swap > 0 {
        return Err(ValidationError::SwapWithoutMemory);
    }
    // The docker CLI sends -1 for "not set"; the daemon turns it into null first.
    if let Some(swappiness) = resources.memory_swappiness.filter(|value| *value != -1) {
        if !(0..=100).contains(&swappiness) {
            return Err(ValidationError::Swappiness(swappiness));
        }
    }
    let reservation = resources.memory_reservation;
    if reservation > 0 && reservation < MINIMUM_MEMORY {
        return Err(ValidationError::ReservationMinimum);
    }
    if memory > 0 && reservation > 0 && memory < reservation {
        return Err(ValidationError::MemoryBelowReservation);
    }
    if resources.kernel_memory > 0 && resources.kernel_memory < MINIMUM_MEMORY {
        return Err(ValidationError::KernelMemoryMinimum);
    }
    if resources.nano_cpus > 0 && resources.cpu_period > 0 {
        return Err(ValidationError::NanoCpusWithPeriod);
    }
    if resources.nano_cpus > 0 && resources.cpu_quota > 0 {
        return Err(ValidationError::NanoCpusWithQuota);
    }
    let period = resources.cpu_period;
    if period != 0 && !(1000..=1_000_000).contains(&period) {
        return Err(ValidationError::CpuPeriod);
    }
    if resources.cpu_quota > 0 && resources.cpu_quota < 1000 {
        return Err(ValidationError::CpuQuota);
    }
    let weight = resources.blkio_weight;
    if weight > 0 && !(10..=1000).contains(&weight) {
        return Err(ValidationError::BlkioWeight);
    }
    if resources.io_maximum_bandwidth != 0 || resources.io_maximum_iops != 0 {
        return Err(ValidationError::MaximumIo);
    }
    Ok(())
}

/// Checked when the request is decoded, before everything else.
pub(super) fn validate_realtime(resources: &Resources) -> Result<(), ValidationError> {
    let period = resources.cpu_realtime_period;
    let runtime = resources.cpu_realtime_runtime;
    if period != 0 && runtime != 0 && runtime > period {
        return Err(ValidationError::RealtimeRuntime);
    }
    Ok(())
}
