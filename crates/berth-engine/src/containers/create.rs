//! `create`: a Docker API create request, merged with the image config,
//! validated, and stored. Nothing runs yet.

mod error;

use std::collections::BTreeMap;

use berth_runtime::cgroups::{Limit, Resources};
use berth_runtime::devices::DeviceRule;
use berth_store::{ContainerRow, ContainerStoreError};
use berth_types::container::CreateRequest;

pub use self::error::CreateError;
use super::merge::{merge_process, UserProcess};
use super::names::{check_name, generate_name, new_id};
use super::paths::ContainerPaths;
use super::record::{
    ContainerRecord, DeviceMapping, MountRequest, MountSource, RestartPolicy, RunSettings,
    SeccompChoice, Ulimit,
};
use super::state::{now, ContainerState};
use crate::images::{read_config, resolve_image};
use crate::networks::ports::PortRequest;
use crate::networks::{NetworkError, NetworkRequest};
use crate::{Engine, EngineError};

/// The networks a container joins at each start. Docker's rules: the mode
/// names the first network; address, alias and MAC settings come from the
/// endpoint settings of that network (aliases and addresses only on
/// user-defined networks); further endpoints join further networks.
/// `--add-host NAME:host-gateway`: Docker writes the address of its default bridge's gateway
/// (docker0's, unless the daemon's `host-gateway-ip` says otherwise); berth writes its own
/// default bridge's. Other entries are kept as given.
fn resolve_host_gateway(
    engine: &mut Engine,
    entries: &[String],
) -> Result<Vec<String>, EngineError> {
    let gateway_marker = format!(":{}", berth_types::container::validate::HOST_GATEWAY);
    if !entries.iter().any(|entry| entry.ends_with(&gateway_marker)) {
        return Ok(entries.to_vec());
    }
    let (store, kernel) = engine.network_parts();
    let bridge = crate::networks::find_network(store, kernel, "bridge")?;
    let gateway = bridge.record.gateway.clone();
    if gateway.is_empty() {
        return Err(CreateError::NoHostGateway.into());
    }
    Ok(entries
        .iter()
        .map(|entry| match entry.strip_suffix(&gateway_marker) {
            Some(name) => format!("{name}:{gateway}"),
            None => entry.clone(),
        })
        .collect())
}

fn network_requests(
    engine: &mut Engine,
    mode: &str,
    request: &CreateRequest,
) -> Result<Vec<NetworkRequest>, EngineError> {
    let endpoints = request.networking_config.endpoints_config.clone();
    if mode == "host" || mode == "none" || mode.starts_with("container:") {
        if let Some(container) = mode.strip_prefix("container:") {
            if container.is_empty() {
                return Err(CreateError::EmptyContainerMode.into());
            }
        }
        return Ok(Vec::new());
    }
    let (store, kernel) = engine.network_parts();
    let mut requests = Vec::new();
    let first = if mode == "default" { "bridge" } else { mode };
    let mut names: Vec<&str> = vec![first];
    names.extend(
        endpoints
            .keys()
            .map(String::as_str)
            .filter(|name| *name != first && *name != "default"),
    );
    for name in names {
        let mut settings = endpoints
            .get(name)
            .or_else(|| (name == first).then(|| endpoints.get("default")).flatten())
            .cloned()
            .unwrap_or_default();
        // The deprecated `Config.MacAddress` is the first network's MAC.
        if name == first && settings.mac_address.is_empty() {
            settings.mac_address.clone_from(&request.config.mac_address);
        }
        // A network that does not exist yet is looked up at each start,
        // as dockerd does (its create succeeds, its start fails).
        let network = match crate::networks::find_network(store, kernel, name) {
            Err(EngineError::Network(NetworkError::NotFound(_))) => {
                requests.push(NetworkRequest::awaiting_network(name, &settings)?);
                continue;
            }
            found => found?,
        };
        let request = NetworkRequest::for_endpoint(&network, &settings)?;
        if !network.is_bridge() {
            return Err(CreateError::HostNetwork {
                network: network.name,
            }
            .into());
        }
        requests.push(request);
    }
    Ok(requests)
}

/// `-p` bindings and, with `-P`, every port the image or `--expose` exposes.
fn port_requests(
    mode: &str,
    request: &CreateRequest,
    image: &berth_types::image::ImageConfig,
) -> Result<Vec<PortRequest>, EngineError> {
    let host = &request.host_config;
    let bindings = host.port_bindings.clone().unwrap_or_default();
    if mode.starts_with("container:") && (!bindings.is_empty() || host.publish_all_ports) {
        return Err(CreateError::PortsWithContainerMode.into());
    }
    if mode == "host" || mode == "none" {
        // Docker discards published ports without these namespaces.
        return Ok(Vec::new());
    }
    let mut exposed: Vec<String> = request.config.exposed_ports.keys().cloned().collect();
    if let Some(image_ports) = image
        .config
        .as_ref()
        .and_then(|config| config.exposed_ports.as_ref())
    {
        exposed.extend(image_ports.keys().cloned());
    }
    exposed.sort();
    exposed.dedup();
    crate::networks::ports::port_requests(&bindings, &exposed, host.publish_all_ports)
        .map_err(|error| NetworkError::from(error).into())
}

/// `Config.ExposedPorts` as dockerd stores it: the image's, the request's
/// (`--expose`) and every published port (`-p`), as `PORT/PROTO`.
fn exposed_ports(request: &CreateRequest, image: &berth_types::image::ImageConfig) -> Vec<String> {
    let image_ports = image
        .config
        .as_ref()
        .and_then(|config| config.exposed_ports.as_ref());
    let published = request.host_config.port_bindings.as_ref();
    let mut ports: Vec<String> = request
        .config
        .exposed_ports
        .keys()
        .chain(image_ports.into_iter().flat_map(|ports| ports.keys()))
        .chain(published.into_iter().flat_map(|bindings| bindings.keys()))
        .map(|port| {
            if port.contains('/') {
                port.to_ascii_lowercase()
            } else {
                format!("{port}/tcp")
            }
        })
        .collect();
    ports.sort();
    ports.dedup();
    ports
}

/// Whether an image config is for `wanted` (`--platform`): os and architecture equal, and the
/// variant too when both name one (arm64's default variant is usually left out).
fn config_fits_platform(
    config: &berth_types::image::ImageConfig,
    wanted: &berth_types::image::Platform,
) -> bool {
    let variant_fits = match (&wanted.variant, &config.variant) {
        (Some(wanted), Some(actual)) => wanted == actual,
        _ => true,
    };
    config.os == wanted.os && config.architecture == wanted.architecture && variant_fits
}

/// The platform of the local image `reference` (`linux/amd64`) when it is not `wanted`; None
/// when it fits or is not there. For the CLI's pull decision: Docker treats a local image of
/// another platform as missing and pulls the one asked for.
pub fn local_platform_mismatch(
    engine: &Engine,
    reference: &str,
    wanted: &berth_types::image::Platform,
) -> Result<Option<String>, EngineError> {
    let image = match resolve_image(engine.store(), reference) {
        Ok(image) => image,
        Err(EngineError::NoSuchImage(_)) => return Ok(None),
        Err(error) => return Err(error),
    };
    let config = read_config(engine.store(), &image)?;
    Ok((!config_fits_platform(&config, wanted)).then(|| {
        berth_types::container::platform::format_platform(&berth_types::image::Platform {
            os: config.os.clone(),
            architecture: config.architecture.clone(),
            variant: config.variant.clone(),
        })
    }))
}

/// The warnings of creating a container with these settings, as Docker's
/// create answers them (`Warnings`; the CLI prints each as `WARNING: …`):
/// an image of another platform than the host's when none was asked for
/// (dockerd's words; it runs, and fails to exec unless the host emulates
/// it), and a VM container's TCG emulation.
pub fn create_warnings(engine: &Engine, request: &CreateRequest) -> Vec<String> {
    let Ok(request) = super::vm::with_default_runtime(request) else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    if request.platform.is_none() {
        let host = berth_registry::client::host_platform();
        if let Ok(Some(actual)) = local_platform_mismatch(engine, &request.config.image, &host) {
            warnings.push(format!(
                "The requested image's platform ({actual}) does not match the detected host \
                 platform ({}) and no specific platform was requested",
                berth_types::container::platform::format_platform(&host)
            ));
        }
    }
    warnings.extend(super::vm::accelerator_warning(&request));
    warnings
}

/// Creates the container; returns its id.
pub fn create_container(
    engine: &mut Engine,
    request: &CreateRequest,
) -> Result<String, EngineError> {
    let record = build_record(engine, request, new_id())?;
    create_volumes_with_options(engine, request, &record)?;
    insert_record(engine, record, request.name.is_some())
}

/// `--mount type=volume,volume-opt=K=V` (`VolumeOptions.DriverConfig`):
/// dockerd creates the volume with those options and labels when it does
/// not exist yet (an existing volume is used as it is). An anonymous one
/// is the record's volume at the same destination.
fn create_volumes_with_options(
    engine: &Engine,
    request: &CreateRequest,
    record: &ContainerRecord,
) -> Result<(), EngineError> {
    for mount in request.host_config.mounts.iter().flatten() {
        let Some(volume) = mount.volume_options.as_ref() else {
            continue;
        };
        let options = volume
            .driver_config
            .as_ref()
            .map(|driver| &driver.options)
            .filter(|options| !options.is_empty());
        let Some(options) = options else {
            continue;
        };
        let name = record
            .run
            .mounts
            .iter()
            .find_map(|made| match &made.source {
                MountSource::Volume { name } if made.destination == mount.target => Some(name),
                _ => None,
            });
        if let Some(name) = name {
            let anonymous = mount.source.is_empty();
            crate::volumes::create_volume(engine, name, &volume.labels, options, anonymous)?;
        }
    }
    Ok(())
}

/// The record `request` makes for a container with id `id`, merged with
/// the image config and validated; its name is the requested one (empty
/// without). Nothing is stored.
pub(crate) fn build_record(
    engine: &mut Engine,
    request: &CreateRequest,
    id: String,
) -> Result<ContainerRecord, EngineError> {
    let request =
        &*super::vm::with_default_runtime(request).map_err(EngineError::InvalidArgument)?;
    let isolation = super::record::Isolation::of_request(
        &request.host_config.isolation,
        &request.host_config.runtime,
    );
    let request = &*super::vm::resolve_virtiofs_mounts(request, isolation)
        .map_err(EngineError::InvalidArgument)?;
    let image = resolve_image(engine.store(), &request.config.image)?;
    let image_config = read_config(engine.store(), &image)?;
    if let Some(wanted) = &request.platform {
        // Docker: the image of the wanted platform is not here (it is not found, so the
        // docker CLI pulls it); running the other one would be wrong without a word.
        if !config_fits_platform(&image_config, wanted) {
            return Err(EngineError::NoSuchImage(request.config.image.clone()));
        }
    }
    if let Some(name) = &request.name {
        check_name(name).map_err(CreateError::from)?;
    }
    let config = &request.config;
    let host = &request.host_config;
    super::unsupported::refuse_unsupported(engine.store(), engine.config(), request)?;
    if isolation == super::record::Isolation::Vm {
        super::vm::refuse_foreign_image(&config.image, &image_config)
            .map_err(EngineError::InvalidArgument)?;
    }
    let (log_config, log) = super::logging::resolve_log_config(
        &host.log_config,
        &super::logging::default_log_config()?,
    )?;

    let user = UserProcess {
        entrypoint: config.entrypoint.clone(),
        cmd: config.cmd.clone(),
        env: config.env.clone().unwrap_or_default(),
        working_dir: Some(config.working_dir.clone()).filter(|directory| !directory.is_empty()),
        user: Some(config.user.clone()).filter(|user| !user.is_empty()),
        labels: config.labels.clone().unwrap_or_default(),
        stop_signal: Some(config.stop_signal.clone()).filter(|signal| !signal.is_empty()),
    };
    let merged = merge_process(image_config.config.as_ref(), &user)?;
    if !merged.working_dir.is_empty() && !merged.working_dir.starts_with('/') {
        return Err(CreateError::RelativeWorkingDirectory {
            directory: merged.working_dir.clone(),
        }
        .into());
    }
    let network_mode = match host.network_mode.as_str() {
        "" | "default" => "bridge".to_owned(),
        mode => mode.to_owned(),
    };
    let links = super::links::resolve_links(
        engine.store(),
        engine.config(),
        host.links.as_deref().unwrap_or_default(),
        &network_mode,
    )?;
    if host.uts_mode == "host" && !config.hostname.is_empty() {
        return Err(CreateError::HostnameWithHostUts.into());
    }
    let hostname = if !config.hostname.is_empty() {
        config.hostname.clone()
    } else if network_mode == "host" {
        // Docker: a host-network container takes the host's name.
        nix::unistd::gethostname()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|_| id[..12].to_owned())
    } else {
        id[..12].to_owned()
    };
    let run = RunSettings {
        args: merged.args(),
        env: merged.env.clone(),
        working_dir: merged.working_dir.clone(),
        user: merged.user.clone(),
        group_add: host.group_add.clone().unwrap_or_default(),
        hostname: hostname.clone(),
        domainname: config.domainname.clone(),
        tty: config.tty,
        open_stdin: config.open_stdin,
        auto_remove: host.auto_remove,
        restart: RestartPolicy {
            name: host.restart_policy.name.clone(),
            maximum_retry_count: u32::try_from(host.restart_policy.maximum_retry_count)
                .unwrap_or(0),
        },
        privileged: host.privileged,
        cap_add: host.cap_add.clone().unwrap_or_default(),
        cap_drop: host.cap_drop.clone().unwrap_or_default(),
        no_new_privileges: security_flag(host.security_opt.as_deref(), "no-new-privileges"),
        seccomp: seccomp_choice(host.security_opt.as_deref()),
        readonly_rootfs: host.readonly_rootfs,
        init: host.init.unwrap_or(false),
        shm_size: u64::try_from(host.shm_size).unwrap_or(0),
        networks: network_requests(engine, &network_mode, request)?,
        ports: port_requests(&network_mode, request, &image_config)?,
        network_mode,
        dns: host.dns.clone().unwrap_or_default(),
        dns_search: host.dns_search.clone().unwrap_or_default(),
        dns_options: host.dns_options.clone().unwrap_or_default(),
        extra_hosts: resolve_host_gateway(engine, host.extra_hosts.as_deref().unwrap_or_default())?,
        mounts: mounts(request, &image_config, volumes_from(engine, request)?)?,
        resources: resources(&host.resources)?,
        ulimits: host
            .resources
            .ulimits
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|limit| {
                let value = |number: i64| u64::try_from(number).unwrap_or(u64::MAX);
                Ulimit {
                    name: limit.name,
                    soft: value(limit.soft),
                    hard: value(limit.hard),
                }
            })
            .collect(),
        stop_signal: merged.stop_signal.clone(),
        stop_timeout: config.stop_timeout,
        labels: merged.labels.clone(),
        cgroupns_host: host.cgroupns_mode == "host",
        devices: device_mappings(&host.resources)?,
        device_cgroup_rules: device_cgroup_rules(&host.resources)?,
        pid_mode: host.pid_mode.clone(),
        // `shareable` is the default (empty): a namespace of its own that
        // others may join; `private` is one that others may not.
        ipc_mode: match host.ipc_mode.as_str() {
            "shareable" => String::new(),
            mode => mode.to_owned(),
        },
        uts_mode: host.uts_mode.clone(),
        oom_score_adj: i32::try_from(host.oom_score_adj).unwrap_or(0),
        isolation: super::record::Isolation::of_request(&host.isolation, &host.runtime),
        log,
        links,
        exposed_ports: exposed_ports(request, &image_config),
    };
    for limit in &run.ulimits {
        if berth_runtime::spec::rlimit_resource(&limit.name).is_none() {
            return Err(CreateError::InvalidUlimit {
                name: limit.name.clone(),
            }
            .into());
        }
    }
    if !matches!(
        run.restart.name.as_str(),
        "" | "no" | "always" | "unless-stopped" | "on-failure"
    ) {
        return Err(CreateError::InvalidRestartPolicy {
            name: run.restart.name.clone(),
        }
        .into());
    }

    // What `inspect` shows: the request as Docker stores it, with the
    // merged values filled in.
    let mut stored_config = config.clone();
    stored_config.hostname = hostname;
    stored_config.env = Some(merged.env);
    stored_config.cmd = Some(merged.cmd).filter(|cmd| !cmd.is_empty());
    stored_config.entrypoint = Some(merged.entrypoint).filter(|entrypoint| !entrypoint.is_empty());
    stored_config.working_dir = merged.working_dir;
    stored_config.user = merged.user;
    stored_config.labels = Some(merged.labels);
    stored_config.exposed_ports = run
        .exposed_ports
        .iter()
        .map(|port| (port.clone(), berth_types::container::config::EmptyObject))
        .collect();
    // The image's HEALTHCHECK under the user's settings, field by field; the
    // monitor runs what `Config.Healthcheck` says (`super::health`).
    let image_healthcheck: Option<berth_types::container::HealthConfig> = image_config
        .config
        .as_ref()
        .and_then(|config| config.extra.get("Healthcheck"))
        .and_then(|value| serde_json::from_value(value.clone()).ok());
    stored_config.healthcheck =
        super::health::merge_healthcheck(image_healthcheck.as_ref(), config.healthcheck.as_ref());
    let mut stored_host = host.clone();
    if stored_host.network_mode.is_empty() {
        stored_host.network_mode = "bridge".to_owned();
    }
    // dockerd's default IPC mode (`default-ipc-mode`), which berth's own
    // namespace is until another container joins it.
    if stored_host.ipc_mode.is_empty() {
        stored_host.ipc_mode = "shareable".to_owned();
    }
    stored_host.log_config = log_config;

    let config_json = serde_json::to_value(&stored_config).map_err(CreateError::Serialize)?;
    let host_config_json = serde_json::to_value(&stored_host).map_err(CreateError::Serialize)?;
    let record = ContainerRecord {
        id: id.clone(),
        name: request
            .name
            .clone()
            .map(|name| name.trim_start_matches('/').to_owned())
            .unwrap_or_default(),
        image_id: image.id.to_string(),
        image_name: config.image.clone(),
        created: now(),
        run,
        config: config_json,
        host_config: host_config_json,
    };
    Ok(record)
}

/// Stores `record` (a generated name when `named` is false) and makes its
/// directory; returns its id. A taken name is Docker's conflict error.
pub(crate) fn insert_record(
    engine: &mut Engine,
    mut record: ContainerRecord,
    named: bool,
) -> Result<String, EngineError> {
    let id = record.id.clone();
    for attempt in 0..10 {
        if !named {
            record.name = generate_name(attempt);
        }
        let row = ContainerRow {
            id: id.clone(),
            name: record.name.clone(),
            image_id: record.image_id.clone(),
            created: record.created.clone(),
            record: serde_json::to_string(&record).map_err(CreateError::Serialize)?,
            state: serde_json::to_string(&ContainerState::default())
                .map_err(CreateError::Serialize)?,
        };
        match engine.store_mut().insert_container(&row) {
            Ok(()) => {
                let config = engine.config();
                let paths = ContainerPaths::new(&config.root, &config.run_root, &id);
                fs_err::create_dir_all(&paths.directory).map_err(|source| {
                    CreateError::CreateDirectory {
                        path: paths.directory.clone(),
                        source,
                    }
                })?;
                create_volumes(engine, &record)?;
                crate::events::emit_container(engine.store(), "create", &record);
                return Ok(id);
            }
            Err(ContainerStoreError::NameInUse(taken)) if named => {
                let holder = engine
                    .store()
                    .container_by_name(&taken)?
                    .map(|row| row.id)
                    .unwrap_or_default();
                return Err(EngineError::NameInUse {
                    name: taken,
                    id: holder,
                });
            }
            Err(ContainerStoreError::NameInUse(_)) => {}
            Err(ContainerStoreError::Store(error)) => return Err(error.into()),
        }
    }
    Err(CreateError::NameGeneration.into())
}

/// `no-new-privileges`, `no-new-privileges:true`, `no-new-privileges=true`.
fn security_flag(options: Option<&[String]>, flag: &str) -> bool {
    options.unwrap_or_default().iter().any(|option| {
        let (key, value) = option.split_once([':', '=']).unwrap_or((option, "true"));
        key == flag && value != "false"
    })
}

fn seccomp_choice(options: Option<&[String]>) -> SeccompChoice {
    for option in options.unwrap_or_default() {
        if let Some((key, value)) = option.split_once(['=', ':']) {
            if key == "seccomp" {
                return match value {
                    "unconfined" => SeccompChoice::Unconfined,
                    "builtin" | "" => SeccompChoice::Default,
                    json => SeccompChoice::Custom(json.to_owned()),
                };
            }
        }
    }
    SeccompChoice::Default
}

/// `--device` mappings as the API gives them: an empty container path is the
/// host path, empty permissions are `rwm` (the CLI fills both in already).
/// Driver requests (`--gpus`, CDI names) are refused: berth has no device
/// drivers, and a run must not start without the devices it asked for.
fn device_mappings(
    requested: &berth_types::container::Resources,
) -> Result<Vec<DeviceMapping>, EngineError> {
    if let Some(request) = requested.device_requests.iter().flatten().next() {
        let capabilities = request
            .capabilities
            .iter()
            .flatten()
            .map(|set| format!("[{}]", set.join(" ")))
            .collect::<Vec<_>>()
            .join(" ");
        let driver = request.driver.clone();
        return Err(if request.driver == "cdi" {
            let names = request.device_ids.iter().flatten().cloned();
            CreateError::CdiDevices {
                driver,
                capabilities,
                devices: names.collect::<Vec<_>>().join(", "),
            }
        } else {
            CreateError::DeviceDriver {
                driver,
                capabilities,
            }
        }
        .into());
    }
    requested
        .devices
        .iter()
        .flatten()
        .map(|mapping| {
            let permissions = if mapping.cgroup_permissions.is_empty() {
                "rwm"
            } else {
                mapping.cgroup_permissions.as_str()
            };
            let access = berth_runtime::devices::Access::parse(permissions).ok_or_else(|| {
                CreateError::DeviceMode {
                    mode: permissions.to_owned(),
                }
            })?;
            let container_path = if mapping.path_in_container.is_empty() {
                mapping.path_on_host.clone()
            } else {
                mapping.path_in_container.clone()
            };
            if !container_path.starts_with('/') {
                return Err(CreateError::RelativeDevicePath {
                    path: container_path,
                }
                .into());
            }
            Ok(DeviceMapping {
                host_path: mapping.path_on_host.clone(),
                container_path,
                access,
            })
        })
        .collect()
}

/// `--device-cgroup-rule` values, with the daemon's error for a bad one.
fn device_cgroup_rules(
    requested: &berth_types::container::Resources,
) -> Result<Vec<DeviceRule>, EngineError> {
    requested
        .device_cgroup_rules
        .iter()
        .flatten()
        .map(|rule| DeviceRule::parse(rule).map_err(|error| CreateError::from(error).into()))
        .collect()
}

/// The runtime's limits for an API `Resources` (create, and the API's
/// `update`).
pub fn runtime_resources(
    requested: &berth_types::container::Resources,
) -> Result<Resources, EngineError> {
    resources(requested)
}

fn resources(requested: &berth_types::container::Resources) -> Result<Resources, EngineError> {
    let positive = |value: i64| u64::try_from(value).ok().filter(|value| *value > 0);
    let mut resources = Resources {
        memory: positive(requested.memory).map(Limit::Value),
        memory_reservation: positive(requested.memory_reservation).map(Limit::Value),
        cpu_shares: positive(requested.cpu_shares),
        cpu_period: positive(requested.cpu_period),
        cpu_quota: positive(requested.cpu_quota).map(Limit::Value),
        cpuset_cpus: Some(requested.cpuset_cpus.clone()).filter(|cpus| !cpus.is_empty()),
        cpuset_mems: Some(requested.cpuset_mems.clone()).filter(|mems| !mems.is_empty()),
        pids_limit: requested.pids_limit.map(Limit::from_docker_pids),
        blkio_weight: Some(requested.blkio_weight).filter(|weight| *weight > 0),
        ..Resources::default()
    };
    resources.memory_swap = Limit::from_docker_swap(requested.memory_swap);
    if let (Some(Limit::Value(memory)), None) = (resources.memory, resources.memory_swap) {
        // Docker's default: as much swap as memory (memory+swap = 2x).
        resources.memory_swap = Some(Limit::Value(memory.saturating_mul(2)));
    }
    if let (Some(Limit::Value(memory)), Some(Limit::Value(swap))) =
        (resources.memory, resources.memory_swap)
    {
        if swap < memory {
            return Err(CreateError::SwapBelowMemory.into());
        }
    }
    if let Some(Limit::Value(memory)) = resources.memory {
        if memory < 6 * 1024 * 1024 {
            return Err(CreateError::MemoryTooLow.into());
        }
    }
    if let Ok(nano) = u64::try_from(requested.nano_cpus) {
        if nano > 0 {
            if requested.cpu_quota > 0 || requested.cpu_period > 0 {
                return Err(CreateError::NanoCpusWithQuota.into());
            }
            let available =
                std::thread::available_parallelism().map_or(1, |count| count.get()) as u64;
            if nano > available * 1_000_000_000 {
                return Err(CreateError::TooManyCpus { available }.into());
            }
            resources.set_nano_cpus(nano);
        }
    }
    Ok(resources)
}

/// Binds, `--mount`, `--tmpfs` and the image's (anonymous) volumes.
/// `--volumes-from CONTAINER[:ro|rw]`: the other container's volumes and
/// bind mounts at their destinations (read-only with `ro`, else as they
/// are there), as dockerd copies them at create. Its tmpfs mounts are not
/// copied (`--tmpfs` is not one of dockerd's mount points; `--mount
/// type=tmpfs` is).
fn volumes_from(
    engine: &Engine,
    request: &CreateRequest,
) -> Result<Vec<MountRequest>, EngineError> {
    let mut copied: Vec<MountRequest> = Vec::new();
    for entry in request
        .host_config
        .volumes_from
        .as_deref()
        .unwrap_or_default()
    {
        let (name, mode) = entry.split_once(':').unwrap_or((entry.as_str(), ""));
        let writable = match mode {
            "" | "rw" => true,
            "ro" => false,
            other => {
                return Err(CreateError::VolumesFromMode {
                    mode: other.to_owned(),
                }
                .into())
            }
        };
        let source = super::find_container(engine.store(), engine.config(), name)?;
        for mount in source.record.run.mounts {
            if matches!(
                mount.source,
                MountSource::Tmpfs {
                    mount_point: false,
                    ..
                }
            ) {
                continue;
            }
            copied.retain(|earlier| earlier.destination != mount.destination);
            copied.push(MountRequest {
                readonly: mount.readonly || !writable,
                ..mount
            });
        }
    }
    Ok(copied)
}

/// The container's mounts: `-v`, `--mount` and `--tmpfs`, then what
/// `--volumes-from` copied (unless one of those has its destination), then
/// an anonymous volume for each image or `Config.Volumes` path still free.
fn mounts(
    request: &CreateRequest,
    image: &berth_types::image::ImageConfig,
    volumes_from: Vec<MountRequest>,
) -> Result<Vec<MountRequest>, EngineError> {
    let host = &request.host_config;
    let mut mounts: Vec<MountRequest> = Vec::new();
    for bind in host.binds.clone().unwrap_or_default() {
        let parts: Vec<&str> = bind.split(':').collect();
        let (source, destination, options) = match parts.as_slice() {
            [source, destination] => (*source, *destination, ""),
            [source, destination, options] => (*source, *destination, *options),
            _ => return Err(CreateError::VolumeSpecification { bind: bind.clone() }.into()),
        };
        let readonly = options.split(',').any(|option| option == "ro");
        if source.starts_with('/') && fs_err::symlink_metadata(source).is_err() {
            // Docker creates a missing `-v` host path as a directory, 0755
            // with its parents (`--mount` refuses instead).
            crate::permissions::create_host_directory_all(std::path::Path::new(source)).map_err(
                |error| CreateError::MountSourcePath {
                    path: source.to_owned(),
                    source: error,
                },
            )?;
        }
        let source = if source.starts_with('/') {
            MountSource::Bind {
                host_path: source.to_owned(),
                recursive: true,
            }
        } else {
            MountSource::Volume {
                name: source.to_owned(),
            }
        };
        mounts.push(MountRequest {
            source,
            destination: destination.to_owned(),
            readonly,
        });
    }
    for mount in host.mounts.clone().unwrap_or_default() {
        let source = match mount.r#type.as_str() {
            "bind" => MountSource::Bind {
                host_path: mount.source.clone(),
                recursive: !mount
                    .bind_options
                    .as_ref()
                    .is_some_and(|options| options.non_recursive),
            },
            "volume" => MountSource::Volume {
                name: if mount.source.is_empty() {
                    new_id()
                } else {
                    mount.source.clone()
                },
            },
            "tmpfs" => MountSource::Tmpfs {
                size: mount
                    .tmpfs_options
                    .as_ref()
                    .and_then(|options| u64::try_from(options.size_bytes).ok())
                    .filter(|size| *size > 0),
                mode: mount
                    .tmpfs_options
                    .as_ref()
                    .map(|options| options.mode)
                    .filter(|mode| *mode != 0),
                exec: false,
                mount_point: true,
            },
            other => {
                return Err(CreateError::MountType {
                    kind: other.to_owned(),
                }
                .into())
            }
        };
        if let MountSource::Bind { host_path, .. } = &source {
            if fs_err::metadata(host_path).is_err() {
                return Err(CreateError::BindSourceMissing {
                    path: host_path.clone(),
                }
                .into());
            }
        }
        mounts.push(MountRequest {
            source,
            destination: mount.target.clone(),
            readonly: mount.read_only,
        });
    }
    for (destination, options) in &host.tmpfs {
        let mut size = None;
        let mut mode = None;
        let mut readonly = false;
        let mut exec = false;
        for option in options.split(',').filter(|option| !option.is_empty()) {
            match option.split_once('=') {
                Some(("size", value)) => size = Some(parse_tmpfs_size(value)?),
                Some(("mode", value)) => {
                    mode =
                        Some(
                            u32::from_str_radix(value, 8).map_err(|_| CreateError::TmpfsMode {
                                value: value.to_owned(),
                            })?,
                        )
                }
                None if option == "ro" => readonly = true,
                None if option == "rw" => readonly = false,
                None if option == "exec" => exec = true,
                None if option == "noexec" => exec = false,
                // Always so in berth, as in Docker by default.
                None if option == "nosuid" || option == "nodev" => {}
                _ => {
                    return Err(CreateError::TmpfsOption {
                        option: option.to_owned(),
                        destination: destination.clone(),
                    }
                    .into())
                }
            }
        }
        mounts.push(MountRequest {
            source: MountSource::Tmpfs {
                size,
                mode,
                exec,
                mount_point: false,
            },
            destination: destination.clone(),
            readonly,
        });
    }
    for copied in volumes_from {
        if !mounts
            .iter()
            .any(|mount| mount.destination == copied.destination)
        {
            mounts.push(copied);
        }
    }
    let image_volumes: BTreeMap<String, serde_json::Value> = image
        .config
        .as_ref()
        .and_then(|config| config.volumes.clone())
        .unwrap_or_default();
    let anonymous = request.config.volumes.clone().unwrap_or_default();
    for destination in image_volumes
        .keys()
        .cloned()
        .chain(anonymous.keys().cloned())
    {
        if mounts.iter().any(|mount| mount.destination == destination) {
            continue;
        }
        mounts.push(MountRequest {
            source: MountSource::Volume { name: new_id() },
            destination,
            readonly: false,
        });
    }
    for mount in &mounts {
        if !mount.destination.starts_with('/') {
            return Err(CreateError::RelativeMountPath {
                path: mount.destination.clone(),
            }
            .into());
        }
    }
    Ok(mounts)
}

fn parse_tmpfs_size(value: &str) -> Result<u64, CreateError> {
    let (number, multiplier) = match value.to_ascii_lowercase().chars().last() {
        Some('k') => (&value[..value.len() - 1], 1024),
        Some('m') => (&value[..value.len() - 1], 1024 * 1024),
        Some('g') => (&value[..value.len() - 1], 1024 * 1024 * 1024),
        _ => (value, 1),
    };
    number
        .parse::<u64>()
        .map(|number| number * multiplier)
        .map_err(|_| CreateError::TmpfsSize {
            value: value.to_owned(),
        })
}

/// Named and anonymous volumes get their directory now; their content is
/// copied from the image at the first start (when the root is mounted).
fn create_volumes(engine: &Engine, record: &ContainerRecord) -> Result<(), EngineError> {
    for mount in &record.run.mounts {
        if let MountSource::Volume { name } = &mount.source {
            crate::volumes::ensure_volume(engine, name)?;
        }
    }
    Ok(())
}
