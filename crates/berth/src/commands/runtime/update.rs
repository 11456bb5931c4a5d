//! `update`: `-r FILE` (or `-r -`, stdin) with `linux.resources` JSON, and runc's single-limit
//! flags on top.

use std::io::Read;

use berth_oci::config::{Cpu, Memory, Pids, Resources};

use super::cli::UpdateArgs;

pub fn run(store: &berth_oci::Store, args: &UpdateArgs) -> anyhow::Result<i32> {
    let mut resources: Resources = match &args.resources {
        Some(path) if path.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            serde_json::from_str(&text)?
        }
        Some(path) => serde_json::from_slice(&fs_err::read(path)?)?,
        None => Resources::default(),
    };
    if let Some(memory) = args.memory {
        resources.memory.get_or_insert_with(Memory::default).limit = Some(memory);
    }
    if let Some(limit) = args.pids_limit {
        resources.pids = Some(Pids { limit });
    }
    if args.cpu_shares.is_some() || args.cpu_quota.is_some() || args.cpu_period.is_some() {
        let cpu = resources.cpu.get_or_insert_with(Cpu::default);
        cpu.shares = args.cpu_shares.or(cpu.shares);
        cpu.quota = args.cpu_quota.or(cpu.quota);
        cpu.period = args.cpu_period.or(cpu.period);
    }
    berth_oci::lifecycle::update(store, &args.id, &resources)?;
    Ok(0)
}
