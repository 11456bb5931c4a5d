//! Kernel modules for the guest: find them in a kernel package's
//! `lib/modules/<release>/`, resolve their dependencies, read them.
//!
//! A package extracted with `dpkg-deb -x` has no `modules.dep` (depmod writes
//! it when the package is installed), so dependencies come from `modules.dep`
//! when it is there and otherwise from each module's own `.modinfo` section
//! (`depends=virtio,virtio_ring`), which is where depmod reads them from.
//! Modules listed in `modules.builtin` are part of the kernel and skipped, so
//! a kernel with the drivers built in needs none.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use fs_err as fs;

/// A module to load in the guest, dependencies before dependants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// The kernel's name for it (`virtio_mmio`).
    pub name: String,
    /// The file on the host (`.ko` or `.ko.xz`).
    pub path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    #[error("failed to read the modules of {dir:?}")]
    ReadDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to read module {path:?}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("module {name:?} is neither in {dir:?} nor built into the kernel")]
    NotFound { name: String, dir: PathBuf },
    #[error("module {path:?} is not an ELF64 little-endian object with a .modinfo section")]
    BadObject { path: PathBuf },
    #[error("module {path:?} is compressed in a format berth cannot read (only .ko and .ko.xz)")]
    UnsupportedCompression { path: PathBuf },
    #[error("failed to decompress module {path:?}")]
    Decompress {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The modules of one kernel release.
#[derive(Debug)]
pub struct ModuleIndex {
    dir: PathBuf,
    /// Module name → file.
    files: HashMap<String, PathBuf>,
    builtin: HashSet<String>,
    /// Module name → dependency names, from `modules.dep` when present.
    dep_file: Option<HashMap<String, Vec<String>>>,
}

impl ModuleIndex {
    /// Indexes `lib/modules/<release>` (the directory holding `kernel/`).
    pub fn load(dir: &Path) -> Result<ModuleIndex, ModuleError> {
        let mut files = HashMap::new();
        let mut pending = vec![dir.join("kernel")];
        while let Some(current) = pending.pop() {
            let entries = fs::read_dir(&current).map_err(|source| ModuleError::ReadDir {
                dir: current.clone(),
                source,
            })?;
            for entry in entries {
                let entry = entry.map_err(|source| ModuleError::ReadDir {
                    dir: current.clone(),
                    source,
                })?;
                let path = entry.path();
                let file_type = entry.file_type().map_err(|source| ModuleError::ReadDir {
                    dir: current.clone(),
                    source,
                })?;
                if file_type.is_dir() {
                    pending.push(path);
                } else if let Some(name) = module_name(&path) {
                    files.insert(name, path);
                }
            }
        }
        let builtin = match fs::read_to_string(dir.join("modules.builtin")) {
            Ok(text) => text
                .lines()
                .filter_map(|line| module_name(Path::new(line)))
                .collect(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => HashSet::new(),
            Err(source) => {
                return Err(ModuleError::ReadDir {
                    dir: dir.to_path_buf(),
                    source,
                })
            }
        };
        let dep_file = match fs::read_to_string(dir.join("modules.dep")) {
            Ok(text) => Some(parse_modules_dep(&text)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(ModuleError::ReadDir {
                    dir: dir.to_path_buf(),
                    source,
                })
            }
        };
        Ok(ModuleIndex {
            dir: dir.to_path_buf(),
            files,
            builtin,
            dep_file,
        })
    }

    /// The modules to load for `names`, each after its dependencies, each
    /// once; built-in ones are left out.
    pub fn resolve(&self, names: &[&str]) -> Result<Vec<Module>, ModuleError> {
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        for name in names {
            self.visit(&normalize(name), &mut seen, &mut order)?;
        }
        Ok(order)
    }

    fn visit(
        &self,
        name: &str,
        seen: &mut HashSet<String>,
        order: &mut Vec<Module>,
    ) -> Result<(), ModuleError> {
        if !seen.insert(name.to_string()) {
            return Ok(());
        }
        let Some(path) = self.files.get(name) else {
            if self.builtin.contains(name) {
                return Ok(());
            }
            return Err(ModuleError::NotFound {
                name: name.to_string(),
                dir: self.dir.clone(),
            });
        };
        for dependency in self.dependencies(name, path)? {
            self.visit(&dependency, seen, order)?;
        }
        order.push(Module {
            name: name.to_string(),
            path: path.clone(),
        });
        Ok(())
    }

    fn dependencies(&self, name: &str, path: &Path) -> Result<Vec<String>, ModuleError> {
        if let Some(deps) = &self.dep_file {
            return Ok(deps.get(name).cloned().unwrap_or_default());
        }
        let object = read_module(path)?;
        let depends = modinfo(&object, "depends").ok_or_else(|| ModuleError::BadObject {
            path: path.to_path_buf(),
        })?;
        Ok(depends
            .split(',')
            .filter(|name| !name.is_empty())
            .map(normalize)
            .collect())
    }
}

/// The module's object code, decompressed if it is a `.ko.xz`.
pub fn read_module(path: &Path) -> Result<Vec<u8>, ModuleError> {
    let bytes = fs::read(path).map_err(|source| ModuleError::Read {
        path: path.into(),
        source,
    })?;
    let file_name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    if file_name.ends_with(".ko") {
        Ok(bytes)
    } else if file_name.ends_with(".ko.xz") {
        let mut out = Vec::new();
        let mut reader = xz4rust::XzReader::new(std::io::Cursor::new(bytes));
        std::io::Read::read_to_end(&mut reader, &mut out).map_err(|source| {
            ModuleError::Decompress {
                path: path.into(),
                source,
            }
        })?;
        Ok(out)
    } else {
        Err(ModuleError::UnsupportedCompression { path: path.into() })
    }
}

/// `virtio-mmio.ko.xz` → `virtio_mmio`: the kernel treats `-` and `_` alike.
fn module_name(path: &Path) -> Option<String> {
    let file_name = path.file_name()?.to_str()?;
    let stem = [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
        .iter()
        .find_map(|suffix| file_name.strip_suffix(suffix))?;
    Some(normalize(stem))
}

fn normalize(name: &str) -> String {
    name.replace('-', "_")
}

/// `kernel/a/x.ko: kernel/b/y.ko kernel/c/z.ko` lines → `x → [y, z]`.
fn parse_modules_dep(text: &str) -> HashMap<String, Vec<String>> {
    text.lines()
        .filter_map(|line| {
            let (module, deps) = line.split_once(':')?;
            let name = module_name(Path::new(module.trim()))?;
            let deps = deps
                .split_whitespace()
                .filter_map(|dep| module_name(Path::new(dep)));
            Some((name, deps.collect()))
        })
        .collect()
}

/// The value of `key=` in an ELF64 little-endian object's `.modinfo`
/// section (NUL-separated `key=value` strings), or `None` when the object is
/// malformed or has no such section. A module with no dependencies still has
/// `depends=`, so `Some("")`.
fn modinfo<'a>(object: &'a [u8], key: &str) -> Option<&'a str> {
    let section = elf_section(object, ".modinfo")?;
    section
        .split(|&byte| byte == 0)
        .filter_map(|entry| std::str::from_utf8(entry).ok())
        .find_map(|entry| entry.strip_prefix(key)?.strip_prefix('='))
}

fn elf_section<'a>(object: &'a [u8], wanted: &str) -> Option<&'a [u8]> {
    let u16_at = |at: usize| Some(u16::from_le_bytes(*object.get(at..at + 2)?.first_chunk()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(*object.get(at..at + 4)?.first_chunk()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(*object.get(at..at + 8)?.first_chunk()?));
    // e_ident: magic, ELFCLASS64, ELFDATA2LSB.
    if object.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let section_headers = usize::try_from(u64_at(0x28)?).ok()?;
    let entry_size = usize::from(u16_at(0x3a)?);
    let count = usize::from(u16_at(0x3c)?);
    let names_index = usize::from(u16_at(0x3e)?);
    let section = |index: usize| -> Option<(u32, &'a [u8])> {
        let header = section_headers.checked_add(index.checked_mul(entry_size)?)?;
        let name = u32_at(header)?;
        let offset = usize::try_from(u64_at(header + 0x18)?).ok()?;
        let size = usize::try_from(u64_at(header + 0x20)?).ok()?;
        Some((name, object.get(offset..offset.checked_add(size)?)?))
    };
    let (_, names) = section(names_index)?;
    (0..count).find_map(|index| {
        let (name, data) = section(index)?;
        let name = names.get(name as usize..)?;
        let end = name.iter().position(|&byte| byte == 0)?;
        (&name[..end] == wanted.as_bytes()).then_some(data)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 object whose sections are a string table and a
    /// `.modinfo` holding `modinfo`.
    fn object(modinfo: &[u8]) -> Vec<u8> {
        let names = b"\0.shstrtab\0.modinfo\0";
        let mut object = vec![0u8; 0x40];
        object[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let names_at = object.len();
        object.extend_from_slice(names);
        let modinfo_at = object.len();
        object.extend_from_slice(modinfo);
        let headers_at = object.len();
        object[0x28..0x30].copy_from_slice(&(headers_at as u64).to_le_bytes());
        object[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        object[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        object[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
        for (name, offset, size) in [
            (0u32, 0usize, 0usize),
            (1, names_at, names.len()),
            (11, modinfo_at, modinfo.len()),
        ] {
            let mut header = [0u8; 64];
            header[..4].copy_from_slice(&name.to_le_bytes());
            header[0x18..0x20].copy_from_slice(&(offset as u64).to_le_bytes());
            header[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
            object.extend_from_slice(&header);
        }
        object
    }

    #[test]
    fn reads_depends_from_modinfo() {
        let object = object(b"license=GPL\0depends=virtio,virtio_ring\0intree=Y\0");
        assert_eq!(modinfo(&object, "depends"), Some("virtio,virtio_ring"));
        assert_eq!(modinfo(&object, "license"), Some("GPL"));
        assert_eq!(modinfo(&object, "vermagic"), None);
        assert_eq!(modinfo(&object[..0x30], "depends"), None);
        assert_eq!(modinfo(b"not an elf", "depends"), None);
    }

    #[test]
    fn resolves_dependencies_first_once_and_skips_builtins() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = dir.path().join("kernel/drivers/virtio");
        fs::create_dir_all(&kernel).unwrap();
        fs::write(kernel.join("virtio.ko"), object(b"depends=\0")).unwrap();
        fs::write(kernel.join("virtio_ring.ko"), object(b"depends=\0")).unwrap();
        fs::write(
            kernel.join("virtio_mmio.ko"),
            object(b"depends=virtio,virtio_ring\0"),
        )
        .unwrap();
        fs::write(
            kernel.join("virtio-console.ko"),
            object(b"depends=virtio_ring,virtio\0"),
        )
        .unwrap();
        fs::write(kernel.join("needs_builtin.ko"), object(b"depends=crc32c\0")).unwrap();
        fs::write(dir.path().join("modules.builtin"), "kernel/lib/crc32c.ko\n").unwrap();
        let index = ModuleIndex::load(dir.path()).unwrap();
        let names = |modules: Vec<Module>| modules.into_iter().map(|m| m.name).collect::<Vec<_>>();
        assert_eq!(
            names(index.resolve(&["virtio_mmio", "virtio_console"]).unwrap()),
            ["virtio", "virtio_ring", "virtio_mmio", "virtio_console"]
        );
        assert_eq!(
            names(index.resolve(&["needs_builtin"]).unwrap()),
            ["needs_builtin"]
        );
        assert!(matches!(
            index.resolve(&["nope"]),
            Err(ModuleError::NotFound { .. })
        ));

        // With a modules.dep, that is what counts.
        fs::write(
            dir.path().join("modules.dep"),
            "kernel/drivers/virtio/virtio_mmio.ko: kernel/drivers/virtio/virtio_ring.ko\n",
        )
        .unwrap();
        let index = ModuleIndex::load(dir.path()).unwrap();
        assert_eq!(
            names(index.resolve(&["virtio_mmio"]).unwrap()),
            ["virtio_ring", "virtio_mmio"]
        );
    }
}
