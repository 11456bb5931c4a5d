//! Go `path/filepath` semantics on raw bytes, and the `docker cp` path helpers built on
//! them (moby `go-archive/copy.go`). `docker cp` decides what to copy where from the
//! spelling of the paths — a trailing `/`, a final `/.` — so these must clean and split
//! paths exactly as Go does, byte for byte.

/// `filepath.Clean`: the shortest lexically equivalent path. `..` is resolved against the
/// preceding element without looking at the file system, and cannot climb above `/`.
pub(crate) fn clean(path: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        return b".".to_vec();
    }
    let rooted = path[0] == b'/';
    let mut parts: Vec<&[u8]> = Vec::new();
    // Leading `..` elements of a relative path that cannot be resolved.
    let mut kept_parents = 0usize;
    for part in path.split(|byte| *byte == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                if parts.len() > kept_parents {
                    parts.pop();
                } else if !rooted {
                    parts.push(b"..");
                    kept_parents += 1;
                }
            }
            _ => parts.push(part),
        }
    }
    let mut cleaned = Vec::with_capacity(path.len());
    if rooted {
        cleaned.push(b'/');
    }
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            cleaned.push(b'/');
        }
        cleaned.extend_from_slice(part);
    }
    if cleaned.is_empty() {
        cleaned.push(b'.');
    }
    cleaned
}

/// `filepath.Base`: the last element, trailing slashes ignored; `/` for the root and `.`
/// for an empty path.
pub(crate) fn base(path: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        return b".".to_vec();
    }
    let trimmed = trim_trailing_slashes(path);
    if trimmed.is_empty() {
        return b"/".to_vec();
    }
    match trimmed.iter().rposition(|byte| *byte == b'/') {
        Some(slash) => trimmed[slash + 1..].to_vec(),
        None => trimmed.to_vec(),
    }
}

/// `filepath.Dir`: everything but the last element, cleaned.
pub(crate) fn dir(path: &[u8]) -> Vec<u8> {
    let end = path
        .iter()
        .rposition(|byte| *byte == b'/')
        .map_or(0, |slash| slash + 1);
    clean(&path[..end])
}

/// `filepath.Join` of two elements: joined with `/` and cleaned; an empty element is
/// ignored.
pub(crate) fn join(first: &[u8], second: &[u8]) -> Vec<u8> {
    match (first.is_empty(), second.is_empty()) {
        (true, true) => Vec::new(),
        (true, false) => clean(second),
        (false, true) => clean(first),
        (false, false) => {
            let mut joined = first.to_vec();
            joined.push(b'/');
            joined.extend_from_slice(second);
            clean(&joined)
        }
    }
}

/// `filepath.IsLocal` on Unix: relative, not empty, and never climbing above its start.
pub(crate) fn is_local(path: &[u8]) -> bool {
    if path.is_empty() || path[0] == b'/' {
        return false;
    }
    let cleaned = clean(path);
    !(cleaned == b".." || cleaned.starts_with(b"../"))
}

fn trim_trailing_slashes(path: &[u8]) -> &[u8] {
    let end = path
        .iter()
        .rposition(|byte| *byte != b'/')
        .map_or(0, |last| last + 1);
    &path[..end]
}

pub(crate) fn has_trailing_separator(path: &[u8]) -> bool {
    path.last() == Some(&b'/')
}

/// The last element is `.`, i.e. the path names "the contents of" a directory.
pub(crate) fn specifies_current_dir(path: &[u8]) -> bool {
    base(path) == b"."
}

/// A trailing `/` or `/.` says the path must be a directory.
pub(crate) fn asserts_directory(path: &[u8]) -> bool {
    has_trailing_separator(path) || specifies_current_dir(path)
}

/// `PreserveTrailingDotOrSeparator`: puts back the `/.` or `/` that cleaning removed.
pub(crate) fn preserve_trailing_dot_or_separator(cleaned: &[u8], original: &[u8]) -> Vec<u8> {
    let mut result = cleaned.to_vec();
    if !specifies_current_dir(&result) && specifies_current_dir(original) {
        if !has_trailing_separator(&result) {
            result.push(b'/');
        }
        result.push(b'.');
    }
    if !has_trailing_separator(&result) && has_trailing_separator(original) {
        result.push(b'/');
    }
    result
}

/// `SplitPathDirEntry`: the directory and the entry in it, keeping a final `.`.
pub(crate) fn split_dir_entry(path: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut cleaned = clean(path);
    if specifies_current_dir(path) {
        cleaned.extend_from_slice(b"/.");
    }
    (dir(&cleaned), base(&cleaned))
}

/// `filepath.Split`: everything up to and including the last `/`, and the rest.
pub(crate) fn split(path: &[u8]) -> (&[u8], &[u8]) {
    let at = path
        .iter()
        .rposition(|byte| *byte == b'/')
        .map_or(0, |slash| slash + 1);
    path.split_at(at)
}

/// `GetRebaseName`: after following a symlink named by `path` to `resolved`, gives the
/// resolved path with `path`'s trailing `/` or `/.` and, when the last element changed,
/// the name the copy must carry instead (the link's name).
pub(crate) fn rebase_name(path: &[u8], resolved: &[u8]) -> (Vec<u8>, Option<Vec<u8>>) {
    let mut resolved = resolved.to_vec();
    if specifies_current_dir(path) && !specifies_current_dir(&resolved) {
        resolved.extend_from_slice(b"/.");
    }
    if has_trailing_separator(path) && !has_trailing_separator(&resolved) {
        resolved.push(b'/');
    }
    let rename = (base(path) != base(&resolved)).then(|| base(path));
    (resolved, rename)
}

/// `filepath.Abs` for a path given on the host, against `current_dir`.
pub(crate) fn absolute(path: &[u8], current_dir: &[u8]) -> Vec<u8> {
    if path.first() == Some(&b'/') {
        clean(path)
    } else {
        join(current_dir, path)
    }
}

/// Renames archive entries whose name starts with the element `old` to start with `new`
/// instead (`RebaseArchiveEntries`). Names that do not start with `old` as a whole
/// element are left alone. An `old` of `/` rebases entries of an archive of the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rebase {
    old: Vec<u8>,
    new: Vec<u8>,
}

impl Rebase {
    pub(crate) fn new(old: &[u8], new: &[u8]) -> Self {
        Self {
            old: trim_trailing_slashes(old).to_vec(),
            new: trim_trailing_slashes(new).to_vec(),
        }
    }

    pub(crate) fn apply(&self, name: &[u8]) -> Vec<u8> {
        if self.old.is_empty() {
            let start = name
                .iter()
                .position(|byte| *byte != b'/')
                .unwrap_or(name.len());
            let rest = &name[start..];
            if self.new.is_empty() {
                return rest.to_vec();
            }
            let mut renamed = self.new.clone();
            renamed.push(b'/');
            renamed.extend_from_slice(rest);
            return renamed;
        }
        match name.strip_prefix(self.old.as_slice()) {
            Some(suffix) if suffix.is_empty() || suffix[0] == b'/' => {
                let mut renamed = self.new.clone();
                renamed.extend_from_slice(suffix);
                renamed
            }
            _ => name.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn clean_matches_go() {
        // Cases from Go's path/filepath tests.
        let cases = [
            ("", "."),
            ("abc", "abc"),
            ("abc/def", "abc/def"),
            ("a/b/c", "a/b/c"),
            (".", "."),
            ("..", ".."),
            ("../..", "../.."),
            ("../../abc", "../../abc"),
            ("/abc", "/abc"),
            ("/", "/"),
            ("abc/", "abc"),
            ("abc/def/", "abc/def"),
            ("/abc/", "/abc"),
            ("//abc", "/abc"),
            ("abc//def//ghi", "abc/def/ghi"),
            ("abc/./def", "abc/def"),
            ("/./abc/def", "/abc/def"),
            ("abc/.", "abc"),
            ("abc/def/ghi/../jkl", "abc/def/jkl"),
            ("abc/def/../ghi/../jkl", "abc/jkl"),
            ("abc/def/..", "abc"),
            ("abc/def/../..", "."),
            ("/abc/def/../..", "/"),
            ("abc/def/../../..", ".."),
            ("/abc/def/../../..", "/"),
            ("abc/def/../../../ghi/jkl/../../../mno", "../../mno"),
            ("/../abc", "/abc"),
        ];
        for (input, want) in cases {
            assert_eq!(s(clean(input.as_bytes())), want, "clean({input:?})");
        }
    }

    #[test]
    fn base_dir_split() {
        assert_eq!(s(base(b"/src/dir/")), "dir");
        assert_eq!(s(base(b"/src/dir/.")), ".");
        assert_eq!(s(base(b"/")), "/");
        assert_eq!(s(base(b"")), ".");
        assert_eq!(s(dir(b"/src/file")), "/src");
        assert_eq!(s(dir(b"file")), ".");
        assert_eq!(s(dir(b"/src/dir/")), "/src/dir");
        assert_eq!(split(b"/a/b/"), (&b"/a/b/"[..], &b""[..]));
        assert_eq!(split(b"/a/b"), (&b"/a/"[..], &b"b"[..]));
        let (d, b) = split_dir_entry(b"/src/dir/.");
        assert_eq!((s(d), s(b)), ("/src/dir".into(), ".".into()));
        let (d, b) = split_dir_entry(b"/src/dir/");
        assert_eq!((s(d), s(b)), ("/src".into(), "dir".into()));
        let (d, b) = split_dir_entry(b"/");
        assert_eq!((s(d), s(b)), ("/".into(), "/".into()));
    }

    #[test]
    fn trailing_dot_and_separator_survive_cleaning() {
        let keep = |original: &str| {
            s(preserve_trailing_dot_or_separator(
                &clean(original.as_bytes()),
                original.as_bytes(),
            ))
        };
        assert_eq!(keep("/src/dir/."), "/src/dir/.");
        assert_eq!(keep("/src/dir/"), "/src/dir/");
        assert_eq!(keep("/src//dir"), "/src/dir");
        assert_eq!(keep("/"), "/");
        assert_eq!(keep("/."), "/.");
        assert_eq!(keep("./"), "./");
    }

    #[test]
    fn locality() {
        for local in ["a", "a/b", "a/../b", ".", "a/.."] {
            assert!(is_local(local.as_bytes()), "{local}");
        }
        for escaping in ["", "/a", "..", "../a", "a/../../b"] {
            assert!(!is_local(escaping.as_bytes()), "{escaping}");
        }
    }

    #[test]
    fn rebase_names_like_go() {
        let (resolved, name) = rebase_name(b"/src/link", b"/src/file");
        assert_eq!(
            (s(resolved), name.map(s)),
            ("/src/file".into(), Some("link".into()))
        );
        let (resolved, name) = rebase_name(b"/src/dirlink/.", b"/src/dir");
        assert_eq!((s(resolved), name.map(s)), ("/src/dir/.".into(), None));
        let (resolved, name) = rebase_name(b"/src/dirlink/", b"/src/dir");
        assert_eq!(
            (s(resolved), name.map(s)),
            ("/src/dir/".into(), Some("dirlink".into()))
        );

        let rebase = Rebase::new(b"dir", b"new");
        assert_eq!(s(rebase.apply(b"dir/")), "new/");
        assert_eq!(s(rebase.apply(b"dir/a")), "new/a");
        assert_eq!(s(rebase.apply(b"dir")), "new");
        assert_eq!(s(rebase.apply(b"directory/a")), "directory/a");
        let dot = Rebase::new(b".", b"new");
        assert_eq!(s(dot.apply(b"./")), "new/");
        assert_eq!(s(dot.apply(b"./a")), "new/a");
        let root = Rebase::new(b"/", b"new");
        assert_eq!(s(root.apply(b"/")), "new/");
        assert_eq!(s(root.apply(b"/bin/")), "new/bin/");
    }

    #[test]
    fn absolute_paths_against_the_current_directory() {
        assert_eq!(s(absolute(b"out", b"/home/me")), "/home/me/out");
        assert_eq!(s(absolute(b"../out", b"/home/me")), "/home/out");
        assert_eq!(s(absolute(b"/x//y/", b"/home/me")), "/x/y");
    }
}
