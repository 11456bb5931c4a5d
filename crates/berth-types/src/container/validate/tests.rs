//! Each check against the daemon's message for it. Messages were checked against
//! Docker Engine 20.10 (`docker create …` with the same settings) where that engine
//! makes the check at create time.

use super::*;
use crate::container::{
    EndpointIpamConfig, EndpointSettings, HealthConfig, Mount, PortBinding, RestartPolicy,
};

/// What `docker create busybox` sends, which the daemon accepts.
fn base() -> CreateRequest {
    let mut request = CreateRequest::default();
    request.config.image = "busybox".to_owned();
    request.host_config.network_mode = "default".to_owned();
    request.host_config.restart_policy.name = "no".to_owned();
    request.host_config.resources.memory_swappiness = Some(-1);
    request.host_config.resources.pids_limit = Some(0);
    request
        .networking_config
        .endpoints_config
        .insert("default".to_owned(), Default::default());
    request
}

type Change = fn(&mut CreateRequest);

#[track_caller]
fn check(cases: &[(&str, Change, &str)]) {
    for (what, change, message) in cases {
        let mut request = base();
        change(&mut request);
        match request.validate() {
            Ok(()) => assert!(message.is_empty(), "{what}: accepted, expected {message:?}"),
            Err(error) => assert_eq!(error.to_string(), *message, "{what}"),
        }
    }
}

fn strings(items: &[&str]) -> Option<Vec<String>> {
    Some(items.iter().map(|item| (*item).to_owned()).collect())
}

#[test]
fn base_request_is_valid() {
    assert_eq!(base().validate(), Ok(()));
}

#[test]
fn names_and_config() {
    check(&[
        ("name", |r| r.name = Some("web_1.a-b".to_owned()), ""),
        (
            "name with space",
            |r| r.name = Some("a b".to_owned()),
            "Invalid container name (a b), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed",
        ),
        (
            "one letter",
            |r| r.name = Some("a".to_owned()),
            "Invalid container name (a), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed",
        ),
        (
            "relative workdir",
            |r| r.config.working_dir = "rel".to_owned(),
            "the working directory 'rel' is invalid, it needs to be an absolute path",
        ),
        (
            "stop signal",
            |r| r.config.stop_signal = "SIGFOO".to_owned(),
            "Invalid signal: SIGFOO",
        ),
        (
            "stop signal 0",
            |r| r.config.stop_signal = "0".to_owned(),
            "Invalid signal: 0",
        ),
        (
            "stop signal ok",
            |r| r.config.stop_signal = "kill".to_owned(),
            "",
        ),
        (
            "empty env name",
            |r| r.config.env = strings(&["A=1", "=x"]),
            "invalid environment variable: =x",
        ),
        ("bare env name", |r| r.config.env = strings(&["UNSET"]), ""),
        (
            "health interval",
            |r| {
                r.config.healthcheck = Some(HealthConfig {
                    interval: 999_999,
                    ..Default::default()
                })
            },
            "Interval in Healthcheck cannot be less than 1ms",
        ),
        (
            "health timeout",
            |r| {
                r.config.healthcheck = Some(HealthConfig {
                    timeout: 1,
                    ..Default::default()
                })
            },
            "Timeout in Healthcheck cannot be less than 1ms",
        ),
        (
            "health retries",
            |r| {
                r.config.healthcheck = Some(HealthConfig {
                    retries: -1,
                    start_period: 1,
                    ..Default::default()
                })
            },
            "Retries in Healthcheck cannot be negative",
        ),
        (
            "health start period",
            |r| {
                r.config.healthcheck = Some(HealthConfig {
                    start_period: 5,
                    ..Default::default()
                })
            },
            "StartPeriod in Healthcheck cannot be less than 1ms",
        ),
    ]);
}

#[test]
fn restart_policies_and_host_settings() {
    check(&[
        (
            "always",
            |r| r.host_config.restart_policy.name = "always".to_owned(),
            "",
        ),
        (
            "empty",
            |r| r.host_config.restart_policy.name = String::new(),
            "",
        ),
        (
            "unknown",
            |r| r.host_config.restart_policy.name = "foo".to_owned(),
            "invalid restart policy 'foo'",
        ),
        (
            "always:3",
            |r| {
                r.host_config.restart_policy = RestartPolicy {
                    name: "always".to_owned(),
                    maximum_retry_count: 3,
                }
            },
            "maximum retry count cannot be used with restart policy 'always'",
        ),
        (
            "no:2",
            |r| {
                r.host_config.restart_policy = RestartPolicy {
                    name: "no".to_owned(),
                    maximum_retry_count: 2,
                }
            },
            "maximum retry count cannot be used with restart policy 'no'",
        ),
        (
            "on-failure:-1",
            |r| {
                r.host_config.restart_policy = RestartPolicy {
                    name: "on-failure".to_owned(),
                    maximum_retry_count: -1,
                }
            },
            "maximum retry count cannot be negative",
        ),
        (
            "auto remove with restart",
            |r| {
                r.host_config.auto_remove = true;
                r.host_config.restart_policy.name = "always".to_owned();
            },
            "can't create 'AutoRemove' container with restart policy",
        ),
        (
            "auto remove with no",
            |r| r.host_config.auto_remove = true,
            "",
        ),
        (
            "cap",
            |r| r.host_config.cap_add = strings(&["net_admin", "ALL", "CAP_BPF"]),
            "",
        ),
        (
            "unknown cap add",
            |r| r.host_config.cap_add = strings(&["foo"]),
            "invalid CapAdd: unknown capability: \"CAP_FOO\"",
        ),
        (
            "unknown cap drop",
            |r| r.host_config.cap_drop = strings(&["bar"]),
            "invalid CapDrop: unknown capability: \"CAP_BAR\"",
        ),
        (
            "isolation",
            |r| r.host_config.isolation = "hyperv".to_owned(),
            "Invalid isolation: \"hyperv\" - linux only supports 'default' or 'vm'",
        ),
        (
            "isolation vm",
            |r| r.host_config.isolation = "vm".to_owned(),
            "",
        ),
        (
            "extra host",
            |r| r.host_config.extra_hosts = strings(&["foo"]),
            "bad format for add-host: \"foo\"",
        ),
        (
            "extra host ip",
            |r| r.host_config.extra_hosts = strings(&["foo:bar"]),
            "invalid IP address in add-host: \"bar\"",
        ),
        (
            "extra host ok",
            |r| r.host_config.extra_hosts = strings(&["a:1.2.3.4", "b:::1", "gw:host-gateway"]),
            "",
        ),
        (
            "port key",
            |r| {
                r.host_config.port_bindings = Some([("x/tcp".to_owned(), vec![])].into());
            },
            "invalid port specification: \"x\"",
        ),
        (
            "host port",
            |r| {
                r.host_config.port_bindings = Some(
                    [(
                        "80/tcp".to_owned(),
                        vec![PortBinding {
                            host_ip: String::new(),
                            host_port: "99999".to_owned(),
                        }],
                    )]
                    .into(),
                );
            },
            "invalid port specification: \"99999\"",
        ),
        (
            "host port range",
            |r| {
                r.host_config.port_bindings = Some(
                    [(
                        "80/tcp".to_owned(),
                        vec![PortBinding {
                            host_ip: String::new(),
                            host_port: "8000-8010".to_owned(),
                        }],
                    )]
                    .into(),
                );
            },
            "",
        ),
        (
            "ipc",
            |r| r.host_config.ipc_mode = "bogus".to_owned(),
            "invalid IPC mode: bogus",
        ),
        (
            "ipc container",
            |r| r.host_config.ipc_mode = "container:".to_owned(),
            "invalid IPC mode: container:",
        ),
        (
            "ipc shareable",
            |r| r.host_config.ipc_mode = "shareable".to_owned(),
            "",
        ),
        (
            "pid",
            |r| r.host_config.pid_mode = "container:".to_owned(),
            "invalid PID mode: container:",
        ),
        (
            "pid container",
            |r| r.host_config.pid_mode = "container:db".to_owned(),
            "",
        ),
        (
            "uts",
            |r| r.host_config.uts_mode = "container:x".to_owned(),
            "invalid UTS mode: container:x",
        ),
        (
            "userns",
            |r| r.host_config.userns_mode = "x".to_owned(),
            "invalid USER mode: x",
        ),
        (
            "cgroupns",
            |r| r.host_config.cgroupns_mode = "foo".to_owned(),
            "invalid cgroup namespace mode: foo",
        ),
        (
            "shm",
            |r| r.host_config.shm_size = -1,
            "SHM size can not be less than 0",
        ),
        (
            "oom",
            |r| r.host_config.oom_score_adj = 2000,
            "Invalid value 2000, range for oom score adj is [-1000, 1000]",
        ),
        ("oom low", |r| r.host_config.oom_score_adj = -1000, ""),
        (
            "security ok",
            |r| {
                r.host_config.security_opt = strings(&[
                    "no-new-privileges",
                    "no-new-privileges:false",
                    "label=disable",
                    "label:user:u",
                    "apparmor=unconfined",
                    "seccomp={\"defaultAction\":\"SCMP_ACT_ALLOW\"}",
                    "disable",
                ])
            },
            "",
        ),
        (
            "security no value",
            |r| r.host_config.security_opt = strings(&["foo"]),
            "invalid --security-opt 1: \"foo\"",
        ),
        (
            "security key",
            |r| r.host_config.security_opt = strings(&["foo=bar"]),
            "invalid --security-opt 2: \"foo=bar\"",
        ),
        (
            "security bool",
            |r| r.host_config.security_opt = strings(&["no-new-privileges:maybe"]),
            "invalid --security-opt 2: \"no-new-privileges:maybe\"",
        ),
    ]);
}

#[test]
fn resources() {
    const MIB: i64 = 1024 * 1024;
    check(&[
        (
            "memory",
            |r| r.host_config.resources.memory = 1024,
            "Minimum memory limit allowed is 6MB",
        ),
        (
            "memory ok",
            |r| r.host_config.resources.memory = 6 * MIB,
            "",
        ),
        (
            "swap below",
            |r| {
                r.host_config.resources.memory = 1024 * MIB;
                r.host_config.resources.memory_swap = 512 * MIB;
            },
            "Minimum memoryswap limit should be larger than memory limit, see usage",
        ),
        (
            "swap alone",
            |r| r.host_config.resources.memory_swap = 512 * MIB,
            "You should always set the Memory limit when using Memoryswap limit, see usage",
        ),
        (
            "swap unlimited",
            |r| {
                r.host_config.resources.memory = 64 * MIB;
                r.host_config.resources.memory_swap = -1;
            },
            "",
        ),
        (
            "swappiness",
            |r| r.host_config.resources.memory_swappiness = Some(200),
            "Invalid value: 200, valid memory swappiness range is 0-100",
        ),
        (
            "reservation",
            |r| r.host_config.resources.memory_reservation = 1,
            "Minimum memory reservation allowed is 6MB",
        ),
        (
            "reservation above",
            |r| {
                r.host_config.resources.memory = 10 * MIB;
                r.host_config.resources.memory_reservation = 20 * MIB;
            },
            "Minimum memory limit can not be less than memory reservation limit, see usage",
        ),
        (
            "nano and period",
            |r| {
                r.host_config.resources.nano_cpus = 1_000_000_000;
                r.host_config.resources.cpu_period = 100_000;
            },
            "Conflicting options: Nano CPUs and CPU Period cannot both be set",
        ),
        (
            "nano and quota",
            |r| {
                r.host_config.resources.nano_cpus = 1_000_000_000;
                r.host_config.resources.cpu_quota = 1000;
            },
            "Conflicting options: Nano CPUs and CPU Quota cannot both be set",
        ),
        (
            "period",
            |r| r.host_config.resources.cpu_period = 10,
            "CPU cfs period can not be less than 1ms (i.e. 1000) or larger than 1s (i.e. 1000000)",
        ),
        (
            "quota",
            |r| r.host_config.resources.cpu_quota = 10,
            "CPU cfs quota can not be less than 1ms (i.e. 1000)",
        ),
        (
            "quota unlimited",
            |r| r.host_config.resources.cpu_quota = -1,
            "",
        ),
        (
            "blkio",
            |r| r.host_config.resources.blkio_weight = 5,
            "Range of blkio weight is from 10 to 1000",
        ),
        (
            "realtime",
            |r| {
                r.host_config.resources.cpu_realtime_period = 1000;
                r.host_config.resources.cpu_realtime_runtime = 2000;
            },
            "cpu real-time runtime cannot be higher than cpu real-time period",
        ),
        (
            "windows io",
            |r| r.host_config.resources.io_maximum_iops = 5,
            "Invalid QoS settings: linux does not support Maximum IO Bandwidth or Maximum IO IOps",
        ),
    ]);
}

#[test]
fn network_modes_and_endpoints() {
    check(&[
        ("container:", |r| r.host_config.network_mode = "container:".to_owned(),
            "Invalid network mode: invalid container format container:<name|id>"),
        ("container alone", |r| r.host_config.network_mode = "container".to_owned(),
            "Invalid network mode: invalid container format container:<name|id>"),
        ("container + hostname", |r| {
            r.host_config.network_mode = "container:db".to_owned();
            r.config.hostname = "y".to_owned();
        }, "conflicting options: hostname and the network mode"),
        ("container + links", |r| {
            r.host_config.network_mode = "container:db".to_owned();
            r.host_config.links = strings(&["a:b"]);
        }, "conflicting options: container type network can't be used with links. This would result in undefined behavior"),
        ("container + dns", |r| {
            r.host_config.network_mode = "container:db".to_owned();
            r.host_config.dns = strings(&["1.1.1.1"]);
        }, "conflicting options: dns and the network mode"),
        ("container + hosts", |r| {
            r.host_config.network_mode = "container:db".to_owned();
            r.host_config.extra_hosts = strings(&["a:1.1.1.1"]);
        }, "conflicting options: custom host-to-IP mapping and the network mode"),
        ("host + mac", |r| {
            r.host_config.network_mode = "host".to_owned();
            r.networking_config.endpoints_config.insert("host".to_owned(), EndpointSettings {
                mac_address: "02:42:ac:11:00:02".to_owned(), ..Default::default() });
        }, "conflicting options: mac-address and the network mode"),
        ("container + publish", |r| {
            r.host_config.network_mode = "container:db".to_owned();
            r.host_config.publish_all_ports = true;
        }, "conflicting options: port publishing and the container type network mode"),
        ("container + expose", |r| {
            r.host_config.network_mode = "container:db".to_owned();
            r.config.exposed_ports.insert("80/tcp".to_owned(), Default::default());
        }, "conflicting options: port exposing and the container type network mode"),
        ("uts host + hostname", |r| {
            r.host_config.uts_mode = "host".to_owned();
            r.config.hostname = "y".to_owned();
        }, "conflicting options: hostname and the UTS mode"),
        ("host + links", |r| {
            r.host_config.network_mode = "host".to_owned();
            r.host_config.links = strings(&["a:b"]);
        }, "conflicting options: host type networking can't be used with links. This would result in undefined behavior"),
        ("ip on default", |r| {
            r.networking_config.endpoints_config.insert("default".to_owned(), EndpointSettings {
                ipam_config: Some(EndpointIpamConfig { ipv4_address: "1.2.3.4".to_owned(),
                    ..Default::default() }), ..Default::default() });
        }, "user specified IP address is supported on user defined networks only"),
        ("alias on bridge", |r| {
            r.networking_config.endpoints_config.insert("bridge".to_owned(), EndpointSettings {
                aliases: strings(&["a"]), ..Default::default() });
        }, "network-scoped alias is supported only for containers in user defined networks"),
        ("bad ipv4", |r| {
            r.networking_config.endpoints_config.insert("mynet".to_owned(), EndpointSettings {
                ipam_config: Some(EndpointIpamConfig { ipv4_address: "foo".to_owned(),
                    ..Default::default() }), ..Default::default() });
        }, "invalid IPv4 address: foo"),
        ("bad ipv6", |r| {
            r.networking_config.endpoints_config.insert("mynet".to_owned(), EndpointSettings {
                ipam_config: Some(EndpointIpamConfig { ipv6_address: "zz".to_owned(),
                    ..Default::default() }), ..Default::default() });
        }, "invalid IPv6 address: zz"),
        ("user network ip", |r| {
            r.networking_config.endpoints_config.insert("mynet".to_owned(), EndpointSettings {
                aliases: strings(&["web"]),
                ipam_config: Some(EndpointIpamConfig { ipv4_address: "172.30.0.5".to_owned(),
                    ipv6_address: "2001:db8::33".to_owned(), ..Default::default() }),
                ..Default::default() });
        }, ""),
    ]);
}

fn mount(kind: &str, source: &str, target: &str) -> Mount {
    Mount {
        r#type: kind.to_owned(),
        source: source.to_owned(),
        target: target.to_owned(),
        ..Default::default()
    }
}

#[test]
fn mounts_binds_tmpfs_and_volumes_from() {
    check(&[
        ("bind ok", |r| r.host_config.mounts = Some(vec![mount("bind", "/tmp", "/x")]), ""),
        ("no target", |r| r.host_config.mounts = Some(vec![mount("bind", "/tmp", "")]),
            "invalid mount config for type \"bind\": field Target must not be empty"),
        ("root target", |r| r.host_config.mounts = Some(vec![mount("volume", "", "/")]),
            "invalid mount config for type \"volume\": invalid specification: destination can't be '/'"),
        ("relative target", |r| r.host_config.mounts = Some(vec![mount("volume", "", "rel")]),
            "invalid mount config for type \"volume\": invalid mount path: 'rel' mount path must be absolute"),
        ("bind no source", |r| r.host_config.mounts = Some(vec![mount("bind", "", "/x")]),
            "invalid mount config for type \"bind\": field Source must not be empty"),
        ("bind relative", |r| r.host_config.mounts = Some(vec![mount("bind", "rel", "/x")]),
            "invalid mount config for type \"bind\": invalid mount path: 'rel' mount path must be absolute"),
        ("bind propagation", |r| {
            let mut bind = mount("bind", "/tmp", "/x");
            bind.bind_options = Some(crate::container::BindOptions {
                propagation: "bogus".to_owned(), ..Default::default() });
            r.host_config.mounts = Some(vec![bind]);
        }, "invalid mount config for type \"bind\": invalid propagation mode: bogus"),
        ("anonymous ro", |r| {
            let mut volume = mount("volume", "", "/x");
            volume.read_only = true;
            r.host_config.mounts = Some(vec![volume]);
        }, "invalid mount config for type \"volume\": must not set ReadOnly mode when using anonymous volumes"),
        ("tmpfs source", |r| r.host_config.mounts = Some(vec![mount("tmpfs", "a", "/x")]),
            "invalid mount config for type \"tmpfs\": field Source must not be specified"),
        ("unknown type", |r| r.host_config.mounts = Some(vec![mount("foo", "", "/x")]),
            "invalid mount config for type \"foo\": mount type unknown"),
        ("volume name", |r| r.host_config.mounts = Some(vec![mount("volume", "a@b", "/x")]),
            "create a@b: \"a@b\" includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path"),
        ("volume name short", |r| r.host_config.mounts = Some(vec![mount("volume", "v", "/x")]),
            "create v: volume name is too short, names should be at least two alphanumeric characters"),
        ("binds ok", |r| r.host_config.binds =
            strings(&["/tmp:/x:ro,z", "named:/data", "/anon", "vol:/y:nocopy", "/tmp:/z:rshared"]), ""),
        ("bind relative name", |r| r.host_config.binds = strings(&["rel/path:/ctr"]),
            "create rel/path: \"rel/path\" includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path"),
        ("bind home", |r| r.host_config.binds = strings(&["~/x:/ctr"]),
            "create ~/x: \"~/x\" includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path"),
        ("bind other driver", |r| {
            r.host_config.binds = strings(&["rel/path:/ctr"]);
            r.host_config.volume_driver = "nfs".to_owned();
        }, ""),
        ("bind relative target", |r| r.host_config.binds = strings(&["/tmp:rel"]),
            "invalid volume specification: '/tmp:rel': invalid mount config for type \"bind\": invalid mount path: 'rel' mount path must be absolute"),
        ("bind mode", |r| r.host_config.binds = strings(&["/tmp:/x:foo"]), "invalid mode: foo"),
        ("bind two modes", |r| r.host_config.binds = strings(&["/tmp:/x:ro,rw"]), "invalid mode: ro,rw"),
        ("bind colons", |r| r.host_config.binds = strings(&["/a:/b:/c:/d"]),
            "invalid volume specification: '/a:/b:/c:/d'"),
        ("bind target mode", |r| r.host_config.binds = strings(&["/foo:rw"]),
            "invalid volume specification: '/foo:rw'"),
        ("bind empty source", |r| r.host_config.binds = strings(&[":/x"]),
            "invalid volume specification: ':/x'"),
        ("bind nocopy", |r| r.host_config.binds = strings(&["/tmp:/x:nocopy"]),
            "invalid volume specification: '/tmp:/x:nocopy': invalid mount config for type \"bind\": field VolumeOptions must not be specified"),
        ("volume propagation", |r| r.host_config.binds = strings(&["vol:/x:shared"]),
            "invalid volume specification: 'vol:/x:shared': invalid mount config for type \"volume\": field BindOptions must not be specified"),
        ("tmpfs relative", |r| { r.host_config.tmpfs.insert("rel".to_owned(), String::new()); },
            "invalid mount path: 'rel' mount path must be absolute"),
        ("tmpfs root", |r| { r.host_config.tmpfs.insert("/".to_owned(), String::new()); },
            "invalid specification: destination can't be '/'"),
        ("volumes from", |r| r.host_config.volumes_from = strings(&["db:ro"]), ""),
        ("volumes from empty", |r| r.host_config.volumes_from = strings(&[""]),
            "volumes-from specification cannot be an empty string"),
        ("volumes from propagation", |r| r.host_config.volumes_from = strings(&["db:rshared"]),
            "invalid mode: rshared"),
    ]);
}

#[test]
fn parses_binds_like_the_daemon() {
    let spec = parse_bind("/tmp:/ctr:ro,z").unwrap();
    assert_eq!((spec.mount_type, spec.read_only), ("bind", true));
    let spec = parse_bind("named:/data:nocopy").unwrap();
    assert_eq!(
        (spec.mount_type, spec.no_copy, spec.source.as_str()),
        ("volume", true, "named")
    );
    let spec = parse_bind("/anon").unwrap();
    assert_eq!(
        (spec.mount_type, spec.source.as_str(), spec.target.as_str()),
        ("volume", "", "/anon")
    );
    let spec = parse_bind("/tmp:/x:rslave").unwrap();
    assert_eq!(spec.propagation.as_deref(), Some("rslave"));
}
