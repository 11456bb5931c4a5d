//! `cp`: container ⇄ host, or a tar stream with `-`, with Docker's path
//! rules (implemented in `berth_engine::copy`).

use std::path::Path;

use berth_engine::containers::{
    check_copy_destination, container_copied, find_container, with_copy_root, CopyDirection,
};
use berth_engine::copy::{
    copy_container_to_host, copy_container_to_stream, copy_host_to_container,
    copy_stream_to_container, ContainerFs, CopyError,
};
use berth_engine::Engine;
use clap::Args;

#[derive(Debug, Args)]
pub struct CpArgs {
    /// Archive mode (copy all uid/gid information)
    #[arg(short, long)]
    pub archive: bool,
    /// Always follow symbol link in SRC_PATH
    #[arg(short = 'L', long)]
    pub follow_link: bool,
    /// Suppress progress output during copy
    #[arg(short, long)]
    pub quiet: bool,
    /// SRC: CONTAINER:SRC_PATH, a host path, or - (a tar stream on stdin)
    pub source: String,
    /// DEST: CONTAINER:DEST_PATH, a host path, or - (a tar stream to stdout)
    pub destination: String,
}

/// `NAME:PATH` → (Some(NAME), PATH); a host path (which may contain `:`
/// after a `/`, as Docker's rule says) → (None, PATH).
fn split(argument: &str) -> (Option<&str>, &str) {
    if argument.starts_with('/') || argument.starts_with('.') {
        return (None, argument);
    }
    match argument.split_once(':') {
        Some((container, path)) if !container.contains('/') => (Some(container), path),
        _ => (None, argument),
    }
}

pub fn run(engine: &Engine, args: &CpArgs) -> anyhow::Result<i32> {
    let config = engine.config().clone();
    match (split(&args.source), split(&args.destination)) {
        ((Some(_), _), (Some(_), _)) => {
            anyhow::bail!("copying between containers is not supported")
        }
        ((None, _), (None, _)) => anyhow::bail!("must specify at least one container source"),
        ((Some(name), path), (None, destination)) => {
            let container = find_container(engine.store(), &config, name)?;
            let user = Some(container.record.run.user.clone()).filter(|user| !user.is_empty());
            with_copy_root(engine, &container, |root| {
                let fs = ContainerFs::new(root.path, name)
                    .with_user(user.as_deref())
                    .with_journal(Some(root.journal));
                if destination == "-" {
                    let stdout = std::io::stdout();
                    let mut writer = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
                    copy_container_to_stream(&fs, path, args.follow_link, &mut writer)?;
                    std::io::Write::flush(&mut writer)
                        .map_err(|source| CopyError::WriteArchive { source })?;
                } else {
                    let report = copy_container_to_host(
                        &fs,
                        path,
                        Path::new(destination),
                        args.follow_link,
                        args.archive,
                    )?;
                    if !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                        eprintln!(
                            "Successfully copied {} to {destination}",
                            crate::format::units::human_size(report.size)
                        );
                    }
                }
                Ok(())
            })?;
            container_copied(engine, &container, CopyDirection::FromContainer);
        }
        ((None, source), (Some(name), path)) => {
            let container = find_container(engine.store(), &config, name)?;
            check_copy_destination(&container.record.run, path)?;
            let user = Some(container.record.run.user.clone()).filter(|user| !user.is_empty());
            with_copy_root(engine, &container, |root| {
                let fs = ContainerFs::new(root.path, name)
                    .with_user(user.as_deref())
                    .with_journal(Some(root.journal));
                if source == "-" {
                    copy_stream_to_container(&fs, std::io::stdin().lock(), path, args.archive)?;
                } else {
                    let report = copy_host_to_container(
                        &fs,
                        Path::new(source),
                        path,
                        args.follow_link,
                        args.archive,
                    )?;
                    if !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                        eprintln!(
                            "Successfully copied {} to {name}:{path}",
                            crate::format::units::human_size(report.size)
                        );
                    }
                }
                Ok(())
            })?;
            container_copied(engine, &container, CopyDirection::IntoContainer);
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn docker_path_splitting() {
        assert_eq!(split("web:/etc/hosts"), (Some("web"), "/etc/hosts"));
        assert_eq!(split("/tmp/a:b"), (None, "/tmp/a:b"));
        assert_eq!(split("./x:y"), (None, "./x:y"));
        assert_eq!(split("-"), (None, "-"));
        assert_eq!(split("dir/file:1"), (None, "dir/file:1"));
    }
}
