//! Docker's `docker diff` rules one by one, on upper and lower dirs built by hand (see
//! `diff.rs` for the rules and where they come from).

use std::path::PathBuf;

use tempfile::TempDir;

use super::support::{is_root, lines, os_name, set_mode, set_mtime, Tree, MTIME};
use crate::changes::{changes, ChangesError};

/// A valid `security.capability` (revision 2, effective, `cap_net_bind_service`); the
/// kernel checks the format when it is set.
pub const CAPABILITY: [u8; 20] = [
    0x01, 0x00, 0x00, 0x02, 0x00, 0x04, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

struct Setup {
    _temp: TempDir,
    /// Bottom layer first.
    lowers: Vec<Tree>,
    upper: Tree,
}

impl Setup {
    fn new(layers: usize) -> Self {
        let temp = TempDir::new().unwrap();
        let lowers = (0..layers)
            .map(|index| Tree::new(temp.path(), &format!("l{index}")))
            .collect();
        let upper = Tree::new(temp.path(), "upper");
        Self {
            _temp: temp,
            lowers,
            upper,
        }
    }

    fn lower(&self, index: usize) -> &Tree {
        &self.lowers[index]
    }

    fn changes(&self) -> Vec<String> {
        let lowers: Vec<PathBuf> = self.lowers.iter().map(|tree| tree.root.clone()).collect();
        lines(&changes(&self.upper.root, &lowers).unwrap())
    }
}

#[test]
fn nothing_changed_lists_nothing() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup.lower(0).dir("etc").file("etc/passwd", "root\n");
    assert!(setup.changes().is_empty());
}

#[test]
fn a_file_only_copied_up_is_no_change() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup.lower(0).dir("etc").file("etc/keep", "keep\n");
    setup.upper.dir("etc").file("etc/keep", "keep\n");
    assert!(setup.changes().is_empty());
}

#[test]
fn mtimes_agree_when_seconds_do_and_one_side_has_no_nanoseconds() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup.lower(0).file("whole", "x").file("fine", "x");
    set_mtime(&setup.lower(0).path("fine"), MTIME as i64, 3);
    setup.upper.file("whole", "x").file("fine", "x");
    set_mtime(&setup.upper.path("whole"), MTIME as i64, 5);
    set_mtime(&setup.upper.path("fine"), MTIME as i64, 5);
    assert_eq!(setup.changes(), ["C /fine"]);
}

#[test]
fn size_mode_and_owner_of_a_file_count() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup
        .lower(0)
        .file("size", "x")
        .file("mode", "x")
        .file("owner", "x");
    setup
        .upper
        .file("size", "xy")
        .file("mode", "x")
        .file("owner", "x");
    set_mtime(&setup.upper.path("size"), MTIME as i64, 0);
    set_mode(&setup.upper.path("mode"), 0o600);
    fs_err::os::unix::fs::lchown(setup.upper.path("owner"), Some(1), None).unwrap();
    assert_eq!(setup.changes(), ["C /mode", "C /owner", "C /size"]);
}

#[test]
fn a_directory_counts_mode_and_owner_not_mtime() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup.lower(0).dir("mode").dir("time");
    setup.upper.dir("mode").dir("time");
    set_mode(&setup.upper.path("mode"), 0o700);
    set_mtime(&setup.upper.path("time"), MTIME as i64 + 60, 0);
    assert_eq!(setup.changes(), ["C /mode"]);
}

#[test]
fn a_capability_counts() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup.lower(0).file("ping", "elf");
    setup.upper.file("ping", "elf");
    xattr::set(setup.upper.path("ping"), "security.capability", &CAPABILITY).unwrap();
    assert_eq!(setup.changes(), ["C /ping"]);
}

#[test]
fn whiteouts_delete_what_the_image_shows() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(2);
    setup.lower(0).file("gone", "x").file("hidden", "x");
    setup.lower(1).whiteout("hidden");
    // A whiteout over a name the image already hides, and one over nothing at all.
    setup
        .upper
        .whiteout("gone")
        .file("hidden", "new")
        .whiteout("never");
    assert_eq!(setup.changes(), ["D /gone", "A /hidden"]);
}

#[test]
fn a_deleted_directory_lists_only_itself() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup.lower(0).dir("d").dir("d/x").file("d/x/y", "y");
    setup.upper.whiteout("d");
    assert_eq!(setup.changes(), ["D /d"]);
}

#[test]
fn a_new_tree_is_added_throughout() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup.lower(0).file("other", "x");
    setup
        .upper
        .dir("n")
        .dir("n/m")
        .file("n/m/o", "o")
        .whiteout("n/nothing");
    assert_eq!(setup.changes(), ["A /n", "A /n/m", "A /n/m/o"]);
}

#[test]
fn every_parent_of_a_change_is_listed() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup
        .lower(0)
        .dir("a")
        .dir("a/b")
        .dir("a/b/c")
        .file("a/b/c/f", "1");
    // Different contents of the same size and mtime would be no change to Docker either.
    setup
        .upper
        .dir("a")
        .dir("a/b")
        .dir("a/b/c")
        .file("a/b/c/f", "22");
    assert_eq!(
        setup.changes(),
        ["C /a", "C /a/b", "C /a/b/c", "C /a/b/c/f"]
    );
}

#[test]
fn an_opaque_upper_dir_deletes_what_it_hides() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup
        .lower(0)
        .dir("d")
        .file("d/same", "s")
        .file("d/gone", "g")
        .dir("d/sub")
        .file("d/sub/x", "x");
    // `same` as it was, and `sub` a plain directory: below the opaque `d` nothing of the
    // lower `d/sub` shows either.
    setup
        .upper
        .dir("d")
        .opaque("d")
        .file("d/same", "s")
        .dir("d/sub");
    assert_eq!(
        setup.changes(),
        ["C /d", "D /d/gone", "C /d/sub", "D /d/sub/x"]
    );
}

#[test]
fn an_opaque_lower_dir_hides_the_layers_below() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(2);
    setup.lower(0).dir("d").file("d/a", "a").file("d/b", "b");
    setup.lower(1).dir("d").opaque("d").file("d/c", "c");
    // `d/a` is hidden in the image already: its whiteout deletes nothing.
    setup
        .upper
        .dir("d")
        .whiteout("d/a")
        .file("d/b", "b")
        .file("d/c", "changed");
    assert_eq!(setup.changes(), ["C /d", "A /d/b", "C /d/c"]);
}

#[test]
fn a_lower_file_ends_the_directory_below_it() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(2);
    setup.lower(0).dir("d").file("d/x", "x");
    setup.lower(1).file("d", "file");
    // A directory over the file: the oldest layer's `d/x` shows in neither view.
    setup.upper.dir("d").file("d/y", "y");
    assert_eq!(setup.changes(), ["C /d", "A /d/y"]);
}

#[test]
fn replacing_a_file_by_a_directory_and_back() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup.lower(0).file("p", "p").dir("q").file("q/x", "x");
    setup.upper.dir("p").file("p/new", "n").file("q", "q");
    // Docker lists no `D /q/x`: below a directory replaced by a file nothing is listed.
    assert_eq!(setup.changes(), ["C /p", "A /p/new", "C /q"]);
}

#[test]
fn sorted_by_path_bytes() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup
        .upper
        .dir("a")
        .file("a/b", "")
        .file("a-b", "")
        .file("B", "");
    assert_eq!(setup.changes(), ["A /B", "A /a", "A /a-b", "A /a/b"]);
}

#[test]
fn names_that_are_not_utf8_are_shown_lossily() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    let name = setup.upper.root.join(os_name(b"caf\xe9"));
    fs_err::write(name, "").unwrap();
    assert_eq!(setup.changes(), ["A /caf\u{fffd}"]);
}

#[test]
fn without_lowers_everything_is_added() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(0);
    setup.upper.dir("d").file("d/f", "").symlink("l", "d/f");
    assert_eq!(setup.changes(), ["A /d", "A /d/f", "A /l"]);
}

#[test]
fn a_redirected_directory_is_refused() {
    if !is_root() {
        return;
    }
    let setup = Setup::new(1);
    setup.lower(0).dir("old").file("old/f", "f");
    setup.upper.whiteout("old").dir("new");
    xattr::set(setup.upper.path("new"), "trusted.overlay.redirect", b"/old").unwrap();
    let lowers = vec![setup.lower(0).root.clone()];
    let error = changes(&setup.upper.root, &lowers).unwrap_err();
    assert!(
        matches!(
            &error,
            ChangesError::UnsupportedOverlayFeature { path, feature: "redirect_dir" }
                if *path == setup.upper.path("new")
        ),
        "{error:?}"
    );
}

#[test]
fn a_missing_upper_dir_is_named() {
    let temp = TempDir::new().unwrap();
    let missing = temp.path().join("missing");
    let error = changes(&missing, &[]).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("failed to open directory {missing:?}")
    );
    assert!(std::error::Error::source(&error).is_some());
}
