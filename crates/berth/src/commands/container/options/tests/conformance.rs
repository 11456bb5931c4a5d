//! Whole request bodies against what the docker CLI 28.2.2 sent to the engine for
//! the same command line (captured on the engine's socket). Go builds `Binds` and
//! `Env` from maps, so their order is random there; they are compared sorted.

use serde_json::Value;

use super::body;

/// `docker create busybox`.
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

/// The command line in [`KITCHEN_ARGS`], then `busybox -c 'echo hi'`.
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

const KITCHEN_ARGS: &[&str] = &[
    "-h",
    "web",
    "-u",
    "1000:1000",
    "-w",
    "/srv",
    "-e",
    "A=1",
    "-e",
    "B=two",
    "--entrypoint",
    "/bin/sh",
    "-l",
    "com.example=1",
    "-p",
    "127.0.0.1:8080:80/tcp",
    "-p",
    "53/udp",
    "--expose",
    "9000",
    "-v",
    "/tmp:/host:ro",
    "-v",
    "/anon",
    "-v",
    "named:/data",
    "--mount",
    "type=tmpfs,dst=/t,tmpfs-size=1m",
    "--tmpfs",
    "/run:size=64k",
    "--ulimit",
    "nofile=1024:2048",
    "--cap-add",
    "net_admin",
    "--cap-drop",
    "mknod",
    "--dns",
    "1.1.1.1",
    "--add-host",
    "db:10.0.0.2",
    "--restart",
    "on-failure:3",
    "-m",
    "64m",
    "--memory-swap",
    "128m",
    "--cpus",
    "0.5",
    "--pids-limit",
    "50",
    "--shm-size",
    "32m",
    "--sysctl",
    "net.core.somaxconn=1024",
    "--security-opt",
    "no-new-privileges",
    "--init",
    "--stop-signal",
    "SIGINT",
    "--stop-timeout",
    "3",
    "--health-cmd",
    "true",
    "--health-interval",
    "10s",
    "--log-opt",
    "max-size=1m",
    "-it",
];

fn normalized(mut body: Value) -> Value {
    for pointer in ["/HostConfig/Binds", "/Env"] {
        if let Some(Value::Array(items)) = body.pointer_mut(pointer) {
            items.sort_by_key(Value::to_string);
        }
    }
    body
}

fn captured(text: &str) -> Value {
    normalized(serde_json::from_str(&text.replace('\n', "")).unwrap())
}

#[test]
fn plain_create_matches_the_docker_cli() {
    assert_eq!(normalized(body(&[])), captured(CLI_PLAIN_BODY));
}

#[test]
fn many_flags_match_the_docker_cli() {
    // `body` appends the image; the command follows it here.
    let mut args = KITCHEN_ARGS.to_vec();
    args.extend(["busybox", "-c"]);
    let mut produced = body(&args);
    produced["Cmd"] = serde_json::json!(["-c", "echo hi"]);
    assert_eq!(produced["Image"], "busybox");
    assert_eq!(normalized(produced), captured(CLI_KITCHEN_BODY));
}
