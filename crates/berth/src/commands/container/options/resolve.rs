//! From flags to a checked [`CreateRequest`]: docker CLI `parse()` (in its order, so
//! the first problem reported is Docker's), then the daemon's request checks.

use std::path::{Path, PathBuf};

use berth_types::container::capabilities::normalize_capability;
use berth_types::container::platform::parse_platform;
use berth_types::container::{
    ContainerConfig, CreateRequest, HealthConfig, HostConfig, LogConfig, NetworkingConfig,
    Resources, RestartPolicy,
};

use super::devices::{
    parse_blkio_weight, parse_bps_device, parse_devices, parse_iops_device, parse_ulimits,
    parse_weight_device, validate_cgroup_rule,
};
use super::env::{read_key_value_file, resolve_env, to_map, validate_label, EnvLookup};
use super::error::OptionsError;
use super::mount::parse_mount;
use super::network::{
    endpoints, is_mac_address, network_mode, parse_add_host, parse_dns, parse_dns_search,
    parse_network, validate_link, EndpointFlags,
};
use super::ports::parse_ports;
use super::security::{
    parse_log_options, parse_security_options, parse_storage_options, parse_sysctls,
};
use super::values::{
    parse_bool, parse_bytes, parse_duration, parse_i64, parse_nano_cpus, ValueError,
};
use super::volumes::{parse_tmpfs, parse_volumes};
use super::{CreateExtras, CreateOptions, PullPolicy, RunExtras, RunOptions, Stream};

/// The kernel's HOST_NAME_MAX; a longer name fails only when the container starts
/// (`sethostname: invalid argument`), so berth refuses it here.
const HOSTNAME_MAX: usize = 64;

/// Reads one flag value with `parse`, framing a failure as Docker does.
fn read<T>(
    flag: &'static str,
    value: Option<&String>,
    parse: impl Fn(&str) -> Result<T, ValueError>,
) -> Result<Option<T>, OptionsError> {
    value
        .map(|text| parse(text).map_err(|error| OptionsError::argument(flag, text, error)))
        .transpose()
}

fn flag_bool(flag: &'static str, value: &Option<String>) -> Result<Option<bool>, OptionsError> {
    read(flag, value.as_ref(), parse_bool)
}

fn non_empty<T>(list: Vec<T>) -> Option<Vec<T>> {
    (!list.is_empty()).then_some(list)
}

/// Everything a flag can say on its own, checked as the flag library would while
/// reading the command line.
struct FlagValues {
    interactive: bool,
    tty: bool,
    init: Option<bool>,
    auto_remove: bool,
    privileged: bool,
    publish_all: bool,
    read_only: bool,
    no_healthcheck: bool,
    oom_kill_disable: bool,
    quiet: bool,
    attach: Vec<Stream>,
    env: Vec<String>,
    cpu_shares: i64,
    cpu_period: i64,
    cpu_quota: i64,
    cpu_rt_period: i64,
    cpu_rt_runtime: i64,
    nano_cpus: i64,
    memory: i64,
    memory_reservation: i64,
    memory_swap: i64,
    memory_swappiness: i64,
    shm_size: i64,
    pids_limit: i64,
    oom_score_adj: i64,
    stop_timeout: Option<i64>,
    blkio_weight: u16,
    health_interval: i64,
    health_timeout: i64,
    health_start_period: i64,
    health_start_interval: i64,
    health_retries: i64,
}

fn read_flags(options: &CreateOptions, env: EnvLookup) -> Result<FlagValues, OptionsError> {
    let number = |flag, value: &Option<String>| read(flag, value.as_ref(), parse_i64);
    let bytes = |flag, value: &Option<String>| read(flag, value.as_ref(), parse_bytes);
    let duration = |flag, value: &Option<String>| read(flag, value.as_ref(), parse_duration);
    let mut attach = Vec::new();
    for value in &options.attach {
        let stream = match value.to_ascii_lowercase().as_str() {
            "stdin" => Stream::Stdin,
            "stdout" => Stream::Stdout,
            "stderr" => Stream::Stderr,
            _ => {
                return Err(OptionsError::docker(
                    "-a, --attach",
                    value,
                    "valid streams are STDIN, STDOUT and STDERR".to_owned(),
                ))
            }
        };
        attach.push(stream);
    }
    let env = options
        .env
        .iter()
        .map(|value| resolve_env(value, env))
        .collect::<Result<Vec<_>, _>>()?;
    for value in &options.label {
        validate_label(value)?;
    }
    // `--memory-swap -1` means unlimited; anything else is a size.
    let memory_swap = read("--memory-swap", options.memory_swap.as_ref(), |text| {
        if text == "-1" {
            Ok(-1)
        } else {
            parse_bytes(text)
        }
    })?;
    Ok(FlagValues {
        interactive: flag_bool("-i, --interactive", &options.interactive)?.unwrap_or(false),
        tty: flag_bool("-t, --tty", &options.tty)?.unwrap_or(false),
        init: flag_bool("--init", &options.init)?,
        auto_remove: flag_bool("--rm", &options.rm)?.unwrap_or(false),
        privileged: flag_bool("--privileged", &options.privileged)?.unwrap_or(false),
        publish_all: flag_bool("-P, --publish-all", &options.publish_all)?.unwrap_or(false),
        read_only: flag_bool("--read-only", &options.read_only)?.unwrap_or(false),
        no_healthcheck: flag_bool("--no-healthcheck", &options.no_healthcheck)?.unwrap_or(false),
        oom_kill_disable: flag_bool("--oom-kill-disable", &options.oom_kill_disable)?
            .unwrap_or(false),
        quiet: flag_bool("-q, --quiet", &options.quiet)?.unwrap_or(false),
        attach,
        env,
        cpu_shares: number("-c, --cpu-shares", &options.cpu_shares)?.unwrap_or(0),
        cpu_period: number("--cpu-period", &options.cpu_period)?.unwrap_or(0),
        cpu_quota: number("--cpu-quota", &options.cpu_quota)?.unwrap_or(0),
        cpu_rt_period: number("--cpu-rt-period", &options.cpu_rt_period)?.unwrap_or(0),
        cpu_rt_runtime: number("--cpu-rt-runtime", &options.cpu_rt_runtime)?.unwrap_or(0),
        nano_cpus: read("--cpus", options.cpus.as_ref(), parse_nano_cpus)?.unwrap_or(0),
        memory: bytes("-m, --memory", &options.memory)?.unwrap_or(0),
        memory_reservation: bytes("--memory-reservation", &options.memory_reservation)?
            .unwrap_or(0),
        memory_swap: memory_swap.unwrap_or(0),
        memory_swappiness: number("--memory-swappiness", &options.memory_swappiness)?.unwrap_or(-1),
        shm_size: bytes("--shm-size", &options.shm_size)?.unwrap_or(0),
        pids_limit: number("--pids-limit", &options.pids_limit)?.unwrap_or(0),
        oom_score_adj: number("--oom-score-adj", &options.oom_score_adj)?.unwrap_or(0),
        stop_timeout: number("--stop-timeout", &options.stop_timeout)?,
        blkio_weight: options
            .blkio_weight
            .as_deref()
            .map(parse_blkio_weight)
            .transpose()?
            .unwrap_or(0),
        health_interval: duration("--health-interval", &options.health_interval)?.unwrap_or(0),
        health_timeout: duration("--health-timeout", &options.health_timeout)?.unwrap_or(0),
        health_start_period: duration("--health-start-period", &options.health_start_period)?
            .unwrap_or(0),
        health_start_interval: duration("--health-start-interval", &options.health_start_interval)?
            .unwrap_or(0),
        health_retries: number("--health-retries", &options.health_retries)?.unwrap_or(0),
    })
}

fn parse_pull(value: Option<&str>) -> Result<PullPolicy, OptionsError> {
    match value.unwrap_or("missing") {
        "missing" | "" => Ok(PullPolicy::Missing),
        "always" => Ok(PullPolicy::Always),
        "never" => Ok(PullPolicy::Never),
        other => Err(OptionsError::PullPolicy(other.to_owned())),
    }
}

/// Docker's `ParseRestartPolicy`; the policy name itself is checked with the
/// daemon's rules later.
fn parse_restart(value: Option<&str>) -> Result<RestartPolicy, OptionsError> {
    let Some(value) = value.filter(|value| !value.is_empty()) else {
        return Ok(RestartPolicy {
            name: if value.is_some() { "" } else { "no" }.to_owned(),
            maximum_retry_count: 0,
        });
    };
    let (name, count) = value.split_once(':').unwrap_or((value, ""));
    if value.contains(':') && name.is_empty() {
        return Err(OptionsError::RestartPolicyNoName);
    }
    let maximum_retry_count = if count.is_empty() {
        0
    } else {
        count
            .parse::<i64>()
            .map_err(|_| OptionsError::RestartPolicyCount)?
    };
    Ok(RestartPolicy {
        name: name.to_owned(),
        maximum_retry_count,
    })
}

fn healthcheck(
    options: &CreateOptions,
    flags: &FlagValues,
) -> Result<Option<HealthConfig>, OptionsError> {
    let command = options.health_cmd.as_deref().unwrap_or_default();
    let has_settings = !command.is_empty()
        || flags.health_interval != 0
        || flags.health_timeout != 0
        || flags.health_start_period != 0
        || flags.health_retries != 0
        || flags.health_start_interval != 0;
    if flags.no_healthcheck {
        if has_settings {
            return Err(OptionsError::HealthcheckConflict);
        }
        return Ok(Some(HealthConfig {
            test: vec!["NONE".to_owned()],
            ..Default::default()
        }));
    }
    if !has_settings {
        return Ok(None);
    }
    let negative = [
        ("health-interval", flags.health_interval),
        ("health-timeout", flags.health_timeout),
        ("health-retries", flags.health_retries),
        ("health-start-period", flags.health_start_period),
        ("health-start-interval", flags.health_start_interval),
    ];
    if let Some((flag, _)) = negative.iter().find(|(_, value)| *value < 0) {
        return Err(OptionsError::NegativeHealthSetting(flag));
    }
    Ok(Some(HealthConfig {
        test: if command.is_empty() {
            Vec::new()
        } else {
            vec!["CMD-SHELL".to_owned(), command.to_owned()]
        },
        interval: flags.health_interval,
        timeout: flags.health_timeout,
        start_period: flags.health_start_period,
        start_interval: flags.health_start_interval,
        retries: flags.health_retries,
    }))
}

/// `--pid`, `--uts`, `--userns`, `--cgroupns` as the docker CLI checks them.
fn check_namespace_modes(options: &CreateOptions) -> Result<(), OptionsError> {
    let pid = options.pid.as_deref().unwrap_or_default();
    let pid_ok = matches!(pid, "" | "host") || {
        let mut parts = pid.split(':');
        parts.next() == Some("container")
            && parts.next().is_some_and(|name| !name.is_empty())
            && parts.next().is_none()
    };
    if !pid_ok {
        return Err(OptionsError::PidMode);
    }
    let simple = |mode: &Option<String>| {
        let mode = mode.as_deref().unwrap_or_default();
        matches!(mode.split(':').next(), Some("" | "host"))
    };
    if !simple(&options.uts) {
        return Err(OptionsError::UtsMode);
    }
    if !simple(&options.userns) {
        return Err(OptionsError::UsernsMode);
    }
    if !matches!(
        options.cgroupns.as_deref().unwrap_or_default(),
        "" | "host" | "private"
    ) {
        return Err(OptionsError::CgroupnsMode);
    }
    Ok(())
}

/// `-a`/`-i` into the three attach flags: `-i` always attaches stdin; without `-a`
/// stdout and stderr are attached.
fn attach_streams(flags: &FlagValues) -> [bool; 3] {
    let has = |stream| flags.attach.contains(&stream);
    let default = flags.attach.is_empty();
    [
        has(Stream::Stdin) || flags.interactive,
        has(Stream::Stdout) || default,
        has(Stream::Stderr) || default,
    ]
}

pub(super) fn resolve(
    options: &CreateOptions,
    env: EnvLookup,
    cwd: Option<&Path>,
) -> Result<(CreateRequest, CreateExtras), OptionsError> {
    let pull = parse_pull(options.pull.as_deref())?;
    let flags = read_flags(options, env)?;
    let request = build(options, &flags, env, cwd)?;
    request.validate()?;
    let extras = CreateExtras {
        pull,
        quiet: flags.quiet,
        container_id_file: options.cidfile.as_ref().map(PathBuf::from),
    };
    Ok((request, extras))
}

pub(super) fn resolve_run(
    options: &RunOptions,
    env: EnvLookup,
    cwd: Option<&Path>,
) -> Result<(CreateRequest, RunExtras), OptionsError> {
    let detach = flag_bool("-d, --detach", &options.detach)?.unwrap_or(false);
    let sig_proxy = flag_bool("--sig-proxy", &options.sig_proxy)?.unwrap_or(true);
    let (mut request, create) = resolve(&options.create, env, cwd)?;
    let config = &mut request.config;
    if detach {
        if !options.create.attach.is_empty() {
            return Err(OptionsError::AttachWithDetach);
        }
        config.attach_stdin = false;
        config.attach_stdout = false;
        config.attach_stderr = false;
        config.stdin_once = false;
    }
    let attach = [
        (config.attach_stdin, Stream::Stdin),
        (config.attach_stdout, Stream::Stdout),
        (config.attach_stderr, Stream::Stderr),
    ]
    .into_iter()
    .filter_map(|(on, stream)| on.then_some(stream))
    .collect();
    let auto_remove = request.host_config.auto_remove;
    Ok((
        request,
        RunExtras {
            create,
            detach,
            sig_proxy,
            detach_keys: options.detach_keys.clone(),
            attach,
            auto_remove,
        },
    ))
}

fn build(
    options: &CreateOptions,
    flags: &FlagValues,
    env: EnvLookup,
    cwd: Option<&Path>,
) -> Result<CreateRequest, OptionsError> {
    // Values each flag checks on its own while the command line is read.
    let dns = options
        .dns
        .iter()
        .map(|value| parse_dns(value))
        .collect::<Result<Vec<_>, _>>()?;
    let dns_search = options
        .dns_search
        .iter()
        .map(|value| parse_dns_search(value))
        .collect::<Result<Vec<_>, _>>()?;
    let extra_hosts = options
        .add_host
        .iter()
        .map(|value| parse_add_host(value))
        .collect::<Result<Vec<_>, _>>()?;
    for link in &options.link {
        validate_link(link)?;
    }
    for rule in &options.device_cgroup_rule {
        validate_cgroup_rule(rule)?;
    }
    let sysctls = parse_sysctls(&options.sysctl)?;
    let ulimits = parse_ulimits(&options.ulimit)?;
    let mounts = options
        .mount
        .iter()
        .map(|value| parse_mount(value, cwd))
        .collect::<Result<Vec<_>, _>>()?;
    let networks = options
        .network
        .iter()
        .map(|value| parse_network(value))
        .collect::<Result<Vec<_>, _>>()?;
    let weight_devices = options
        .blkio_weight_device
        .iter()
        .map(|value| parse_weight_device(value))
        .collect::<Result<Vec<_>, _>>()?;
    let bps = |flag, values: &[String]| {
        values
            .iter()
            .map(|value| parse_bps_device(flag, value))
            .collect::<Result<Vec<_>, _>>()
    };
    let iops = |flag, values: &[String]| {
        values
            .iter()
            .map(|value| parse_iops_device(flag, value))
            .collect::<Result<Vec<_>, _>>()
    };
    let read_bps = bps("--device-read-bps", &options.device_read_bps)?;
    let write_bps = bps("--device-write-bps", &options.device_write_bps)?;
    let read_iops = iops("--device-read-iops", &options.device_read_iops)?;
    let write_iops = iops("--device-write-iops", &options.device_write_iops)?;
    let platform = options
        .platform
        .as_deref()
        .filter(|platform| !platform.is_empty())
        .map(|platform| parse_platform(platform).map_err(OptionsError::Platform))
        .transpose()?;

    // Docker's parse(), in its order.
    if let Some(mac) = &options.mac_address {
        if !is_mac_address(mac.trim()) {
            return Err(OptionsError::MacAddress(mac.clone()));
        }
    }
    let swappiness = flags.memory_swappiness;
    if swappiness != -1 && !(0..=100).contains(&swappiness) {
        return Err(OptionsError::Swappiness(swappiness));
    }
    let volumes = parse_volumes(&options.volume, cwd)?;
    let tmpfs = parse_tmpfs(&options.tmpfs);
    let entrypoint = options
        .entrypoint
        .as_ref()
        .map(|entrypoint| vec![entrypoint.clone()]);
    let ports = parse_ports(&options.publish, &options.expose)?;
    let (devices, cdi_request) = parse_devices(&options.device)?;
    let mut environment = Vec::new();
    for path in &options.env_file {
        environment.extend(read_key_value_file(path, Some(env))?);
    }
    environment.extend(flags.env.iter().cloned());
    let mut labels = Vec::new();
    for path in &options.label_file {
        labels.extend(read_key_value_file(path, None)?);
    }
    labels.extend(options.label.iter().cloned());
    check_namespace_modes(options)?;
    let restart_policy = parse_restart(options.restart.as_deref())?;
    let log_driver = options.log_driver.clone().unwrap_or_default();
    let log_options = parse_log_options(&log_driver, &options.log_opt)?;
    let security = parse_security_options(&options.security_opt)?;
    let storage_options = parse_storage_options(&options.storage_opt)?;
    let health = healthcheck(options, flags)?;

    let [attach_stdin, attach_stdout, attach_stderr] = attach_streams(flags);
    let config = ContainerConfig {
        hostname: options.hostname.clone().unwrap_or_default(),
        domainname: options.domainname.clone().unwrap_or_default(),
        user: options.user.clone().unwrap_or_default(),
        attach_stdin,
        attach_stdout,
        attach_stderr,
        exposed_ports: ports.exposed,
        tty: flags.tty,
        open_stdin: flags.interactive,
        // Closing stdin when the attached client goes away, as `docker run -i`.
        stdin_once: flags.interactive && attach_stdin,
        env: non_empty(environment),
        cmd: non_empty(options.command().to_vec()),
        healthcheck: health,
        image: options.image().to_owned(),
        volumes: Some(volumes.anonymous),
        working_dir: options.workdir.clone().unwrap_or_default(),
        entrypoint,
        labels: Some(to_map(&labels)),
        stop_signal: options.stop_signal.clone().unwrap_or_default(),
        stop_timeout: flags.stop_timeout,
        ..Default::default()
    };
    let resources = Resources {
        cpu_shares: flags.cpu_shares,
        memory: flags.memory,
        nano_cpus: flags.nano_cpus,
        cgroup_parent: options.cgroup_parent.clone().unwrap_or_default(),
        blkio_weight: flags.blkio_weight,
        blkio_weight_device: Some(weight_devices),
        blkio_device_read_bps: Some(read_bps),
        blkio_device_write_bps: Some(write_bps),
        blkio_device_read_iops: Some(read_iops),
        blkio_device_write_iops: Some(write_iops),
        cpu_period: flags.cpu_period,
        cpu_quota: flags.cpu_quota,
        cpu_realtime_period: flags.cpu_rt_period,
        cpu_realtime_runtime: flags.cpu_rt_runtime,
        cpuset_cpus: options.cpuset_cpus.clone().unwrap_or_default(),
        cpuset_mems: options.cpuset_mems.clone().unwrap_or_default(),
        devices: Some(devices),
        device_cgroup_rules: non_empty(options.device_cgroup_rule.clone()),
        device_requests: cdi_request.map(|request| vec![request]),
        memory_reservation: flags.memory_reservation,
        memory_swap: flags.memory_swap,
        memory_swappiness: Some(flags.memory_swappiness),
        oom_kill_disable: Some(flags.oom_kill_disable),
        pids_limit: Some(flags.pids_limit),
        ulimits: Some(ulimits),
        ..Default::default()
    };
    let capabilities = |names: &[String]| {
        let mut normalized: Vec<String> = names
            .iter()
            .map(|name| normalize_capability(name))
            .collect();
        normalized.sort();
        normalized.dedup();
        non_empty(normalized)
    };
    let host_config = HostConfig {
        binds: volumes.binds,
        container_id_file: options.cidfile.clone().unwrap_or_default(),
        log_config: LogConfig {
            r#type: log_driver,
            config: Some(log_options),
        },
        network_mode: network_mode(&networks),
        port_bindings: Some(ports.bindings),
        restart_policy,
        auto_remove: flags.auto_remove,
        volume_driver: options.volume_driver.clone().unwrap_or_default(),
        volumes_from: non_empty(options.volumes_from.clone()),
        cap_add: capabilities(&options.cap_add),
        cap_drop: capabilities(&options.cap_drop),
        cgroupns_mode: options.cgroupns.clone().unwrap_or_default(),
        dns: Some(dns),
        dns_options: Some(options.dns_option.clone()),
        dns_search: Some(dns_search),
        extra_hosts: non_empty(extra_hosts),
        group_add: non_empty(options.group_add.clone()),
        ipc_mode: options.ipc.clone().unwrap_or_default(),
        links: non_empty(options.link.clone()),
        oom_score_adj: flags.oom_score_adj,
        pid_mode: options.pid.clone().unwrap_or_default(),
        privileged: flags.privileged,
        publish_all_ports: flags.publish_all,
        readonly_rootfs: flags.read_only,
        security_opt: security.options,
        storage_opt: storage_options,
        tmpfs,
        uts_mode: options.uts.clone().unwrap_or_default(),
        userns_mode: options.userns.clone().unwrap_or_default(),
        shm_size: flags.shm_size,
        sysctls,
        runtime: options.runtime.clone().unwrap_or_default(),
        isolation: options.isolation.clone().unwrap_or_default(),
        resources,
        mounts: non_empty(mounts),
        masked_paths: security.masked_paths,
        readonly_paths: security.readonly_paths,
        init: flags.init,
        ..Default::default()
    };
    if host_config.auto_remove && !host_config.restart_policy.is_none() {
        return Err(OptionsError::RestartWithRm);
    }
    let endpoint_flags = EndpointFlags {
        aliases: &options.network_alias,
        links: &options.link,
        ipv4_address: options.ip.as_deref().filter(|ip| !ip.is_empty()),
        ipv6_address: options.ip6.as_deref().filter(|ip| !ip.is_empty()),
        mac_address: options.mac_address.as_deref().filter(|mac| !mac.is_empty()),
        link_local_ips: &options.link_local_ip,
    };
    let networking_config = NetworkingConfig {
        endpoints_config: endpoints(&networks, endpoint_flags)?,
    };
    if config.hostname.len() > HOSTNAME_MAX {
        return Err(OptionsError::HostnameTooLong(config.hostname));
    }
    Ok(CreateRequest {
        name: options.name.clone().filter(|name| !name.is_empty()),
        config,
        host_config,
        networking_config,
        platform,
    })
}
