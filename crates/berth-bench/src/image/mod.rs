//! The images the suite needs, built here from Debian packages (no Docker,
//! no registry), cached in the work directory and loaded into each engine
//! with its own `load`:
//!
//! - `berth-bench/busybox`: Debian's static busybox (as
//!   scripts/make-fixtures.sh builds busybox:latest);
//! - `berth-bench/gcc`: gcc-12, binutils and libc6-dev with their library
//!   closure, unpacked from their .debs, plus busybox for the shell;
//! - `berth-bench/iperf3`: iperf3 and its libraries, plus busybox;
//! - `berth-bench/pull`: busybox plus seeded random data layers (gzip), for
//!   the cold pull.

pub mod archive;
pub mod busybox;
pub mod debian;
pub mod layer;
pub mod pull;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::engine::Engine;
use crate::process::run_ok;
use debian::PackageSet;
use layer::LayerWriter;

/// Bumped when an image's content changes, so cached archives are rebuilt.
const CACHE_FORMAT: &str = "berth-bench images 1";
const LOAD_TIMEOUT: Duration = Duration::from_secs(900);

#[derive(Clone, Debug)]
pub struct BuiltImage {
    pub reference: String,
    /// `sha256:<config digest>`, which every engine reports as the image id.
    pub id: String,
    pub archive: PathBuf,
}

pub struct Images {
    work: PathBuf,
    busybox_binary: Option<Result<PathBuf, String>>,
    applets: Vec<String>,
    built: HashMap<String, Result<BuiltImage, String>>,
    loaded: HashSet<(String, String)>,
}

fn short_hash(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(CACHE_FORMAT.as_bytes());
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex::encode(hasher.finalize())[..16].to_owned()
}

fn text<E: std::fmt::Display>(context: &str) -> impl FnOnce(E) -> String + '_ {
    move |error| format!("{context}: {error}")
}

/// An error and its causes on one line.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl Images {
    pub fn new(work: &Path) -> Self {
        Self {
            work: work.to_owned(),
            busybox_binary: None,
            applets: Vec::new(),
            built: HashMap::new(),
            loaded: HashSet::new(),
        }
    }

    /// Serializes image building between bench runs sharing the work dir.
    fn lock(&self) -> Result<std::fs::File, String> {
        fs_err::create_dir_all(&self.work).map_err(|error| chain(&error))?;
        let path = self.work.join("lock");
        let file = fs_err::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|error| chain(&error))?
            .into_parts()
            .0;
        file.lock()
            .map_err(text("failed to lock the work directory"))?;
        Ok(file)
    }

    fn images_dir(&self) -> Result<PathBuf, String> {
        let directory = self.work.join("images");
        fs_err::create_dir_all(&directory).map_err(|error| chain(&error))?;
        Ok(directory)
    }

    fn temporary(&self) -> Result<tempfile::TempDir, String> {
        tempfile::Builder::new()
            .prefix("build-")
            .tempdir_in(&self.work)
            .map_err(text("failed to make a build directory"))
    }

    /// A static busybox on the host: /bin/busybox when Debian's
    /// busybox-static is installed, else unpacked from its .deb. Copied
    /// into the work directory (the host baselines run this copy).
    pub fn busybox_binary(&mut self) -> Result<PathBuf, String> {
        if let Some(found) = &self.busybox_binary {
            return found.clone();
        }
        let found = self.find_busybox();
        if let Ok(path) = &found {
            let listed = run_ok(Command::new(path).arg("--list"), Duration::from_secs(30))
                .map(|finished| finished.stdout())
                .unwrap_or_default();
            self.applets = listed.split_whitespace().map(str::to_owned).collect();
        }
        self.busybox_binary = Some(found.clone());
        found
    }

    fn find_busybox(&self) -> Result<PathBuf, String> {
        let _lock = self.lock()?;
        let mut bytes = None;
        for candidate in ["/bin/busybox", "/usr/bin/busybox"] {
            if let Ok(content) = fs_err::read(candidate) {
                if busybox::is_static_elf(&content) {
                    bytes = Some(content);
                    break;
                }
            }
        }
        if bytes.is_none() {
            let set = PackageSet {
                alone: vec!["busybox-static"],
                ..PackageSet::default()
            };
            let packages = debian::resolve(&set).map_err(|error| chain(&error))?;
            let debs =
                debian::fetch(&packages, &self.work.join("debs")).map_err(|error| chain(&error))?;
            let temporary = self.temporary()?;
            debian::extract(&debs, temporary.path()).map_err(|error| chain(&error))?;
            for inside in ["bin/busybox", "usr/bin/busybox"] {
                if let Ok(content) = fs_err::read(temporary.path().join(inside)) {
                    bytes = Some(content);
                    break;
                }
            }
        }
        let bytes = bytes.ok_or("no static busybox (apt-get install busybox-static)")?;
        let directory = self.work.join("bin");
        fs_err::create_dir_all(&directory).map_err(|error| chain(&error))?;
        let path = directory.join(format!("busybox-{}", short_hash(&[&bytes])));
        if !path.exists() {
            let partial = path.with_extension("partial");
            fs_err::write(&partial, &bytes).map_err(|error| chain(&error))?;
            fs_err::set_permissions(
                &partial,
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )
            .map_err(|error| chain(&error))?;
            fs_err::rename(&partial, &path).map_err(|error| chain(&error))?;
        }
        Ok(path)
    }

    /// The image of one layer made from a root file system that `fill`
    /// writes and busybox completes; cached under `name` and `key`.
    fn rootfs_image(
        &mut self,
        name: &str,
        key: &str,
        cmd: &[&str],
        fill: &dyn Fn(&Path) -> Result<(), String>,
    ) -> Result<BuiltImage, String> {
        let busybox_path = self.busybox_binary()?;
        let reference = format!("berth-bench/{name}:1");
        let archive = self.images_dir()?.join(format!("{name}-{key}.tar"));
        let id_file = archive.with_extension("id");
        let _lock = self.lock()?;
        if let (true, Ok(id)) = (archive.exists(), fs_err::read_to_string(&id_file)) {
            return Ok(BuiltImage {
                reference,
                id: id.trim().to_owned(),
                archive,
            });
        }
        eprintln!("bench: building image {reference}");
        let temporary = self.temporary()?;
        let root = temporary.path().join("rootfs");
        fs_err::create_dir_all(&root).map_err(|error| chain(&error))?;
        fill(&root)?;
        busybox::populate(&root, &busybox_path, &self.applets)
            .map_err(text("failed to add busybox to the image"))?;
        let layer = (|| {
            let mut writer = LayerWriter::create(&temporary.path().join("layer.tar"), false)?;
            writer.tree(&root)?;
            writer.finish()
        })()
        .map_err(text("failed to write the image layer"))?;
        let config = archive::config(std::slice::from_ref(&layer), cmd, name);
        let id = archive::write(&archive, &reference, &config, &[layer])
            .map_err(text("failed to write the image archive"))?;
        fs_err::write(&id_file, &id).map_err(|error| chain(&error))?;
        Ok(BuiltImage {
            reference,
            id,
            archive,
        })
    }

    fn cached(
        &mut self,
        name: &str,
        build: impl FnOnce(&mut Self) -> Result<BuiltImage, String>,
    ) -> Result<BuiltImage, String> {
        if let Some(found) = self.built.get(name) {
            return found.clone();
        }
        let built = build(self);
        self.built.insert(name.to_owned(), built.clone());
        built
    }

    pub fn busybox(&mut self) -> Result<BuiltImage, String> {
        self.cached("busybox", |images| {
            let binary = images.busybox_binary()?;
            let bytes = fs_err::read(&binary).map_err(text("failed to read busybox"))?;
            let key = short_hash(&[&bytes, images.applets.join(" ").as_bytes()]);
            images.rootfs_image("busybox", &key, &["sh"], &|_| Ok(()))
        })
    }

    /// An image from Debian packages plus busybox.
    fn debian_image(
        &mut self,
        name: &str,
        set: &PackageSet,
        cmd: &[&str],
    ) -> Result<BuiltImage, String> {
        let binary = self.busybox_binary()?;
        let busybox_bytes = fs_err::read(&binary).map_err(text("failed to read busybox"))?;
        let packages = debian::resolve(set).map_err(|error| chain(&error))?;
        let files: Vec<&str> = packages
            .iter()
            .map(|package| package.file_name.as_str())
            .collect();
        let key = short_hash(&[files.join(" ").as_bytes(), &busybox_bytes]);
        let debs_dir = self.work.join("debs");
        self.rootfs_image(name, &key, cmd, &|root| {
            let debs = debian::fetch(&packages, &debs_dir).map_err(|error| chain(&error))?;
            debian::extract(&debs, root).map_err(|error| chain(&error))?;
            debian::prune(root);
            Ok(())
        })
    }

    pub fn gcc(&mut self) -> Result<BuiltImage, String> {
        self.cached("gcc", |images| {
            let set = PackageSet {
                with_dependencies: vec!["gcc-12", "libc6-dev", "binutils"],
                alone: Vec::new(),
                exclude_prefixes: vec!["libasan", "libtsan", "liblsan", "libubsan", "libhwasan"],
            };
            images.debian_image("gcc", &set, &["sh"])
        })
    }

    pub fn iperf3(&mut self) -> Result<BuiltImage, String> {
        self.cached("iperf3", |images| {
            let set = PackageSet {
                with_dependencies: vec!["libiperf0"],
                alone: vec!["iperf3"],
                exclude_prefixes: Vec::new(),
            };
            images.debian_image("iperf3", &set, &["iperf3", "-s"])
        })
    }

    /// busybox plus `layers − 1` gzip data layers of about `bytes` in all.
    pub fn pull(&mut self, layers: usize, bytes: u64) -> Result<BuiltImage, String> {
        let name = format!("pull-{layers}x{}", bytes >> 20);
        self.cached(&name.clone(), |images| {
            let binary = images.busybox_binary()?;
            let busybox_bytes = fs_err::read(&binary).map_err(text("failed to read busybox"))?;
            let key = short_hash(&[name.as_bytes(), &busybox_bytes]);
            let reference = format!("berth-bench/pull:{layers}x{}m", bytes >> 20);
            let archive = images.images_dir()?.join(format!("{name}-{key}.tar"));
            let id_file = archive.with_extension("id");
            let _lock = images.lock()?;
            if let (true, Ok(id)) = (archive.exists(), fs_err::read_to_string(&id_file)) {
                return Ok(BuiltImage {
                    reference,
                    id: id.trim().to_owned(),
                    archive,
                });
            }
            eprintln!("bench: building image {reference}");
            let temporary = images.temporary()?;
            let root = temporary.path().join("rootfs");
            busybox::populate(&root, &binary, &images.applets)
                .map_err(text("failed to add busybox to the image"))?;
            fs_err::write(
                root.join("etc/berth-bench-pull"),
                format!("berth bench cold-pull image {reference}\n"),
            )
            .map_err(|error| chain(&error))?;
            let mut layer_files = Vec::new();
            let base = (|| {
                let mut writer = LayerWriter::create(&temporary.path().join("base.tar.gz"), true)?;
                writer.tree(&root)?;
                writer.finish()
            })()
            .map_err(text("failed to write the base layer"))?;
            layer_files.push(base);
            for (index, size) in pull::layer_sizes(layers.saturating_sub(1).max(1), bytes)
                .into_iter()
                .enumerate()
            {
                let path = temporary.path().join(format!("data{index}.tar.gz"));
                layer_files.push(
                    pull::data_layer(&path, index + 2, size)
                        .map_err(text("failed to write a data layer"))?,
                );
            }
            let config = archive::config(&layer_files, &["sh"], "cold-pull data");
            let id = archive::write(&archive, &reference, &config, &layer_files)
                .map_err(text("failed to write the image archive"))?;
            fs_err::write(&id_file, &id).map_err(|error| chain(&error))?;
            Ok(BuiltImage {
                reference,
                id,
                archive,
            })
        })
    }

    /// The image id `engine` has under `reference`, if any.
    pub fn engine_image_id(engine: &Engine, reference: &str) -> Option<String> {
        engine
            .run(["image", "inspect", "--format", "{{.Id}}", reference])
            .ok()
            .map(|finished| finished.stdout().trim().to_owned())
    }

    /// Loads `image` into `engine` unless it already has it.
    pub fn load(&mut self, engine: &Engine, image: &BuiltImage) -> Result<(), String> {
        let key = (engine.label().to_owned(), image.id.clone());
        if self.loaded.contains(&key) {
            return Ok(());
        }
        if Self::engine_image_id(engine, &image.reference).as_deref() != Some(image.id.as_str()) {
            let mut command = engine.command(["load", "-q", "-i"]);
            command.arg(&image.archive);
            run_ok(&mut command, LOAD_TIMEOUT)
                .map_err(|error| format!("{} load failed: {}", engine.label(), chain(&error)))?;
            let loaded = Self::engine_image_id(engine, &image.reference);
            if loaded.as_deref() != Some(image.id.as_str()) {
                return Err(format!(
                    "{} loaded {} as {:?}, expected {}",
                    engine.label(),
                    image.reference,
                    loaded,
                    image.id
                ));
            }
        }
        self.loaded.insert(key);
        Ok(())
    }

    /// Forgets that `engine` has `image` (after it was removed there).
    pub fn forget(&mut self, engine: &Engine, image: &BuiltImage) {
        self.loaded
            .remove(&(engine.label().to_owned(), image.id.clone()));
    }

    /// Builds `image` with `build` and loads it into `engine`.
    pub fn ready(
        &mut self,
        engine: &Engine,
        build: fn(&mut Self) -> Result<BuiltImage, String>,
    ) -> Result<BuiltImage, String> {
        let image = build(self)?;
        self.load(engine, &image)?;
        Ok(image)
    }
}
