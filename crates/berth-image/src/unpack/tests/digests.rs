//! The diff id and the compressed digest, for each compression.

use super::support::{gzip, is_root, sha256, unpack, zstd, Layer};
use crate::unpack::Compression;

fn sample_tar() -> Vec<u8> {
    let mut layer = Layer::new();
    layer
        .dir("bin", 0o755)
        .file("bin/tool", &vec![0xab; 300_000], 0o755)
        .file("etc/conf", b"key=value\n", 0o644);
    layer.bytes()
}

#[test]
fn digests_match_for_every_compression() {
    if !is_root() {
        return;
    }
    let tar = sample_tar();
    for (compression, input) in [
        (Compression::None, tar.clone()),
        (Compression::Gzip, gzip(&tar)),
        (Compression::Zstd, zstd(&tar)),
    ] {
        let unpacked = unpack(&input);
        let outcome = unpacked.outcome();
        assert_eq!(outcome.compression, compression);
        assert_eq!(outcome.diff_id, sha256(&tar), "{compression}");
        assert_eq!(outcome.compressed_digest, sha256(&input), "{compression}");
        assert_eq!(outcome.size, 300_000 + 10, "{compression}");
        assert_eq!(
            fs_err::read(unpacked.root().join("etc/conf")).unwrap(),
            b"key=value\n"
        );
    }
}

#[test]
fn bytes_after_the_end_of_archive_count_in_the_diff_id() {
    if !is_root() {
        return;
    }
    let mut tar = sample_tar();
    tar.extend(vec![0; 10 * 512]);
    tar.extend(b"trailing bytes that are not tar");
    for input in [tar.clone(), gzip(&tar), zstd(&tar)] {
        let unpacked = unpack(&input);
        let outcome = unpacked.outcome();
        assert_eq!(outcome.diff_id, sha256(&tar));
        assert_eq!(outcome.compressed_digest, sha256(&input));
    }
}

#[test]
fn concatenated_gzip_members_are_one_stream() {
    if !is_root() {
        return;
    }
    let tar = sample_tar();
    let (head, tail) = tar.split_at(1000);
    let mut input = gzip(head);
    input.extend(gzip(tail));
    let unpacked = unpack(&input);
    assert_eq!(unpacked.outcome().diff_id, sha256(&tar));
    assert!(unpacked.root().join("bin/tool").is_file());
}

#[test]
fn empty_input_is_an_empty_layer() {
    if !is_root() {
        return;
    }
    let unpacked = unpack(b"");
    let outcome = unpacked.outcome();
    assert_eq!(outcome.diff_id, sha256(b""));
    assert_eq!(outcome.size, 0);
}
