//! Ports, networks, volumes and mounts (same sources as the parent module).

use serde_json::json;

use super::{body, check_errors, check_fields};

#[test]
fn publish_and_expose() {
    let binding = |ip: &str, port: &str| json!({"HostIp": ip, "HostPort": port});
    check_fields(&[
        (
            &["-p", "8080:80"],
            &[
                ("/ExposedPorts", json!({"80/tcp": {}})),
                (
                    "/HostConfig/PortBindings",
                    json!({"80/tcp": [binding("", "8080")]}),
                ),
            ],
        ),
        (
            &["-p", "127.0.0.1:8080:80/udp"],
            &[
                ("/ExposedPorts", json!({"80/udp": {}})),
                (
                    "/HostConfig/PortBindings",
                    json!({"80/udp": [binding("127.0.0.1", "8080")]}),
                ),
            ],
        ),
        (
            &["-p", "80"],
            &[(
                "/HostConfig/PortBindings",
                json!({"80/tcp": [binding("", "")]}),
            )],
        ),
        (
            &["-p", "8000-8001:80-81"],
            &[
                ("/ExposedPorts", json!({"80/tcp": {}, "81/tcp": {}})),
                (
                    "/HostConfig/PortBindings",
                    json!({"80/tcp": [binding("", "8000")], "81/tcp": [binding("", "8001")]}),
                ),
            ],
        ),
        (
            &["-p", "8000-8010:80"],
            &[(
                "/HostConfig/PortBindings",
                json!({"80/tcp": [binding("", "8000-8010")]}),
            )],
        ),
        (
            &["-p", "127.0.0.1::80"],
            &[(
                "/HostConfig/PortBindings",
                json!({"80/tcp": [binding("127.0.0.1", "")]}),
            )],
        ),
        (
            &["-p", "[::1]:8080:80"],
            &[(
                "/HostConfig/PortBindings",
                json!({"80/tcp": [binding("::1", "8080")]}),
            )],
        ),
        (
            &["-p", "::1:8080:80"],
            &[(
                "/HostConfig/PortBindings",
                json!({"80/tcp": [binding("::1", "8080")]}),
            )],
        ),
        (
            &["-p", "80/sctp"],
            &[("/ExposedPorts", json!({"80/sctp": {}}))],
        ),
        (
            &["-p", ":80"],
            &[(
                "/HostConfig/PortBindings",
                json!({"80/tcp": [binding("", "")]}),
            )],
        ),
        (
            &["-p", "80/TCP"],
            &[("/ExposedPorts", json!({"80/tcp": {}}))],
        ),
        (
            &["-p", "target=80,published=8080"],
            &[(
                "/HostConfig/PortBindings",
                json!({"80/tcp": [binding("", "8080")]}),
            )],
        ),
        (
            &["-p", "target=80,published=8080,protocol=udp"],
            &[(
                "/HostConfig/PortBindings",
                json!({"80/udp": [binding("", "8080")]}),
            )],
        ),
        (
            &["-p", "80", "-p", "8080:80"],
            &[(
                "/HostConfig/PortBindings",
                json!({"80/tcp": [binding("", ""), binding("", "8080")]}),
            )],
        ),
        (
            &["--expose", "80"],
            &[
                ("/ExposedPorts", json!({"80/tcp": {}})),
                ("/HostConfig/PortBindings", json!({})),
            ],
        ),
        (
            &["--expose", "80-82/udp"],
            &[(
                "/ExposedPorts",
                json!({"80/udp": {}, "81/udp": {}, "82/udp": {}}),
            )],
        ),
        (
            &["-P", "--expose", "22"],
            &[("/HostConfig/PublishAllPorts", json!(true))],
        ),
        (
            &["--expose", "80", "-p", "8080:80"],
            &[("/ExposedPorts", json!({"80/tcp": {}}))],
        ),
    ]);
    assert!(body(&[]).pointer("/ExposedPorts").is_none());
    check_errors(&[
        (&["-p", "80/foo"], "invalid proto: foo"),
        (&["-p", "80-79"], "invalid containerPort: 80-79"),
        (&["-p", "8000-8002:80-81"], "invalid ranges specified for container and host Ports: 80-81 and 8000-8002"),
        (&["-p", "x:80"], "invalid hostPort: x"),
        (&["-p", "1.2.3:80:80"], "invalid IP address: 1.2.3"),
        (&["-p", "70000"], "invalid containerPort: 70000"),
        (&["-p", "8080:"], "no port specified: 8080:<empty>"),
        (&["-p", "a"], "invalid containerPort: a"),
        (&["-p", "target"], "invalid containerPort: target"),
        (&["-p", "target=80,x"], "invalid publish opts format (should be name=value but got 'x')"),
        (&["--expose", "80:90"], "invalid port format for --expose: 80:90"),
        (&["--expose", "x"], r#"invalid range format for --expose: x, error: strconv.ParseUint: parsing "x": invalid syntax"#),
        (&["--expose", "90-80"], "invalid range format for --expose: 90-80, error: invalid range specified for port: 90-80"),
        // Docker stores "80/FOO"; berth holds --expose to -p's protocols.
        (&["--expose", "80/FOO"], "invalid proto: FOO"),
        (&["--network", "container:db", "-p", "80"], "conflicting options: port publishing and the container type network mode"),
        (&["--network", "container:db", "--expose", "80"], "conflicting options: port exposing and the container type network mode"),
    ]);
}

#[test]
fn networks_dns_and_hosts() {
    let endpoint = |extra: serde_json::Value| {
        let mut base = json!({"IPAMConfig": null, "Links": null, "Aliases": null, "MacAddress": "",
            "DriverOpts": null, "GwPriority": 0, "NetworkID": "", "EndpointID": "", "Gateway": "",
            "IPAddress": "", "IPPrefixLen": 0, "IPv6Gateway": "", "GlobalIPv6Address": "",
            "GlobalIPv6PrefixLen": 0, "DNSNames": null});
        for (key, value) in extra.as_object().unwrap() {
            base[key] = value.clone();
        }
        base
    };
    check_fields(&[
        (
            &[],
            &[
                ("/HostConfig/NetworkMode", json!("default")),
                (
                    "/NetworkingConfig/EndpointsConfig",
                    json!({"default": endpoint(json!({}))}),
                ),
            ],
        ),
        (
            &["--network", "none"],
            &[
                ("/HostConfig/NetworkMode", json!("none")),
                ("/NetworkingConfig/EndpointsConfig", json!({})),
            ],
        ),
        (
            &["--net", "host"],
            &[("/HostConfig/NetworkMode", json!("host"))],
        ),
        (
            &["--network", "container:foo"],
            &[("/HostConfig/NetworkMode", json!("container:foo"))],
        ),
        (
            &[
                "--network",
                "mynet",
                "--network-alias",
                "a1",
                "--ip",
                "172.30.0.5",
            ],
            &[
                ("/HostConfig/NetworkMode", json!("mynet")),
                (
                    "/NetworkingConfig/EndpointsConfig",
                    json!({"mynet": endpoint(json!({
                "IPAMConfig": {"IPv4Address": "172.30.0.5"}, "Aliases": ["a1"]}))}),
                ),
            ],
        ),
        (
            &[
                "--network",
                "name=n1,alias=a,driver-opt=com.x=1,gw-priority=5",
            ],
            &[
                ("/HostConfig/NetworkMode", json!("n1")),
                (
                    "/NetworkingConfig/EndpointsConfig",
                    json!({"n1": endpoint(json!({
                "Aliases": ["a"], "DriverOpts": {"com.x": "1"}, "GwPriority": 5}))}),
                ),
            ],
        ),
        (
            &[
                "--network",
                "name=n1",
                "--network-alias",
                "b",
                "--link",
                "db:db",
            ],
            &[
                (
                    "/NetworkingConfig/EndpointsConfig",
                    json!({"n1": endpoint(json!({
                "Aliases": ["b"], "Links": ["db:db"]}))}),
                ),
                ("/HostConfig/Links", json!(["db:db"])),
            ],
        ),
        (
            &["--mac-address", "02:42:ac:11:00:02"],
            &[(
                "/NetworkingConfig/EndpointsConfig",
                json!({"default": endpoint(json!({"MacAddress": "02:42:ac:11:00:02"}))}),
            )],
        ),
        (
            &[
                "--dns",
                "8.8.8.8",
                "--dns",
                " 0:0::1 ",
                "--dns-option",
                "ndots:2",
                "--dns-search",
                "example.com.",
                "--add-host",
                "h:1.2.3.4",
                "--add-host",
                "h2=::1",
                "--add-host",
                "h3:[::2]",
                "--add-host",
                "gw:host-gateway",
            ],
            &[
                ("/HostConfig/Dns", json!(["8.8.8.8", "::1"])),
                ("/HostConfig/DnsOptions", json!(["ndots:2"])),
                ("/HostConfig/DnsSearch", json!(["example.com"])),
                (
                    "/HostConfig/ExtraHosts",
                    json!(["h:1.2.3.4", "h2:::1", "h3:::2", "gw:host-gateway"]),
                ),
            ],
        ),
        (
            &[],
            &[
                ("/HostConfig/Dns", json!([])),
                ("/HostConfig/DnsSearch", json!([])),
                ("/HostConfig/ExtraHosts", json!(null)),
            ],
        ),
    ]);
    check_errors(&[
        (&["--network", "bridge", "--network-alias", "x"], "network-scoped aliases are only supported for user-defined networks"),
        (&["--network-alias", "a"], "network-scoped aliases are only supported for user-defined networks"),
        (&["--network", "n1", "--network", "n1"], "network \"n1\" is specified multiple times"),
        (&["--network", "n1", "--network", "host"], "conflicting options: cannot attach both user-defined and non-user-defined network-modes"),
        (&["--network", ""], "no name set for network"),
        (&["--network", "name=n1,alias=a", "--network-alias", "b"], "conflicting options: cannot specify both --network-alias and per-network alias"),
        (&["--network", "name=n1,ip=1.2.3.4", "--ip", "1.2.3.5"], "conflicting options: cannot specify both --ip and per-network IPv4 address"),
        (&["--network", "alias=a"], r#"invalid argument "alias=a" for "--network" flag: network name/id is not specified"#),
        (&["--network", "name=a,foo=b"], r#"invalid argument "name=a,foo=b" for "--network" flag: invalid field key foo"#),
        (&["--network", "name=a,x"], r#"invalid argument "name=a,x" for "--network" flag: invalid field x"#),
        (&["--network", "name=a,gw-priority=x"], r#"invalid argument "name=a,gw-priority=x" for "--network" flag: invalid gw-priority (x): invalid syntax"#),
        (&["--network", "container:"], "Invalid network mode: invalid container format container:<name|id>"),
        (&["--network", "container:x", "--hostname", "y"], "conflicting options: hostname and the network mode"),
        (&["--network", "container:x", "--dns", "1.1.1.1"], "conflicting options: dns and the network mode"),
        (&["--network", "host", "--mac-address", "02:42:ac:11:00:02"], "conflicting options: mac-address and the network mode"),
        (&["--network", "host", "--link", "db"], "conflicting options: host type networking can't be used with links. This would result in undefined behavior"),
        (&["--network", "container:x", "--link", "db"], "conflicting options: container type network can't be used with links. This would result in undefined behavior"),
        (&["--ip", "1.2.3.4"], "user specified IP address is supported on user defined networks only"),
        (&["--network", "mynet", "--ip", "foo"], "invalid IPv4 address: foo"),
        (&["--network", "mynet", "--ip6", "zz"], "invalid IPv6 address: zz"),
        (&["--mac-address", "zz"], "zz is not a valid mac address"),
        (&["--dns", "foo"], r#"invalid argument "foo" for "--dns" flag: IP address is not correctly formatted: foo"#),
        (&["--dns-search", "a..b"], r#"invalid argument "a..b" for "--dns-search" flag: a..b is not a valid domain"#),
        (&["--dns-search", "123"], r#"invalid argument "123" for "--dns-search" flag: 123 is not a valid domain"#),
        (&["--add-host", "foo"], r#"invalid argument "foo" for "--add-host" flag: bad format for add-host: "foo""#),
        (&["--add-host", "foo:bar"], r#"invalid argument "foo:bar" for "--add-host" flag: invalid IP address in add-host: "bar""#),
        (&["--link", "foo:a:b"], r#"invalid argument "foo:a:b" for "--link" flag: bad format for links: foo:a:b"#),
        (&["--uts", "host", "-h", "x"], "conflicting options: hostname and the UTS mode"),
    ]);
}

#[test]
fn volumes_binds_and_tmpfs() {
    check_fields(&[
        (
            &["-v", "/ctr"],
            &[
                ("/HostConfig/Binds", json!(null)),
                ("/Volumes", json!({"/ctr": {}})),
            ],
        ),
        (
            &["-v", "named:/ctr:ro"],
            &[
                ("/HostConfig/Binds", json!(["named:/ctr:ro"])),
                ("/Volumes", json!({})),
            ],
        ),
        (
            &["-v", "/tmp:/ctr:ro,z"],
            &[("/HostConfig/Binds", json!(["/tmp:/ctr:ro,z"]))],
        ),
        (
            &["-v", "./rel:/ctr"],
            &[("/HostConfig/Binds", json!(["/work/dir/rel:/ctr"]))],
        ),
        (
            &["-v", "../up/./x:/ctr"],
            &[("/HostConfig/Binds", json!(["/work/up/x:/ctr"]))],
        ),
        (
            &["-v", "na:/x:nocopy"],
            &[("/HostConfig/Binds", json!(["na:/x:nocopy"]))],
        ),
        (
            &["-v", "/tmp:/x:rshared"],
            &[("/HostConfig/Binds", json!(["/tmp:/x:rshared"]))],
        ),
        (
            &["-v", "/ctr", "-v", "/ctr", "-v", "/a:/b", "-v", "/a:/b"],
            &[
                ("/HostConfig/Binds", json!(["/a:/b"])),
                ("/Volumes", json!({"/ctr": {}})),
            ],
        ),
        (
            &["--tmpfs", "/run"],
            &[("/HostConfig/Tmpfs", json!({"/run": ""}))],
        ),
        (
            &["--tmpfs", "/run:rw,size=64m,noexec"],
            &[("/HostConfig/Tmpfs", json!({"/run": "rw,size=64m,noexec"}))],
        ),
    ]);
    let name_error = |name: &str| {
        format!("create {name}: \"{name}\" includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path")
    };
    check_errors(&[
        (&["-v", "rel/path:/ctr"], &name_error("rel/path")),
        (&["-v", "~/x:/ctr"], &name_error("~/x")),
        (&["-v", "bad@name:/x"], &name_error("bad@name")),
        (&["-v", "a:/x"], "create a: volume name is too short, names should be at least two alphanumeric characters"),
        (&["-v", "/tmp:rel"], "invalid volume specification: '/tmp:rel': invalid mount config for type \"bind\": invalid mount path: 'rel' mount path must be absolute"),
        (&["-v", "/tmp:/a:/b:/c"], "invalid spec: /tmp:/a:/b:/c: too many colons"),
        (&["-v", "/tmp:/x:ro:"], "invalid spec: /tmp:/x:ro:: too many colons"),
        (&["-v", ":/x"], "invalid spec: :/x: empty section between colons"),
        (&["-v", "/tmp::/x"], "invalid spec: /tmp::/x: empty section between colons"),
        (&["-v", ""], "invalid empty volume spec"),
        (&["-v", "/tmp:/x:foo"], "invalid mode: foo"),
        (&["-v", "/ctr:ro"], "invalid volume specification: '/ctr:ro'"),
        (&["--tmpfs", "rel"], "invalid mount path: 'rel' mount path must be absolute"),
        (&["--tmpfs", "/"], "invalid specification: destination can't be '/'"),
    ]);
}

#[test]
fn mounts() {
    check_fields(&[
        (
            &["--mount", "type=bind,src=/tmp,dst=/x"],
            &[(
                "/HostConfig/Mounts",
                json!([{"Type": "bind", "Source": "/tmp", "Target": "/x"}]),
            )],
        ),
        (
            &[
                "--mount",
                "type=bind,source=/tmp,target=/x,readonly,bind-propagation=rshared",
            ],
            &[(
                "/HostConfig/Mounts",
                json!([{"Type": "bind", "Source": "/tmp", "Target": "/x", "ReadOnly": true, "BindOptions": {"Propagation": "rshared"}}]),
            )],
        ),
        (
            &["--mount", "type=volume,src=v1,dst=/x,volume-nocopy,ro=true"],
            &[(
                "/HostConfig/Mounts",
                json!([{"Type": "volume", "Source": "v1", "Target": "/x", "ReadOnly": true, "VolumeOptions": {"NoCopy": true, "DriverConfig": {}}}]),
            )],
        ),
        (
            &["--mount", "dst=/x"],
            &[(
                "/HostConfig/Mounts",
                json!([{"Type": "volume", "Target": "/x"}]),
            )],
        ),
        (
            &[
                "--mount",
                "type=tmpfs,dst=/t,tmpfs-size=64m,tmpfs-mode=1770",
            ],
            &[(
                "/HostConfig/Mounts",
                json!([{"Type": "tmpfs", "Target": "/t", "TmpfsOptions": {"SizeBytes": 67108864, "Mode": 1016}}]),
            )],
        ),
        (
            &["--mount", "type=bind,src=./rel,dst=/x"],
            &[(
                "/HostConfig/Mounts",
                json!([{"Type": "bind", "Source": "/work/dir/rel", "Target": "/x"}]),
            )],
        ),
        (
            &["--mount", "type=bind,src=/tmp,dst=/x,consistency=cached"],
            &[("/HostConfig/Mounts/0/Consistency", json!("cached"))],
        ),
        (
            &["--mount", "Type=Bind,SRC=/tmp,Dst=/x"],
            &[(
                "/HostConfig/Mounts",
                json!([{"Type": "bind", "Source": "/tmp", "Target": "/x"}]),
            )],
        ),
        (
            &["--mount", r#"type=bind,"src=/tmp/a,b",dst=/x"#],
            &[("/HostConfig/Mounts/0/Source", json!("/tmp/a,b"))],
        ),
        (
            &[
                "--mount",
                "type=volume,src=vol,dst=/x,volume-driver=local,volume-label=a=b,volume-opt=o=1",
            ],
            &[(
                "/HostConfig/Mounts",
                json!([{"Type": "volume", "Source": "vol", "Target": "/x", "VolumeOptions": {"Labels": {"a": "b"}, "DriverConfig": {"Name": "local", "Options": {"o": "1"}}}}]),
            )],
        ),
    ]);
    let flag = |value: &str, message: &str| {
        format!("invalid argument \"{value}\" for \"--mount\" flag: {message}")
    };
    check_errors(&[
        (&["--mount", "src=/tmp"], &flag("src=/tmp", "target is required")),
        (&["--mount", "type=tmpfs,dst=/x,volume-nocopy"], &flag("type=tmpfs,dst=/x,volume-nocopy", "cannot mix 'volume-*' options with mount type 'tmpfs'")),
        (&["--mount", "type=bind,src=/tmp,dst=/x,tmpfs-size=1m"], &flag("type=bind,src=/tmp,dst=/x,tmpfs-size=1m", "cannot mix 'tmpfs-*' options with mount type 'bind'")),
        (&["--mount", "type=volume,dst=/x,bind-propagation=shared"], &flag("type=volume,dst=/x,bind-propagation=shared", "cannot mix 'bind-*' options with mount type 'volume'")),
        (&["--mount", "type=bind,src=/tmp,dst=/x,ro=maybe"], &flag("type=bind,src=/tmp,dst=/x,ro=maybe", "invalid value for ro: maybe")),
        (&["--mount", "type=tmpfs,dst=/x,tmpfs-size=zz"], &flag("type=tmpfs,dst=/x,tmpfs-size=zz", "invalid value for tmpfs-size: zz")),
        (&["--mount", "type=tmpfs,dst=/x,tmpfs-mode=9"], &flag("type=tmpfs,dst=/x,tmpfs-mode=9", "invalid value for tmpfs-mode: 9")),
        (&["--mount", "foo"], &flag("foo", "invalid field 'foo' must be a key=value pair")),
        (&["--mount", "bar=1"], &flag("bar=1", "unexpected key 'bar' in 'bar=1'")),
        (&["--mount", "type=bind,src=/tmp,dst=/x,bind-recursive=readonly"], &flag("type=bind,src=/tmp,dst=/x,bind-recursive=readonly", "option 'bind-recursive=readonly' requires 'readonly' to be specified in conjunction")),
        (&["--mount", "type=foo,dst=/x"], "invalid mount config for type \"foo\": mount type unknown"),
        (&["--mount", "type=bind,dst=/x"], "invalid mount config for type \"bind\": field Source must not be empty"),
        (&["--mount", "type=bind,src=/tmp,dst=/x,bind-propagation=bogus"], "invalid mount config for type \"bind\": invalid propagation mode: bogus"),
        (&["--mount", "type=bind,src=rel,dst=/x"], "invalid mount config for type \"bind\": invalid mount path: 'rel' mount path must be absolute"),
        (&["--mount", "type=volume,dst=rel"], "invalid mount config for type \"volume\": invalid mount path: 'rel' mount path must be absolute"),
        (&["--mount", "type=volume,dst=/"], "invalid mount config for type \"volume\": invalid specification: destination can't be '/'"),
        (&["--mount", "type=tmpfs,src=a,dst=/x"], "invalid mount config for type \"tmpfs\": field Source must not be specified"),
        (&["--mount", "type=volume,dst=/x,ro"], "invalid mount config for type \"volume\": must not set ReadOnly mode when using anonymous volumes"),
        (&["--mount", "type=volume,src=v,dst=/x"], "create v: volume name is too short, names should be at least two alphanumeric characters"),
    ]);
}
