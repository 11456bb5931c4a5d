#![allow(clippy::unwrap_used)]

use super::*;

fn query(text: &str) -> Vec<(String, String)> {
    crate::http::request::parse_query(text).unwrap()
}

fn parsed(text: &str) -> Result<BuildQuery, QueryError> {
    parse(&query(text), (1, 41))
}

/// What `DOCKER_BUILDKIT=0 docker build -t x .` (docker CLI 20.10) sends.
const CLI_20_10: &str = "buildargs=%7B%7D&cachefrom=%5B%5D&cgroupparent=&cpuperiod=0&cpuquota=0&cpusetcpus=&cpusetmems=&cpushares=0&dockerfile=Dockerfile&labels=%7B%7D&memory=0&memswap=0&networkmode=default&rm=1&shmsize=0&t=x&target=&ulimits=null&version=1";

#[test]
fn the_docker_clis_defaults_are_accepted() {
    let build = parsed(CLI_20_10).unwrap();
    assert_eq!(
        build,
        BuildQuery {
            dockerfile: "Dockerfile".to_owned(),
            tags: vec!["x:latest".to_owned()],
            quiet: false,
            no_cache: false,
            pull: false,
            build_args: BTreeMap::new(),
            labels: BTreeMap::new(),
            target: None,
            network: None,
            platform: None,
            extra_hosts: Vec::new(),
            shm_size: None,
            cache_from: Vec::new(),
            keep_containers: KeepContainers::Failed,
            run_resources: Default::default(),
        }
    );
}

#[test]
fn resources_reach_the_run_steps() {
    let build = parsed(
        "memory=100663296&memswap=-1&cpushares=512&cpusetcpus=0&cgroupparent=p&ulimits=%5B%7B%22Name%22%3A%22nofile%22%2C%22Soft%22%3A1024%2C%22Hard%22%3A2048%7D%5D",
    )
    .unwrap();
    let resources = &build.run_resources;
    assert_eq!(resources.memory, 100_663_296);
    assert_eq!(resources.memory_swap, -1);
    assert_eq!(resources.cpu_shares, 512);
    assert_eq!(resources.cpuset_cpus, "0");
    assert_eq!(resources.cgroup_parent, "p");
    assert_eq!(resources.ulimits.as_ref().unwrap()[0].soft, 1024);
    assert!(parsed("memory=lots").is_err());
}

#[test]
fn rm_and_forcerm_decide_which_step_containers_stay() {
    assert_eq!(parsed("").unwrap().keep_containers, KeepContainers::Failed);
    assert_eq!(
        parsed("rm=1").unwrap().keep_containers,
        KeepContainers::Failed
    );
    assert_eq!(
        parsed("rm=False").unwrap().keep_containers,
        KeepContainers::All
    );
    assert_eq!(
        parsed("rm=0&forcerm=1").unwrap().keep_containers,
        KeepContainers::None
    );
}

#[test]
fn shm_size_extra_hosts_and_cache_from_reach_the_builder() {
    let build = parsed(
        "shmsize=134217728&extrahosts=a.test%3A127.0.0.1&extrahosts=b.test%3A127.0.0.2&cachefrom=%5B%22build1%22%5D",
    )
    .unwrap();
    assert_eq!(build.shm_size, Some(134_217_728));
    assert_eq!(build.extra_hosts, ["a.test:127.0.0.1", "b.test:127.0.0.2"]);
    assert_eq!(build.cache_from, ["build1"]);
    let request = build.request(std::path::PathBuf::from("/c"), String::new());
    assert_eq!(request.shm_size, Some(134_217_728));
    assert_eq!(request.cache_from, ["build1"]);
    assert!(parsed("shmsize=big").is_err());
}

#[test]
fn docker_pys_defaults_are_accepted() {
    // `APIClient.build(fileobj=…)`: requests spells Python's False "False".
    let build = parsed("q=False&nocache=False&rm=False&forcerm=False&pull=False").unwrap();
    assert!(!build.quiet && !build.no_cache && !build.pull);
    assert_eq!(build.dockerfile, "Dockerfile");
    assert!(parsed("").unwrap().tags.is_empty());
}

#[test]
fn what_the_builder_takes_is_mapped() {
    let build = parsed(concat!(
        "t=web&t=registry.example:5000/team/app:1.0&t=web:latest&dockerfile=sub%2FDockerfile.dev",
        "&q=1&nocache=true&pull=1&target=final&networkmode=host&platform=linux%2Famd64",
        "&buildargs=%7B%22A%22%3A%221%22%2C%22B%22%3Anull%7D&labels=%7B%22k%22%3A%22v%22%7D",
        "&rm=0&forcerm=1&isolation=default"
    ))
    .unwrap();
    assert_eq!(
        build.tags,
        vec!["web:latest", "registry.example:5000/team/app:1.0"]
    );
    assert_eq!(build.dockerfile, "sub/Dockerfile.dev");
    assert!(build.quiet && build.no_cache && build.pull);
    assert_eq!(build.target.as_deref(), Some("final"));
    assert_eq!(build.network.as_deref(), Some("host"));
    assert_eq!(build.platform.as_deref(), Some("linux/amd64"));
    assert_eq!(build.build_args["A"].as_deref(), Some("1"));
    assert_eq!(build.build_args["B"], None);
    assert_eq!(build.labels["k"], "v");

    let request = build.request(PathBuf::from("/ctx"), "FROM busybox\n".to_owned());
    assert_eq!(request.context, PathBuf::from("/ctx"));
    assert_eq!(
        request.dockerfile,
        DockerfileSource::Inline("FROM busybox\n".to_owned())
    );
    assert_eq!(request.tags, build.tags);
    assert_eq!(request.build_args, build.build_args);
    assert_eq!(request.labels, build.labels);
    assert_eq!(request.target.as_deref(), Some("final"));
    assert_eq!(request.network.as_deref(), Some("host"));
    assert_eq!(request.platform.as_deref(), Some("linux/amd64"));
    assert!(request.no_cache && request.pull);
}

#[test]
fn platform_needs_api_1_32() {
    let build = parse(&query("platform=linux%2Famd64"), (1, 31)).unwrap();
    assert_eq!(build.platform, None);
}

#[test]
fn what_berth_does_not_do_is_refused_by_name() {
    let cases = [
        ("session=abc", "session"),
        ("buildid=abc", "buildid"),
        ("outputs=%5B%7B%22Type%22%3A%22tar%22%7D%5D", "outputs"),
    ];
    for (text, name) in cases {
        let error = parsed(text).unwrap_err();
        assert!(
            matches!(&error, QueryError::Unsupported { name: refused, .. } if *refused == name),
            "{text}: {error:?}"
        );
        let api = ApiError::from(error);
        assert_eq!(api.status, 501, "{text}");
        assert!(api.message.contains(name), "{text}: {}", api.message);
    }
}

#[test]
fn remote_contexts_and_buildkit_are_refused() {
    for remote in [
        "https://github.com/docker/cli.git",
        "https://example.com/context.tar.gz",
        "https://example.com/Dockerfile",
        "client-session",
    ] {
        let text = format!("remote={}", remote.replace(':', "%3A").replace('/', "%2F"));
        let error = ApiError::from(parsed(&text).unwrap_err());
        assert_eq!(error.status, 501);
        assert!(error.message.contains("remote"), "{}", error.message);
        assert!(error.message.contains(remote), "{}", error.message);
    }
    let error = ApiError::from(parsed("version=2").unwrap_err());
    assert_eq!(error.status, 501);
    assert!(error.message.contains("version=2"), "{}", error.message);
    assert!(error.message.contains("BuildKit"), "{}", error.message);
    assert_eq!(
        ApiError::from(parsed("version=3").unwrap_err()),
        ApiError::new(400, "invalid version \"3\"")
    );
    assert!(parsed("version=1").is_ok());
}

#[test]
fn dockers_own_refusals_keep_dockers_words() {
    assert_eq!(
        ApiError::from(parsed("squash=1").unwrap_err()),
        ApiError::new(400, "squash is only supported with experimental mode")
    );
    assert!(parsed("squash=0").is_ok());
    assert_eq!(
        ApiError::from(parsed("securityopt=seccomp%3Dunconfined").unwrap_err()),
        ApiError::new(400, "security options are not supported on linux")
    );
    assert_eq!(
        ApiError::from(parsed("isolation=hyperv").unwrap_err()),
        ApiError::new(400, "unsupported isolation: \"hyperv\"")
    );
    let platform = ApiError::from(parsed("platform=foobar").unwrap_err());
    assert_eq!(platform.status, 400);
    assert!(
        platform.message.contains("unknown operating system"),
        "{}",
        platform.message
    );
}

#[test]
fn malformed_values_are_bad_requests() {
    for (text, words) in [
        ("buildargs=%7Bnot", "error reading build args"),
        ("labels=%5B%5D", "error reading labels"),
        ("cachefrom=x", "error reading cache-from"),
        ("ulimits=%7B%7D", "error reading ulimit settings"),
        ("memory=lots", "memory"),
        ("t=UPPER", "must be lowercase"),
        ("t=a%3A%3Ab", "invalid reference format"),
    ] {
        let error = ApiError::from(parsed(text).unwrap_err());
        assert_eq!(error.status, 400, "{text}");
        assert!(error.message.contains(words), "{text}: {}", error.message);
    }
    let digest = format!("t=busybox%40sha256%3A{}", "a".repeat(64));
    assert_eq!(
        ApiError::from(parsed(&digest).unwrap_err()),
        ApiError::new(400, "build tag cannot contain a digest")
    );
}

#[test]
fn empty_json_values_are_defaults() {
    let build =
        parsed("buildargs=null&labels=null&cachefrom=null&ulimits=%5B%5D&outputs=").unwrap();
    assert!(build.build_args.is_empty() && build.labels.is_empty());
}
