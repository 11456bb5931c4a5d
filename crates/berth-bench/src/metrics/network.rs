//! 6. Network throughput with iperf3 (TCP, `-J`), the approach of
//!    scripts/bench-net.sh: an iperf3 server container on the engine's
//!    default bridge, published on 127.0.0.1; clients in a container, on the
//!    host, and a server on the host bound to the bridge's gateway. Traffic
//!    only ever goes to 127.0.0.1 and to addresses on local bridges (the
//!    containers and gateways the engine made); anything else is refused.

use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::context::{reason, Context};
use crate::engine::Engine;
use crate::image::Images;
use crate::options::Metric;
use crate::process::{run as run_process, run_ok, which};
use crate::report::{Measurement, MetricReport, Unit};

const CONTAINER_TO_CONTAINER: &str = "container → container";
const CONTAINER_TO_HOST: &str = "container → host";
const PUBLISHED: &str = "host → published port (127.0.0.1)";
const DIRECT: &str = "host → container IP";
const PATHS: [&str; 4] = [CONTAINER_TO_CONTAINER, CONTAINER_TO_HOST, PUBLISHED, DIRECT];

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|error| format!("no free port on 127.0.0.1: {error}"))
}

/// Whether traffic to `address` stays on this host: 127.0.0.1, an address
/// reached directly over a local bridge, or a local bridge's own address.
pub fn check_target(address: &str) -> Result<(), String> {
    if address == "127.0.0.1" {
        return Ok(());
    }
    address
        .parse::<Ipv4Addr>()
        .map_err(|_| format!("not an IPv4 address: {address:?}"))?;
    let route = run_ok(
        Command::new("ip").args(["-o", "route", "get", address]),
        Duration::from_secs(10),
    )
    .map_err(reason)?
    .stdout();
    let device = if route.starts_with("local") {
        run_ok(
            Command::new("ip").args(["-o", "-4", "addr", "show", "to", &format!("{address}/32")]),
            Duration::from_secs(10),
        )
        .map_err(reason)?
        .stdout()
        .split_whitespace()
        .nth(1)
        .map(str::to_owned)
    } else if route.contains(" via ") {
        None
    } else {
        route_device(&route)
    };
    match device {
        Some(device)
            if Path::new("/sys/class/net")
                .join(&device)
                .join("bridge")
                .exists() =>
        {
            Ok(())
        }
        _ => Err(format!(
            "refusing to send traffic to {address}: not a container or bridge address ({})",
            route.trim()
        )),
    }
}

fn route_device(route: &str) -> Option<String> {
    let mut words = route.split_whitespace();
    while let Some(word) = words.next() {
        if word == "dev" {
            return words.next().map(str::to_owned);
        }
    }
    None
}

/// bits/s received, from iperf3 -J output.
pub fn parse_iperf(output: &str) -> Result<f64, String> {
    let start = output
        .find('{')
        .ok_or_else(|| format!("no iperf3 JSON in: {}", output.trim()))?;
    let value: serde_json::Value = serde_json::from_str(&output[start..])
        .map_err(|error| format!("bad iperf3 JSON: {error}"))?;
    if let Some(error) = value["error"].as_str() {
        return Err(format!("iperf3: {error}"));
    }
    value["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .ok_or_else(|| "iperf3 JSON without end.sum_received.bits_per_second".to_owned())
}

/// Runs an iperf3 client (made by `make`), again while the server is not
/// listening yet.
fn client(make: &dyn Fn() -> Command, seconds: u32) -> Result<f64, String> {
    let mut last = String::new();
    for _ in 0..5 {
        let timeout = Duration::from_secs(u64::from(seconds) + 60);
        match run_process(&mut make(), timeout) {
            Ok(finished) => {
                let stdout = finished.stdout();
                match parse_iperf(&stdout) {
                    Ok(bits) if finished.status.success() => return Ok(bits),
                    Ok(_) | Err(_) => {
                        last = parse_iperf(&stdout).err().unwrap_or_else(|| {
                            String::from_utf8_lossy(&finished.stderr).trim().to_owned()
                        });
                    }
                }
            }
            Err(error) => last = reason(error),
        }
        if !(last.contains("Connection refused") || last.contains("unable to connect")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Err(last)
}

fn inspect(engine: &Engine, name: &str, field: &str) -> String {
    engine
        .run(["inspect", "-f", field, name])
        .map(|finished| finished.stdout().trim().to_owned())
        .unwrap_or_default()
}

pub fn run(context: &mut Context) -> MetricReport {
    let plan = context.plan.clone();
    let seconds = plan.network_seconds;
    let mut report = MetricReport::new(
        Metric::Network.id(),
        Metric::Network.title(),
        format!(
            "iperf3 -t {seconds} -J (TCP) from the berth-bench/iperf3 image (iperf3 and its \
             libraries from Debian packages), {} run(s) per path: a client container to a \
             server container's IP on the default bridge; a client container to an iperf3 \
             server on the host bound to the bridge's gateway; the host to the server \
             published with -p 127.0.0.1:PORT:5201; the host to the server's IP.",
            plan.network_runs
        ),
    );
    let host_iperf = which("iperf3");
    for index in 0..context.engines.len() {
        let engine = context.engines[index].clone();
        let label = engine.label();
        let skip_all = |report: &mut MetricReport, why: String| {
            for path in PATHS {
                report.measurements.push(Measurement::skipped(
                    path,
                    label,
                    Unit::BitsPerSecond,
                    why.clone(),
                ));
            }
        };
        if !engine.has_bridge {
            skip_all(
                &mut report,
                "the engine has no default bridge network (for a private docker with one: \
                 scripts/docker-bridge-engine.sh)"
                    .to_owned(),
            );
            continue;
        }
        let image = match context.images.ready(&engine, Images::iperf3) {
            Ok(image) => image,
            Err(why) => {
                skip_all(&mut report, why);
                continue;
            }
        };
        let (port, host_port) = match (free_port(), free_port()) {
            (Ok(port), Ok(host_port)) => (port, host_port),
            (Err(why), _) | (_, Err(why)) => {
                skip_all(&mut report, why);
                continue;
            }
        };
        context.log(format!("network: {label}"));
        let server = context.container_name(index, "iperf-server");
        let publish = format!("127.0.0.1:{port}:5201");
        if let Err(error) = engine.run([
            "run",
            "-d",
            "--name",
            &server,
            "-p",
            &publish,
            &image.reference,
            "iperf3",
            "-s",
        ]) {
            skip_all(
                &mut report,
                format!("the server container did not start: {}", reason(error)),
            );
            context.remove(index, &[server]);
            continue;
        }
        let address = inspect(&engine, &server, "{{.NetworkSettings.IPAddress}}");
        let gateway = inspect(&engine, &server, "{{.NetworkSettings.Gateway}}");
        let address_ok = check_target(&address);
        let gateway_ok = check_target(&gateway);
        let mut results: Vec<Result<Vec<f64>, String>> = vec![Ok(Vec::new()); PATHS.len()];
        let no_host_iperf = "iperf3 is not installed on the host (apt-get install iperf3)";
        for round in 0..plan.network_runs {
            context.log(format!("network: {label}, round {}", round + 1));
            for (path_index, path) in PATHS.iter().enumerate() {
                if results[path_index].is_err() {
                    continue;
                }
                let sample = match *path {
                    CONTAINER_TO_CONTAINER => address_ok.clone().and_then(|()| {
                        client(
                            &|| {
                                engine.command([
                                    "run",
                                    "--rm",
                                    &image.reference,
                                    "iperf3",
                                    "-c",
                                    &address,
                                    "-t",
                                    &seconds.to_string(),
                                    "-J",
                                    "--connect-timeout",
                                    "5000",
                                ])
                            },
                            seconds,
                        )
                    }),
                    CONTAINER_TO_HOST => match &host_iperf {
                        None => Err(no_host_iperf.to_owned()),
                        Some(iperf) => gateway_ok.clone().and_then(|()| {
                            to_host(
                                &engine,
                                &image.reference,
                                iperf,
                                &gateway,
                                host_port,
                                seconds,
                            )
                        }),
                    },
                    PUBLISHED => match &host_iperf {
                        None => Err(no_host_iperf.to_owned()),
                        Some(iperf) => client(
                            &|| {
                                let mut command = Command::new(iperf);
                                command.args([
                                    "-c",
                                    "127.0.0.1",
                                    "-p",
                                    &port.to_string(),
                                    "-t",
                                    &seconds.to_string(),
                                    "-J",
                                    "--connect-timeout",
                                    "5000",
                                ]);
                                command
                            },
                            seconds,
                        ),
                    },
                    _ => match &host_iperf {
                        None => Err(no_host_iperf.to_owned()),
                        Some(iperf) => address_ok.clone().and_then(|()| {
                            client(
                                &|| {
                                    let mut command = Command::new(iperf);
                                    command.args([
                                        "-c",
                                        &address,
                                        "-t",
                                        &seconds.to_string(),
                                        "-J",
                                        "--connect-timeout",
                                        "5000",
                                    ]);
                                    command
                                },
                                seconds,
                            )
                        }),
                    },
                };
                match sample {
                    Ok(bits) => {
                        if let Ok(samples) = &mut results[path_index] {
                            samples.push(bits);
                        }
                    }
                    Err(why) => results[path_index] = Err(why),
                }
            }
        }
        context.remove(index, &[server]);
        for (path, result) in PATHS.iter().zip(results) {
            report.measurements.push(Measurement::from_result(
                *path,
                label,
                Unit::BitsPerSecond,
                result,
            ));
        }
    }
    for path in PATHS {
        report.compare_with(path, "berth", "berth");
    }
    report.compare_within_engine(PUBLISHED, DIRECT, "direct container IP");
    report
}

/// A client container to an iperf3 server on the host bound to the gateway.
fn to_host(
    engine: &Engine,
    image: &str,
    iperf: &Path,
    gateway: &str,
    port: u16,
    seconds: u32,
) -> Result<f64, String> {
    let mut server = Command::new(iperf)
        .args(["-s", "-1", "-B", gateway, "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("failed to start iperf3 on the host: {error}"))?;
    std::thread::sleep(Duration::from_millis(300));
    let result = client(
        &|| {
            engine.command([
                "run",
                "--rm",
                image,
                "iperf3",
                "-c",
                gateway,
                "-p",
                &port.to_string(),
                "-t",
                &seconds.to_string(),
                "-J",
                "--connect-timeout",
                "5000",
            ])
        },
        seconds,
    );
    for _ in 0..50 {
        if matches!(server.try_wait(), Ok(Some(_))) {
            return result;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = server.kill();
    let _ = server.wait();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf_json_gives_received_bits() {
        let output = "Connecting...\n{\"start\":{},\"end\":{\"sum_received\":{\"bits_per_second\":1.25e10}}}";
        assert_eq!(parse_iperf(output).unwrap(), 1.25e10);
        let failed = "{\"start\":{},\"error\":\"unable to connect to server: Connection refused\"}";
        assert!(parse_iperf(failed)
            .unwrap_err()
            .contains("Connection refused"));
        assert!(parse_iperf("nothing").is_err());
    }

    #[test]
    fn route_devices_are_read_from_ip_route_get() {
        assert_eq!(
            route_device("172.17.0.2 dev berth0 src 172.17.0.1 uid 0 \\    cache"),
            Some("berth0".to_owned())
        );
        assert_eq!(route_device("local 127.0.0.1"), None);
    }

    #[test]
    fn traffic_never_leaves_the_host() {
        assert!(check_target("127.0.0.1").is_ok());
        assert!(check_target("not-an-address").is_err());
        // A public address is routed through a gateway (or not at all).
        assert!(check_target("192.0.2.1").is_err());
    }
}
