//! Resources, devices, security options and sysctls (same sources as the parent
//! module).

use serde_json::json;

use super::{check_errors, check_fields, error};

#[test]
fn resources() {
    check_fields(&[
        (
            &[
                "--cgroup-parent",
                "/foo",
                "--cpu-shares",
                "512",
                "--cpu-period",
                "100000",
                "--cpu-quota",
                "50000",
                "--cpuset-cpus",
                "0",
                "--cpuset-mems",
                "0",
            ],
            &[
                ("/HostConfig/CpuShares", json!(512)),
                ("/HostConfig/CpuPeriod", json!(100000)),
                ("/HostConfig/CpuQuota", json!(50000)),
                ("/HostConfig/CpusetCpus", json!("0")),
                ("/HostConfig/CpusetMems", json!("0")),
            ],
        ),
        (
            &["--cpus", "1.5"],
            &[("/HostConfig/NanoCpus", json!(1_500_000_000))],
        ),
        (
            &["--cpus", "0.5", "--cpu-period", "0"],
            &[("/HostConfig/NanoCpus", json!(500_000_000))],
        ),
        (
            &[
                "-m",
                "512m",
                "--memory-reservation",
                "256m",
                "--memory-swap",
                "1g",
                "--memory-swappiness",
                "10",
                "--oom-kill-disable",
                "--pids-limit",
                "100",
                "--shm-size",
                "128m",
            ],
            &[
                ("/HostConfig/Memory", json!(536870912)),
                ("/HostConfig/MemoryReservation", json!(268435456)),
                ("/HostConfig/MemorySwap", json!(1073741824)),
                ("/HostConfig/MemorySwappiness", json!(10)),
                ("/HostConfig/OomKillDisable", json!(true)),
                ("/HostConfig/PidsLimit", json!(100)),
                ("/HostConfig/ShmSize", json!(134217728)),
            ],
        ),
        (
            &["--memory-swap", "-1", "-m", "64m"],
            &[("/HostConfig/MemorySwap", json!(-1))],
        ),
        (
            &[
                "--oom-score-adj",
                "100",
                "--blkio-weight",
                "300",
                "-c",
                "0x10",
            ],
            &[
                ("/HostConfig/OomScoreAdj", json!(100)),
                ("/HostConfig/BlkioWeight", json!(300)),
                ("/HostConfig/CpuShares", json!(16)),
            ],
        ),
        (
            &[
                "--ulimit",
                "nofile=1024:2048",
                "--ulimit",
                "nproc=10",
                "--ulimit",
                "core=-1",
                "--ulimit",
                "nproc=20",
            ],
            &[(
                "/HostConfig/Ulimits",
                json!([{"Name": "core", "Hard": -1, "Soft": -1}, {"Name": "nofile", "Hard": 2048, "Soft": 1024},
                {"Name": "nproc", "Hard": 20, "Soft": 20}]),
            )],
        ),
        (
            &[
                "--device",
                "/dev/null",
                "--device",
                "/dev/zero:/dev/z:r",
                "--device",
                "/dev/fuse:rw",
                "--device",
                "/dev/../dev/a:/dev//b",
            ],
            &[(
                "/HostConfig/Devices",
                json!([{"PathOnHost": "/dev/null", "PathInContainer": "/dev/null", "CgroupPermissions": "rwm"},
                {"PathOnHost": "/dev/zero", "PathInContainer": "/dev/z", "CgroupPermissions": "r"},
                {"PathOnHost": "/dev/fuse", "PathInContainer": "/dev/fuse", "CgroupPermissions": "rw"},
                {"PathOnHost": "/dev/../dev/a", "PathInContainer": "/dev/b", "CgroupPermissions": "rwm"}]),
            )],
        ),
        (
            &["--device", "nvidia.com/gpu=all"],
            &[(
                "/HostConfig/DeviceRequests",
                json!([{"Driver": "cdi", "Count": 0, "DeviceIDs": ["nvidia.com/gpu=all"], "Capabilities": null, "Options": null}]),
            )],
        ),
        (
            &[
                "--device-read-bps",
                "/dev/sda:1mb",
                "--device-write-iops",
                "/dev/sda:100",
                "--blkio-weight-device",
                "/dev/sda:200",
            ],
            &[
                (
                    "/HostConfig/BlkioDeviceReadBps",
                    json!([{"Path": "/dev/sda", "Rate": 1048576}]),
                ),
                (
                    "/HostConfig/BlkioDeviceWriteIOps",
                    json!([{"Path": "/dev/sda", "Rate": 100}]),
                ),
                (
                    "/HostConfig/BlkioWeightDevice",
                    json!([{"Path": "/dev/sda", "Weight": 200}]),
                ),
            ],
        ),
        (
            &[
                "--device-cgroup-rule",
                "c 1:3 mr",
                "--device-cgroup-rule",
                "a *:* rwm",
            ],
            &[(
                "/HostConfig/DeviceCgroupRules",
                json!(["c 1:3 mr", "a *:* rwm"]),
            )],
        ),
    ]);
    check_errors(&[
        (
            &["--cpus", "1", "--cpu-quota", "1000"],
            "Conflicting options: Nano CPUs and CPU Quota cannot both be set",
        ),
        (
            &["--cpus", "1", "--cpu-period", "100000"],
            "Conflicting options: Nano CPUs and CPU Period cannot both be set",
        ),
        (
            &["--cpus", "1.0000000001"],
            r#"invalid argument "1.0000000001" for "--cpus" flag: value is too precise"#,
        ),
        (
            &["--cpus", "x"],
            r#"invalid argument "x" for "--cpus" flag: failed to parse x as a rational number"#,
        ),
        (
            &["--cpu-period", "x"],
            r#"invalid argument "x" for "--cpu-period" flag: strconv.ParseInt: parsing "x": invalid syntax"#,
        ),
        (
            &["-c", "x"],
            r#"invalid argument "x" for "-c, --cpu-shares" flag: strconv.ParseInt: parsing "x": invalid syntax"#,
        ),
        (
            &["--cpu-period", "10"],
            "CPU cfs period can not be less than 1ms (i.e. 1000) or larger than 1s (i.e. 1000000)",
        ),
        (
            &["--cpu-quota", "10"],
            "CPU cfs quota can not be less than 1ms (i.e. 1000)",
        ),
        (
            &["-m", "x"],
            r#"invalid argument "x" for "-m, --memory" flag: invalid size: 'x'"#,
        ),
        (&["-m", "1k"], "Minimum memory limit allowed is 6MB"),
        (
            &["--memory-swap", "1g"],
            "You should always set the Memory limit when using Memoryswap limit, see usage",
        ),
        (
            &["-m", "1g", "--memory-swap", "512m"],
            "Minimum memoryswap limit should be larger than memory limit, see usage",
        ),
        (
            &["-m", "10m", "--memory-reservation", "20m"],
            "Minimum memory limit can not be less than memory reservation limit, see usage",
        ),
        (
            &["--shm-size", "-1"],
            r#"invalid argument "-1" for "--shm-size" flag: invalid size: '-1'"#,
        ),
        (
            &["--memory-swappiness", "200"],
            "invalid value: 200. Valid memory swappiness range is 0-100",
        ),
        (
            &["--oom-score-adj", "2000"],
            "Invalid value 2000, range for oom score adj is [-1000, 1000]",
        ),
        (
            &["--blkio-weight", "5"],
            "Range of blkio weight is from 10 to 1000",
        ),
        (
            &["--blkio-weight", "70000"],
            r#"invalid argument "70000" for "--blkio-weight" flag: strconv.ParseUint: parsing "70000": value out of range"#,
        ),
        (
            &["--ulimit", "nofile=10:5"],
            r#"invalid argument "nofile=10:5" for "--ulimit" flag: ulimit soft limit must be less than or equal to hard limit: 10 > 5"#,
        ),
        (
            &["--ulimit", "nofile=-1:5"],
            r#"invalid argument "nofile=-1:5" for "--ulimit" flag: ulimit soft limit must be less than or equal to hard limit: soft: -1 (unlimited), hard: 5"#,
        ),
        (
            &["--ulimit", "foo=1"],
            r#"invalid argument "foo=1" for "--ulimit" flag: invalid ulimit type: foo"#,
        ),
        (
            &["--ulimit", "nofile"],
            r#"invalid argument "nofile" for "--ulimit" flag: invalid ulimit argument: nofile"#,
        ),
        (
            &["--ulimit", "nofile=x"],
            r#"invalid argument "nofile=x" for "--ulimit" flag: strconv.ParseInt: parsing "x": invalid syntax"#,
        ),
        (
            &["--ulimit", "nofile=1:2:3"],
            r#"invalid argument "nofile=1:2:3" for "--ulimit" flag: too many limit value arguments - 1:2:3, can only have up to two, `soft[:hard]`"#,
        ),
        (
            &["--device", "/dev/null:rel"],
            "rel is not an absolute path",
        ),
        (&["--device", "/dev/null:/x:q"], "bad mode specified: q"),
        (&["--device", "nothere"], "nothere is not an absolute path"),
        (
            &["--device", "/a:/b:rw:x"],
            "bad format for path: /a:/b:rw:x",
        ),
        (
            &["--device-read-bps", "sda:1"],
            r#"invalid argument "sda:1" for "--device-read-bps" flag: bad format for device path: sda:1"#,
        ),
        (
            &["--device-read-bps", "/dev/sda"],
            r#"invalid argument "/dev/sda" for "--device-read-bps" flag: bad format: /dev/sda"#,
        ),
        (
            &["--device-write-iops", "/dev/sda:x"],
            r#"invalid argument "/dev/sda:x" for "--device-write-iops" flag: invalid rate for device: /dev/sda:x. The correct format is <device-path>:<number>. Number must be a positive integer"#,
        ),
        (
            &["--blkio-weight-device", "/dev/sda:5"],
            r#"invalid argument "/dev/sda:5" for "--blkio-weight-device" flag: invalid weight for device: /dev/sda:5"#,
        ),
        (
            &["--device-cgroup-rule", "x"],
            r#"invalid argument "x" for "--device-cgroup-rule" flag: invalid device cgroup format 'x'"#,
        ),
    ]);
}

#[test]
fn security_capabilities_and_sysctls() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("profile.json");
    fs_err::write(
        &profile,
        "{\n  \"defaultAction\": \"SCMP_ACT_ALLOW\",\n  \"syscalls\": []\n}\n",
    )
    .unwrap();
    let broken = dir.path().join("broken.json");
    fs_err::write(&broken, "{nope").unwrap();
    let seccomp = format!("seccomp={}", profile.display());
    check_fields(&[
        (
            &[
                "--security-opt",
                "no-new-privileges",
                "--security-opt",
                "label=disable",
                "--security-opt",
                "apparmor=unconfined",
                "--security-opt",
                "seccomp=unconfined",
            ],
            &[(
                "/HostConfig/SecurityOpt",
                json!([
                    "no-new-privileges",
                    "label=disable",
                    "apparmor=unconfined",
                    "seccomp=unconfined"
                ]),
            )],
        ),
        (
            &["--security-opt", "systempaths=unconfined"],
            &[
                ("/HostConfig/MaskedPaths", json!([])),
                ("/HostConfig/ReadonlyPaths", json!([])),
                ("/HostConfig/SecurityOpt", json!([])),
            ],
        ),
        (
            &["--security-opt", &seccomp],
            &[(
                "/HostConfig/SecurityOpt",
                json!([r#"seccomp={"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}"#]),
            )],
        ),
        (
            &[
                "--security-opt",
                "no-new-privileges:false",
                "--security-opt",
                "label:disable",
            ],
            &[(
                "/HostConfig/SecurityOpt",
                json!(["no-new-privileges:false", "label:disable"]),
            )],
        ),
        (
            &[
                "--cap-add",
                "NET_ADMIN",
                "--cap-add",
                "net_admin",
                "--cap-add",
                "cap_chown",
                "--cap-drop",
                "all",
            ],
            &[
                ("/HostConfig/CapAdd", json!(["CAP_CHOWN", "CAP_NET_ADMIN"])),
                ("/HostConfig/CapDrop", json!(["ALL"])),
            ],
        ),
        (
            &[
                "--sysctl",
                "net.ipv4.ip_forward=1",
                "--sysctl",
                "kernel.shmmax=100",
            ],
            &[(
                "/HostConfig/Sysctls",
                json!({"kernel.shmmax": "100", "net.ipv4.ip_forward": "1"}),
            )],
        ),
        (
            &[
                "--log-driver",
                "json-file",
                "--log-opt",
                "max-size=10m",
                "--log-opt",
                "compress",
            ],
            &[(
                "/HostConfig/LogConfig",
                json!({"Type": "json-file", "Config": {"compress": "", "max-size": "10m"}}),
            )],
        ),
        (
            &["--storage-opt", "size=1G"],
            &[("/HostConfig/StorageOpt", json!({"size": "1G"}))],
        ),
    ]);
    let broken = format!("seccomp={}", broken.display());
    assert!(error(&["--security-opt", "seccomp=/nope"])
        .starts_with("opening seccomp profile (/nope) failed: "));
    assert!(
        error(&["--security-opt", &broken]).starts_with("compacting json for seccomp profile (")
    );
    check_errors(&[
        (
            &["--security-opt", "foo"],
            r#"Invalid --security-opt: "foo""#,
        ),
        (
            &["--security-opt", "label="],
            r#"Invalid --security-opt: "label=""#,
        ),
        (
            &["--security-opt", "no-new-privileges:maybe"],
            r#"invalid --security-opt 2: "no-new-privileges:maybe""#,
        ),
        (
            &["--security-opt", "foo=bar"],
            r#"invalid --security-opt 2: "foo=bar""#,
        ),
        (
            &["--cap-add", "foo"],
            r#"invalid CapAdd: unknown capability: "CAP_FOO""#,
        ),
        (
            &["--cap-drop", "bar"],
            r#"invalid CapDrop: unknown capability: "CAP_BAR""#,
        ),
        (
            &["--sysctl", "kernel.foo=1"],
            r#"invalid argument "kernel.foo=1" for "--sysctl" flag: sysctl 'kernel.foo=1' is not allowed"#,
        ),
        (
            &["--sysctl", "net.x"],
            r#"invalid argument "net.x" for "--sysctl" flag: sysctl 'net.x' is not allowed"#,
        ),
        (
            &["--log-driver", "none", "--log-opt", "a=b"],
            "invalid logging opts for driver none",
        ),
        (&["--storage-opt", "x"], "invalid storage option"),
    ]);
}
