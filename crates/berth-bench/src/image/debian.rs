//! Root file systems from Debian packages, without Docker and without
//! installing anything on the host: the dependency closure from
//! `apt-cache depends`, the .debs from `apt-get download` (or apt's own
//! cache), unpacked with `dpkg-deb -x`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::process::{run_ok, which, ProcessError};

#[derive(Debug, thiserror::Error)]
pub enum DebianError {
    #[error("{tool} not found: Debian packages are needed to build this image")]
    NoTool { tool: &'static str },
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("no candidate version of {package} in the apt lists (run apt-get update)")]
    NoCandidate { package: String },
    #[error("apt-get download gave no file for {package}")]
    NotDownloaded { package: String },
    #[error("failed to prepare {path:?}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DebianError + '_ {
    move |source| DebianError::Io {
        path: path.to_owned(),
        source,
    }
}

/// One package at the version apt would install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    pub version: String,
    /// The .deb's file name in the archive pool (carries the version).
    pub file_name: String,
}

/// What a root file system holds.
#[derive(Clone, Debug, Default)]
pub struct PackageSet {
    /// Packages with their Depends/Pre-Depends, recursively.
    pub with_dependencies: Vec<&'static str>,
    /// Packages without their dependencies (e.g. iperf3, whose Depends
    /// bring adduser and perl for its system service).
    pub alone: Vec<&'static str>,
    /// Names starting with one of these are left out of the closure
    /// (sanitizer runtimes nobody compiles with here).
    pub exclude_prefixes: Vec<&'static str>,
}

const TIMEOUT: Duration = Duration::from_secs(600);

/// The packages of `set` at their candidate versions, sorted by name.
pub fn resolve(set: &PackageSet) -> Result<Vec<Package>, DebianError> {
    which("apt-cache").ok_or(DebianError::NoTool { tool: "apt-cache" })?;
    let mut names: Vec<String> = set.alone.iter().map(|name| name.to_string()).collect();
    if !set.with_dependencies.is_empty() {
        let closure = run_ok(
            Command::new("apt-cache")
                .args([
                    "depends",
                    "--recurse",
                    "--no-recommends",
                    "--no-suggests",
                    "--no-conflicts",
                    "--no-breaks",
                    "--no-replaces",
                    "--no-enhances",
                ])
                .args(&set.with_dependencies),
            TIMEOUT,
        )?;
        names.extend(closure_names(&closure.stdout()));
    }
    names.retain(|name| {
        !set.exclude_prefixes
            .iter()
            .any(|prefix| name.starts_with(prefix))
    });
    names.sort();
    names.dedup();
    let shown = run_ok(
        Command::new("apt-cache")
            .args(["show", "--no-all-versions"])
            .args(&names),
        TIMEOUT,
    )?;
    let packages = parse_show(&shown.stdout());
    for name in &names {
        if !packages.iter().any(|package| &package.name == name) {
            return Err(DebianError::NoCandidate {
                package: name.clone(),
            });
        }
    }
    Ok(packages)
}

/// Package names in `apt-cache depends --recurse` output: the lines that are
/// not indented, without virtual packages (`<name>`).
pub fn closure_names(output: &str) -> Vec<String> {
    output
        .lines()
        .filter(|line| !line.starts_with(' ') && !line.starts_with('<') && !line.is_empty())
        .map(|line| line.trim().to_owned())
        .collect()
}

/// Package, Version and Filename of each paragraph of `apt-cache show`.
pub fn parse_show(output: &str) -> Vec<Package> {
    let mut packages: Vec<Package> = Vec::new();
    for paragraph in output.split("\n\n") {
        let field = |key: &str| {
            paragraph.lines().find_map(|line| {
                line.strip_prefix(key)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .map(|value| value.trim().to_owned())
            })
        };
        let (Some(name), Some(version), Some(file_name)) =
            (field("Package"), field("Version"), field("Filename"))
        else {
            continue;
        };
        let file_name = file_name
            .rsplit('/')
            .next()
            .unwrap_or(&file_name)
            .to_owned();
        if !packages.iter().any(|package| package.name == name) {
            packages.push(Package {
                name,
                version,
                file_name,
            });
        }
    }
    packages.sort_by(|left, right| left.name.cmp(&right.name));
    packages
}

/// The .deb of every package in `cache`: already there, copied from apt's
/// own cache, or downloaded with `apt-get download`.
pub fn fetch(packages: &[Package], cache: &Path) -> Result<Vec<PathBuf>, DebianError> {
    fs_err::create_dir_all(cache).map_err(io(cache))?;
    let apt_cache = Path::new("/var/cache/apt/archives");
    let mut missing = Vec::new();
    for package in packages {
        let wanted = cache.join(&package.file_name);
        if wanted.exists() {
            continue;
        }
        let from_apt = apt_cache.join(&package.file_name);
        if from_apt.is_file() {
            fs_err::copy(&from_apt, &wanted).map_err(io(&wanted))?;
            continue;
        }
        missing.push(package);
    }
    if !missing.is_empty() {
        which("apt-get").ok_or(DebianError::NoTool { tool: "apt-get" })?;
        let download = tempfile::Builder::new()
            .prefix("download-")
            .tempdir_in(cache)
            .map_err(io(cache))?;
        // apt drops to the _apt user to download: let it write there.
        let _ = fs_err::set_permissions(
            download.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        );
        eprintln!(
            "bench: downloading {} Debian package{} with apt-get download",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" }
        );
        run_ok(
            Command::new("apt-get")
                .arg("download")
                .args(
                    missing
                        .iter()
                        .map(|package| format!("{}={}", package.name, package.version)),
                )
                .current_dir(download.path()),
            TIMEOUT,
        )?;
        let downloaded: Vec<PathBuf> = fs_err::read_dir(download.path())
            .map_err(io(download.path()))?
            .flatten()
            .map(|entry| entry.path())
            .collect();
        for package in missing {
            let prefix = format!("{}_", package.name);
            let file = downloaded
                .iter()
                .find(|path| {
                    path.file_name()
                        .and_then(|name| name.to_str())
                        .is_some_and(|name| name.starts_with(&prefix) && name.ends_with(".deb"))
                })
                .ok_or_else(|| DebianError::NotDownloaded {
                    package: package.name.clone(),
                })?;
            let wanted = cache.join(&package.file_name);
            fs_err::rename(file, &wanted).map_err(io(&wanted))?;
        }
    }
    Ok(packages
        .iter()
        .map(|package| cache.join(&package.file_name))
        .collect())
}

/// Unpacks every .deb into `root` (no maintainer scripts run).
pub fn extract(debs: &[PathBuf], root: &Path) -> Result<(), DebianError> {
    which("dpkg-deb").ok_or(DebianError::NoTool { tool: "dpkg-deb" })?;
    fs_err::create_dir_all(root).map_err(io(root))?;
    for deb in debs {
        run_ok(
            Command::new("dpkg-deb").arg("-x").arg(deb).arg(root),
            TIMEOUT,
        )?;
    }
    Ok(())
}

/// Removes documentation and other files no benchmark reads, to keep the
/// image small.
pub fn prune(root: &Path) {
    for directory in [
        "usr/share/doc",
        "usr/share/man",
        "usr/share/info",
        "usr/share/locale",
        "usr/share/lintian",
        "usr/share/bug",
    ] {
        let _ = fs_err::remove_dir_all(root.join(directory));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closure_lines_are_the_unindented_real_packages() {
        let output = "libiperf0\n  Depends: libc6\n  Depends: <libsctp1-virtual>\nlibc6\n  Depends: libgcc-s1\n<debconf-2.0>\nlibgcc-s1\n";
        assert_eq!(
            closure_names(output),
            vec!["libiperf0", "libc6", "libgcc-s1"]
        );
    }

    #[test]
    fn show_paragraphs_give_name_version_and_pool_file() {
        let output = "Package: libc6\nVersion: 2.36-9+deb12u10\nArchitecture: amd64\n\
                      Filename: pool/main/g/glibc/libc6_2.36-9+deb12u10_amd64.deb\n\n\
                      Package: busybox-static\nVersion: 1:1.35.0-4+b3\n\
                      Filename: pool/main/b/busybox/busybox-static_1.35.0-4+b3_amd64.deb\n\
                      Description: x\n\n";
        assert_eq!(
            parse_show(output),
            vec![
                Package {
                    name: "busybox-static".to_owned(),
                    version: "1:1.35.0-4+b3".to_owned(),
                    file_name: "busybox-static_1.35.0-4+b3_amd64.deb".to_owned(),
                },
                Package {
                    name: "libc6".to_owned(),
                    version: "2.36-9+deb12u10".to_owned(),
                    file_name: "libc6_2.36-9+deb12u10_amd64.deb".to_owned(),
                },
            ]
        );
    }
}
