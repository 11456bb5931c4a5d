//! RUN steps for another architecture than the host's run their programs
//! through an emulator the kernel picks by binfmt_misc: Debian's
//! `qemu-user-static` registers `qemu-aarch64` and the others. The builder
//! does not register anything itself (that is the host's policy); it checks
//! before the first such RUN that a handler is there, enabled and with the
//! `F` flag (the kernel opened the interpreter when it was registered, so
//! it works inside a container whose root has no `/usr/bin/qemu-*`), and
//! refuses the build with what to install otherwise.

use std::path::Path;

use crate::BuildError;

/// Where the kernel lists the handlers (binfmt_misc(7)).
pub const BINFMT_MISC: &str = "/proc/sys/fs/binfmt_misc";

/// One handler, as its file under `binfmt_misc/` describes it.
#[derive(Debug, PartialEq, Eq)]
struct Handler {
    name: String,
    enabled: bool,
    interpreter: String,
    flags: String,
    /// The magic bytes matched at offset 0, as hex.
    magic: String,
}

fn parse_handler(name: &str, text: &str) -> Option<Handler> {
    let mut handler = Handler {
        name: name.to_owned(),
        enabled: false,
        interpreter: String::new(),
        flags: String::new(),
        magic: String::new(),
    };
    for line in text.lines() {
        if line == "enabled" {
            handler.enabled = true;
        } else if let Some(path) = line.strip_prefix("interpreter ") {
            handler.interpreter = path.to_owned();
        } else if let Some(flags) = line.strip_prefix("flags: ") {
            handler.flags = flags.to_owned();
        } else if let Some(magic) = line.strip_prefix("magic ") {
            handler.magic = magic.to_owned();
        } else if line.starts_with("offset ") && line != "offset 0" {
            return None;
        }
    }
    (!handler.magic.is_empty()).then_some(handler)
}

/// The ELF `e_machine` bytes (offset 18, in the file's byte order) of an
/// OCI architecture's binaries, as hex.
fn elf_machine(architecture: &str) -> Option<&'static str> {
    Some(match architecture {
        "amd64" => "3e00",
        "386" => "0300",
        "arm64" => "b700",
        "arm" => "2800",
        "ppc64le" => "1500",
        "riscv64" => "f300",
        "mips64le" => "0800",
        "s390x" => "0016",
        _ => return None,
    })
}

/// Whether a handler's magic matches ELF binaries of `machine`: the ELF
/// header's first 20 bytes carry the class, byte order and machine; a
/// handler's magic covers them (its mask, not checked here, leaves out the
/// bytes that vary).
fn handles(handler: &Handler, machine: &str) -> bool {
    handler.magic.starts_with("7f454c46") && handler.magic.get(36..40) == Some(machine)
}

/// Checks that `architecture`'s binaries can run on this host; `platform`
/// names it in the error (`linux/arm64`).
pub fn check(directory: &Path, architecture: &str, platform: &str) -> Result<(), BuildError> {
    let Some(machine) = elf_machine(architecture) else {
        return Err(BuildError::Unsupported(format!(
            "no emulator is known for platform {platform}: berth runs RUN steps for \
             amd64, 386, arm64, arm, ppc64le, riscv64, mips64le and s390x"
        )));
    };
    let install = "install Debian's qemu-user-static and register its binfmt_misc handlers \
                   with the fix-binary flag (as its /usr/lib/binfmt.d files do)";
    let status = fs_err::read_to_string(directory.join("status")).unwrap_or_default();
    if status.trim() != "enabled" {
        return Err(BuildError::Invalid(format!(
            "cannot run RUN steps for platform {platform}: binfmt_misc is not mounted or not \
             enabled at {}: {install}",
            directory.display()
        )));
    }
    let mut found = Vec::new();
    for entry in fs_err::read_dir(directory).map_err(|error| {
        BuildError::Invalid(format!("failed to read {}: {error}", directory.display()))
    })? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "status" || name == "register" {
            continue;
        }
        let text = fs_err::read_to_string(entry.path()).unwrap_or_default();
        if let Some(handler) = parse_handler(&name, &text) {
            if handles(&handler, machine) {
                found.push(handler);
            }
        }
    }
    if found
        .iter()
        .any(|handler| handler.enabled && handler.flags.contains('F'))
    {
        return Ok(());
    }
    let detail = match found.first() {
        None => format!("no binfmt_misc handler runs {architecture} binaries"),
        Some(handler) if !handler.enabled => {
            format!("the binfmt_misc handler {} is disabled", handler.name)
        }
        Some(handler) => format!(
            "the binfmt_misc handler {} ({}) lacks the F flag, so its interpreter is not \
             found inside a build container",
            handler.name, handler.interpreter
        ),
    };
    Err(BuildError::Invalid(format!(
        "cannot run RUN steps for platform {platform}: {detail}: {install}"
    )))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const AARCH64: &str = "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\n\
flags: POCF\noffset 0\nmagic 7f454c460201010000000000000000000200b700\n\
mask ffffffffffffff00fffffffffffffffffeffffff\n";

    fn directory(handlers: &[(&str, &str)], status: &str) -> tempfile::TempDir {
        let directory = tempfile::tempdir().unwrap();
        fs_err::write(directory.path().join("status"), status).unwrap();
        fs_err::write(directory.path().join("register"), "").unwrap();
        for (name, text) in handlers {
            fs_err::write(directory.path().join(name), text).unwrap();
        }
        directory
    }

    fn error(directory: &tempfile::TempDir, architecture: &str) -> String {
        check(directory.path(), architecture, "linux/x")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn an_enabled_handler_with_the_fix_binary_flag_serves() {
        let found = directory(&[("qemu-aarch64", AARCH64)], "enabled\n");
        check(found.path(), "arm64", "linux/arm64").unwrap();
        assert!(error(&found, "riscv64").contains("no binfmt_misc handler runs riscv64"));
    }

    #[test]
    fn what_is_missing_is_named() {
        let none = directory(&[], "enabled\n");
        assert!(error(&none, "arm64").contains("no binfmt_misc handler runs arm64 binaries"));
        assert!(error(&none, "arm64").contains("qemu-user-static"));
        let off = directory(&[("qemu-aarch64", AARCH64)], "disabled\n");
        assert!(error(&off, "arm64").contains("binfmt_misc is not mounted or not enabled"));
        let disabled = AARCH64.replace("enabled\n", "disabled\n");
        let disabled = directory(&[("qemu-aarch64", &disabled)], "enabled\n");
        assert!(error(&disabled, "arm64").contains("handler qemu-aarch64 is disabled"));
        let unfixed = AARCH64.replace("flags: POCF", "flags: OC");
        let unfixed = directory(&[("qemu-aarch64", &unfixed)], "enabled\n");
        assert!(error(&unfixed, "arm64").contains("lacks the F flag"));
        let unknown = directory(&[], "enabled\n");
        assert!(error(&unknown, "sparc").contains("no emulator is known"));
    }

    #[test]
    fn big_endian_machines_match_their_byte_order() {
        let s390x = "enabled\ninterpreter /usr/bin/qemu-s390x-static\nflags: F\noffset 0\n\
magic 7f454c460201010000000000000000000002000016\n";
        let found = directory(&[("qemu-s390x", s390x)], "enabled\n");
        // The big-endian header's e_type is 0002 and its machine 0016.
        assert!(check(found.path(), "s390x", "linux/s390x").is_err());
        let s390x = s390x.replace(
            "7f454c460201010000000000000000000002000016",
            "7f454c4602020100000000000000000000020016",
        );
        let found = directory(&[("qemu-s390x", &s390x)], "enabled\n");
        check(found.path(), "s390x", "linux/s390x").unwrap();
    }
}
