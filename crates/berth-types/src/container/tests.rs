//! Round trips through the models with JSON captured from the real docker CLI
//! (28.2.2, API 1.41) and Docker Engine 20.10: the bodies the CLI sent for
//! `docker create`, and the `Config`/`HostConfig` the engine stored.

use serde_json::Value;

use super::*;

/// `docker create busybox`, as the CLI sent it.
const CLI_PLAIN_BODY: &str = r#"
{"Hostname":"","Domainname":"","User":"","AttachStdin":false,"AttachStdout":true,
"AttachStderr":true,"Tty":false,"OpenStdin":false,"StdinOnce":false,"Env":null,"Cmd":null,
"Image":"busybox","Volumes":{},"WorkingDir":"","Entrypoint":null,"OnBuild":null,"Labels":{},
"HostConfig":{"Binds":null,"ContainerIDFile":"","LogConfig":{"Type":"","Config":{}},
"NetworkMode":"default","PortBindings":{},"RestartPolicy":{"Name":"no",
"MaximumRetryCount":0},"AutoRemove":false,"VolumeDriver":"","VolumesFrom":null,
"ConsoleSize":[0,0],"CapAdd":null,"CapDrop":null,"CgroupnsMode":"","Dns":[],"DnsOptions":[],
"DnsSearch":[],"ExtraHosts":null,"GroupAdd":null,"IpcMode":"","Cgroup":"","Links":null,
"OomScoreAdj":0,"PidMode":"","Privileged":false,"PublishAllPorts":false,
"ReadonlyRootfs":false,"SecurityOpt":null,"UTSMode":"","UsernsMode":"","ShmSize":0,
"Isolation":"","CpuShares":0,"Memory":0,"NanoCpus":0,"CgroupParent":"","BlkioWeight":0,
"BlkioWeightDevice":[],"BlkioDeviceReadBps":[],"BlkioDeviceWriteBps":[],
"BlkioDeviceReadIOps":[],"BlkioDeviceWriteIOps":[],"CpuPeriod":0,"CpuQuota":0,
"CpuRealtimePeriod":0,"CpuRealtimeRuntime":0,"CpusetCpus":"","CpusetMems":"","Devices":[],
"DeviceCgroupRules":null,"DeviceRequests":null,"MemoryReservation":0,"MemorySwap":0,
"MemorySwappiness":-1,"OomKillDisable":false,"PidsLimit":0,"Ulimits":[],"CpuCount":0,
"CpuPercent":0,"IOMaximumIOps":0,"IOMaximumBandwidth":0,"MaskedPaths":null,
"ReadonlyPaths":null},"NetworkingConfig":{"EndpointsConfig":{"default":{"IPAMConfig":null,
"Links":null,"Aliases":null,"MacAddress":"","DriverOpts":null,"GwPriority":0,"NetworkID":"",
"EndpointID":"","Gateway":"","IPAddress":"","IPPrefixLen":0,"IPv6Gateway":"",
"GlobalIPv6Address":"","GlobalIPv6PrefixLen":0,"DNSNames":null}}}}
"#;

/// `docker create -h web -u 1000:1000 -w /srv -e A=1 -e B=two --entrypoint /bin/sh
/// -l com.example=1 -p 127.0.0.1:8080:80/tcp -p 53/udp --expose 9000 -v /tmp:/host:ro
/// -v /anon -v named:/data --mount type=tmpfs,dst=/t,tmpfs-size=1m --tmpfs /run:size=64k
/// --ulimit nofile=1024:2048 --cap-add net_admin --cap-drop mknod --dns 1.1.1.1
/// --add-host db:10.0.0.2 --restart on-failure:3 -m 64m --memory-swap 128m --cpus 0.5
/// --pids-limit 50 --shm-size 32m --sysctl net.core.somaxconn=1024
/// --security-opt no-new-privileges --init --stop-signal SIGINT --stop-timeout 3
/// --health-cmd true --health-interval 10s --log-opt max-size=1m -it busybox -c 'echo hi'`.
const CLI_KITCHEN_BODY: &str = r#"
{"Hostname":"web","Domainname":"","User":"1000:1000","AttachStdin":true,"AttachStdout":true,
"AttachStderr":true,"ExposedPorts":{"53/udp":{},"80/tcp":{},"9000/tcp":{}},"Tty":true,
"OpenStdin":true,"StdinOnce":true,"Env":["A=1","B=two"],"Cmd":["-c","echo hi"],
"Healthcheck":{"Test":["CMD-SHELL","true"],"Interval":10000000000},"Image":"busybox",
"Volumes":{"/anon":{}},"WorkingDir":"/srv","Entrypoint":["/bin/sh"],"OnBuild":null,
"Labels":{"com.example":"1"},"StopSignal":"SIGINT","StopTimeout":3,
"HostConfig":{"Binds":["named:/data","/tmp:/host:ro"],"ContainerIDFile":"",
"LogConfig":{"Type":"","Config":{"max-size":"1m"}},"NetworkMode":"default",
"PortBindings":{"53/udp":[{"HostIp":"","HostPort":""}],"80/tcp":[{"HostIp":"127.0.0.1",
"HostPort":"8080"}]},"RestartPolicy":{"Name":"on-failure","MaximumRetryCount":3},
"AutoRemove":false,"VolumeDriver":"","VolumesFrom":null,"ConsoleSize":[0,0],
"CapAdd":["CAP_NET_ADMIN"],"CapDrop":["CAP_MKNOD"],"CgroupnsMode":"","Dns":["1.1.1.1"],
"DnsOptions":[],"DnsSearch":[],"ExtraHosts":["db:10.0.0.2"],"GroupAdd":null,"IpcMode":"",
"Cgroup":"","Links":null,"OomScoreAdj":0,"PidMode":"","Privileged":false,
"PublishAllPorts":false,"ReadonlyRootfs":false,"SecurityOpt":["no-new-privileges"],
"Tmpfs":{"/run":"size=64k"},"UTSMode":"","UsernsMode":"","ShmSize":33554432,
"Sysctls":{"net.core.somaxconn":"1024"},"Isolation":"","CpuShares":0,"Memory":67108864,
"NanoCpus":500000000,"CgroupParent":"","BlkioWeight":0,"BlkioWeightDevice":[],
"BlkioDeviceReadBps":[],"BlkioDeviceWriteBps":[],"BlkioDeviceReadIOps":[],
"BlkioDeviceWriteIOps":[],"CpuPeriod":0,"CpuQuota":0,"CpuRealtimePeriod":0,
"CpuRealtimeRuntime":0,"CpusetCpus":"","CpusetMems":"","Devices":[],"DeviceCgroupRules":null,
"DeviceRequests":null,"MemoryReservation":0,"MemorySwap":134217728,"MemorySwappiness":-1,
"OomKillDisable":false,"PidsLimit":50,"Ulimits":[{"Name":"nofile","Hard":2048,"Soft":1024}],
"CpuCount":0,"CpuPercent":0,"IOMaximumIOps":0,"IOMaximumBandwidth":0,
"Mounts":[{"Type":"tmpfs","Target":"/t","TmpfsOptions":{"SizeBytes":1048576}}],
"MaskedPaths":null,"ReadonlyPaths":null,"Init":true},
"NetworkingConfig":{"EndpointsConfig":{"default":{"IPAMConfig":null,"Links":null,
"Aliases":null,"MacAddress":"","DriverOpts":null,"GwPriority":0,"NetworkID":"",
"EndpointID":"","Gateway":"","IPAddress":"","IPPrefixLen":0,"IPv6Gateway":"",
"GlobalIPv6Address":"","GlobalIPv6PrefixLen":0,"DNSNames":null}}}}
"#;

/// `Config` the engine stored for the container above (`GET /containers/x/json`).
const ENGINE_KITCHEN_CONFIG: &str = r#"
{"Hostname":"web","Domainname":"","User":"1000:1000","AttachStdin":true,"AttachStdout":true,
"AttachStderr":true,"ExposedPorts":{"53/udp":{},"80/tcp":{},"9000/tcp":{}},"Tty":true,
"OpenStdin":true,"StdinOnce":true,"Env":["A=1","B=two",
"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["-c","echo hi"],
"Healthcheck":{"Test":["CMD-SHELL","true"],"Interval":10000000000},"Image":"busybox",
"Volumes":{"/anon":{}},"WorkingDir":"/srv","Entrypoint":["/bin/sh"],"OnBuild":null,
"Labels":{"com.example":"1"},"StopSignal":"SIGINT","StopTimeout":3}
"#;

/// `HostConfig` the engine stored for the container above.
const ENGINE_KITCHEN_HOST_CONFIG: &str = r#"
{"Binds":["named:/data","/tmp:/host:ro"],"ContainerIDFile":"",
"LogConfig":{"Type":"json-file","Config":{"max-size":"1m"}},"NetworkMode":"default",
"PortBindings":{"53/udp":[{"HostIp":"","HostPort":""}],"80/tcp":[{"HostIp":"127.0.0.1",
"HostPort":"8080"}]},"RestartPolicy":{"Name":"on-failure","MaximumRetryCount":3},
"AutoRemove":false,"VolumeDriver":"","VolumesFrom":null,"CapAdd":["CAP_NET_ADMIN"],
"CapDrop":["CAP_MKNOD"],"CgroupnsMode":"host","Dns":["1.1.1.1"],"DnsOptions":[],
"DnsSearch":[],"ExtraHosts":["db:10.0.0.2"],"GroupAdd":null,"IpcMode":"private","Cgroup":"",
"Links":null,"OomScoreAdj":0,"PidMode":"","Privileged":false,"PublishAllPorts":false,
"ReadonlyRootfs":false,"SecurityOpt":["no-new-privileges"],"Tmpfs":{"/run":"size=64k"},
"UTSMode":"","UsernsMode":"","ShmSize":33554432,"Sysctls":{"net.core.somaxconn":"1024"},
"Runtime":"runc","ConsoleSize":[0,0],"Isolation":"","CpuShares":0,"Memory":67108864,
"NanoCpus":500000000,"CgroupParent":"","BlkioWeight":0,"BlkioWeightDevice":[],
"BlkioDeviceReadBps":[],"BlkioDeviceWriteBps":[],"BlkioDeviceReadIOps":[],
"BlkioDeviceWriteIOps":[],"CpuPeriod":0,"CpuQuota":0,"CpuRealtimePeriod":0,
"CpuRealtimeRuntime":0,"CpusetCpus":"","CpusetMems":"","Devices":[],"DeviceCgroupRules":null,
"DeviceRequests":null,"KernelMemory":0,"KernelMemoryTCP":0,"MemoryReservation":0,
"MemorySwap":134217728,"MemorySwappiness":null,"OomKillDisable":false,"PidsLimit":50,
"Ulimits":[{"Name":"nofile","Hard":2048,"Soft":1024}],"CpuCount":0,"CpuPercent":0,
"IOMaximumIOps":0,"IOMaximumBandwidth":0,"Mounts":[{"Type":"tmpfs","Target":"/t",
"TmpfsOptions":{"SizeBytes":1048576}}],"MaskedPaths":["/proc/asound","/proc/acpi",
"/proc/kcore","/proc/keys","/proc/latency_stats","/proc/timer_list","/proc/timer_stats",
"/proc/sched_debug","/proc/scsi","/sys/firmware"],"ReadonlyPaths":["/proc/bus","/proc/fs",
"/proc/irq","/proc/sys","/proc/sysrq-trigger"],"Init":true}
"#;

/// Written without whitespace, so that literals split over lines compare equal.
fn compact(text: &str) -> Value {
    serde_json::from_str(&text.replace('\n', "")).unwrap()
}

#[track_caller]
fn assert_round_trip<T>(text: &str) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let original = compact(text);
    let parsed: T = serde_json::from_value(original.clone()).unwrap();
    let written = serde_json::to_value(&parsed).unwrap();
    assert_eq!(written, original);
    parsed
}

#[test]
fn cli_bodies_round_trip_exactly() {
    let plain: CreateBody = assert_round_trip(CLI_PLAIN_BODY);
    assert_eq!(plain.config.image, "busybox");
    assert!(plain.config.attach_stdout && plain.config.attach_stderr);
    let host = plain.host_config.unwrap();
    assert_eq!(host.network_mode, "default");
    assert_eq!(host.resources.memory_swappiness, Some(-1));
    assert_eq!(host.binds, None);
    assert_eq!(host.dns, Some(vec![]));

    let kitchen: CreateBody = assert_round_trip(CLI_KITCHEN_BODY);
    let host = kitchen.host_config.unwrap();
    assert_eq!(
        kitchen.config.cmd,
        Some(vec!["-c".to_owned(), "echo hi".to_owned()])
    );
    assert_eq!(kitchen.config.stop_timeout, Some(3));
    assert_eq!(kitchen.config.healthcheck.unwrap().interval, 10_000_000_000);
    assert_eq!(host.restart_policy.maximum_retry_count, 3);
    assert_eq!(host.resources.nano_cpus, 500_000_000);
    assert_eq!(
        host.mounts.unwrap()[0]
            .tmpfs_options
            .as_ref()
            .unwrap()
            .size_bytes,
        1 << 20
    );
    assert_eq!(
        host.port_bindings.unwrap()["80/tcp"][0].host_ip,
        "127.0.0.1"
    );
    assert_eq!(host.init, Some(true));
}

#[test]
fn engine_state_round_trips_but_drops_zero_kernel_memory() {
    let config: ContainerConfig = assert_round_trip(ENGINE_KITCHEN_CONFIG);
    assert_eq!(config.volumes.unwrap().len(), 1);

    // KernelMemory is deprecated and written only when set, as in current Docker.
    let mut stored = compact(ENGINE_KITCHEN_HOST_CONFIG);
    let host: HostConfig = serde_json::from_value(stored.clone()).unwrap();
    let object = stored.as_object_mut().unwrap();
    assert_eq!(object.remove("KernelMemory"), Some(Value::from(0)));
    assert_eq!(object.remove("KernelMemoryTCP"), Some(Value::from(0)));
    assert_eq!(serde_json::to_value(&host).unwrap(), stored);
    assert_eq!(host.resources.memory_swappiness, None);
    assert_eq!(host.masked_paths.as_ref().unwrap().len(), 10);
}

#[test]
fn accepts_nulls_missing_fields_and_string_commands() {
    // What docker-py sends for `containers.create("busybox", "echo hi")`, trimmed.
    let body = r#"{"Hostname": null, "Domainname": null, "User": null, "Tty": false,
        "OpenStdin": false, "Cmd": "echo hi", "Entrypoint": null, "Image": "busybox",
        "Volumes": null, "Labels": null, "StopSignal": null, "Healthcheck": null,
        "HostConfig": {"NetworkMode": "default", "Binds": null, "PortBindings": {"80/tcp": null},
        "Memory": null, "MemorySwappiness": null, "CapAdd": "NET_ADMIN", "Ulimits": null,
        "LogConfig": null, "RestartPolicy": null},
        "NetworkingConfig": {"EndpointsConfig": {"web": null}}}"#;
    let body: CreateBody = serde_json::from_str(body).unwrap();
    assert_eq!(body.config.hostname, "");
    assert_eq!(body.config.cmd, Some(vec!["echo hi".to_owned()]));
    let host = body.host_config.clone().unwrap();
    assert_eq!(host.port_bindings.unwrap()["80/tcp"], vec![]);
    assert_eq!(host.cap_add, Some(vec!["NET_ADMIN".to_owned()]));
    assert_eq!(host.restart_policy, RestartPolicy::default());
    let networking = body.networking_config.clone().unwrap();
    assert!(networking.endpoints_config["web"].is_empty());

    let empty: CreateBody = serde_json::from_str(r#"{"Image":"busybox"}"#).unwrap();
    let request = CreateRequest::from_body(empty, Some("web".to_owned()), None);
    assert_eq!(request.host_config, HostConfig::default());
    assert_eq!(request.name.as_deref(), Some("web"));
}

#[test]
fn takes_docker_pys_spelling_of_the_realtime_fields() {
    // docker-py's `create_host_config(cpu_rt_period=1000, cpu_rt_runtime=500)`.
    let body = r#"{"Image": "busybox",
        "HostConfig": {"CPURealtimePeriod": 1000, "CPURealtimeRuntime": 500}}"#;
    let body: CreateBody = serde_json::from_str(body).unwrap();
    let resources = body.host_config.unwrap().resources;
    assert_eq!(resources.cpu_realtime_period, 1000);
    assert_eq!(resources.cpu_realtime_runtime, 500);
}

#[test]
fn omitempty_fields_are_left_out_when_empty() {
    let written = serde_json::to_value(CreateRequest::default().to_body()).unwrap();
    let object = written.as_object().unwrap();
    for absent in [
        "ExposedPorts",
        "Healthcheck",
        "ArgsEscaped",
        "MacAddress",
        "StopSignal",
        "StopTimeout",
        "Shell",
        "NetworkDisabled",
    ] {
        assert!(!object.contains_key(absent), "{absent}");
    }
    for present in [
        "Hostname",
        "Env",
        "Cmd",
        "Volumes",
        "Entrypoint",
        "OnBuild",
        "Labels",
    ] {
        assert_eq!(
            object.get(present).map(Value::is_null),
            Some(present != "Hostname"),
            "{present}"
        );
    }
    let host = object["HostConfig"].as_object().unwrap();
    for absent in [
        "StorageOpt",
        "Tmpfs",
        "Sysctls",
        "Runtime",
        "Mounts",
        "Init",
        "KernelMemory",
    ] {
        assert!(!host.contains_key(absent), "{absent}");
    }
    assert_eq!(host["ConsoleSize"], serde_json::json!([0, 0]));
    assert!(host["MemorySwappiness"].is_null() && host["PidsLimit"].is_null());
}

#[test]
fn mounts_write_only_what_is_set() {
    let mount = Mount {
        r#type: "volume".to_owned(),
        source: "v1".to_owned(),
        target: "/x".to_owned(),
        read_only: true,
        volume_options: Some(VolumeOptions {
            no_copy: true,
            driver_config: Some(VolumeDriver::default()),
            ..Default::default()
        }),
        ..Default::default()
    };
    // `--mount type=volume,src=v1,dst=/x,volume-nocopy,ro=true`, as the CLI sent it.
    let expected = r#"{"Type":"volume","Source":"v1","Target":"/x","ReadOnly":true,
        "VolumeOptions":{"NoCopy":true,"DriverConfig":{}}}"#;
    assert_eq!(serde_json::to_value(&mount).unwrap(), compact(expected));
    assert_eq!(
        serde_json::from_value::<Mount>(compact(expected)).unwrap(),
        mount
    );
}
