//! Lexical checks on the paths written in a tar stream, before anything touches the disk.
//!
//! Symlinks are not looked at here; `resolve` follows them, confined to the destination.

/// Why an entry path was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PathProblem {
    Absolute,
    ParentComponent,
}

/// Splits an entry path into its components. Empty and `.` components are dropped, so
/// `./a//b/` gives `[a, b]` and `./` gives `[]` (the layer root). A leading `/` or any `..`
/// is refused: an entry names a place inside the layer, never one reached by climbing.
pub(super) fn entry_components(path: &[u8]) -> Result<Vec<&[u8]>, PathProblem> {
    if path.first() == Some(&b'/') {
        return Err(PathProblem::Absolute);
    }
    let mut components = Vec::with_capacity(8);
    for component in path.split(|byte| *byte == b'/') {
        match component {
            b"" | b"." => {}
            b".." => return Err(PathProblem::ParentComponent),
            name => components.push(name),
        }
    }
    Ok(components)
}

/// Splits a hardlink target into components, relative to the layer root. The target names
/// another entry of the same archive, so it is cleaned lexically: a leading `/` means the
/// layer root (as GNU tar and Docker read it) and `..` steps back, but never above the
/// root. `None` means the target climbs out of the layer.
pub(super) fn hardlink_target_components(target: &[u8]) -> Option<Vec<&[u8]>> {
    let mut components: Vec<&[u8]> = Vec::with_capacity(8);
    for component in target.split(|byte| *byte == b'/') {
        match component {
            b"" | b"." => {}
            b".." => {
                components.pop()?;
            }
            name => components.push(name),
        }
    }
    Some(components)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_components_drop_dots_and_empty_parts() {
        assert_eq!(
            entry_components(b"./a//b/./c/").unwrap(),
            [&b"a"[..], b"b", b"c"]
        );
        assert!(entry_components(b"./").unwrap().is_empty());
        assert!(entry_components(b"").unwrap().is_empty());
        assert_eq!(entry_components(b"..a/b..").unwrap(), [&b"..a"[..], b"b.."]);
    }

    #[test]
    fn entry_components_refuse_absolute_and_parent() {
        assert_eq!(entry_components(b"/etc/x"), Err(PathProblem::Absolute));
        assert_eq!(entry_components(b"../x"), Err(PathProblem::ParentComponent));
        assert_eq!(
            entry_components(b"a/../b"),
            Err(PathProblem::ParentComponent)
        );
        assert_eq!(entry_components(b"a/.."), Err(PathProblem::ParentComponent));
    }

    #[test]
    fn hardlink_targets_are_root_relative_and_confined() {
        assert_eq!(
            hardlink_target_components(b"/a/b").unwrap(),
            [&b"a"[..], b"b"]
        );
        assert_eq!(
            hardlink_target_components(b"a/x/../b").unwrap(),
            [&b"a"[..], b"b"]
        );
        assert!(hardlink_target_components(b"../etc/passwd").is_none());
        assert!(hardlink_target_components(b"a/../../b").is_none());
    }
}
