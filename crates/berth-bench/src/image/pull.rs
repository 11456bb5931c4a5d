//! Data layers for the cold-pull image, as scripts/bench-pull.sh makes them:
//! seeded pseudo-random content, half raw random bytes and half hex text in
//! 64 KiB blocks (it compresses to about 0.8, like a mix of binaries and
//! text), in files of at most 8 MiB plus some small ones. Deterministic.

use std::io::Read;
use std::path::Path;

use super::layer::{LayerFile, LayerWriter};

const BLOCK: usize = 64 << 10;
const BIG_FILE: u64 = 8 << 20;
const SMALL_FILES: usize = 16;

/// xorshift64*: fast, seeded, good enough to defeat compression.
pub struct Random(u64);

impl Random {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut state = self.0;
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        self.0 = state;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn fill(&mut self, buffer: &mut [u8]) {
        for chunk in buffer.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// A reader of `size` bytes of the mixed content, from `random`.
pub struct MixedContent {
    random: Random,
    left: u64,
    block: Vec<u8>,
    position: usize,
    raw: bool,
}

impl MixedContent {
    pub fn new(seed: u64, size: u64) -> Self {
        Self {
            random: Random::new(seed),
            left: size,
            block: Vec::new(),
            position: 0,
            raw: false,
        }
    }

    fn refill(&mut self) {
        self.raw = !self.raw;
        self.block.resize(BLOCK, 0);
        if self.raw {
            self.random.fill(&mut self.block);
        } else {
            let mut random = vec![0u8; BLOCK / 2];
            self.random.fill(&mut random);
            let text = hex::encode(random);
            self.block.copy_from_slice(text.as_bytes());
        }
        self.position = 0;
    }
}

impl Read for MixedContent {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 || buffer.is_empty() {
            return Ok(0);
        }
        if self.position >= self.block.len() {
            self.refill();
        }
        let available = (self.block.len() - self.position)
            .min(buffer.len())
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        buffer[..available].copy_from_slice(&self.block[self.position..self.position + available]);
        self.position += available;
        self.left -= available as u64;
        Ok(available)
    }
}

/// Data layer `index` (gzip) holding about `size` bytes under /data/layerNN.
pub fn data_layer(path: &Path, index: usize, size: u64) -> std::io::Result<LayerFile> {
    let mut writer = LayerWriter::create(path, true)?;
    let top = format!("data/layer{index:02}");
    writer.directory("data", 0o755)?;
    writer.directory(&top, 0o755)?;
    writer.directory(&format!("{top}/small"), 0o755)?;
    let seed = 0xbe27_0000 + index as u64;
    let mut sizes = Random::new(seed ^ 0x5a5a);
    let small: Vec<u64> = (0..SMALL_FILES)
        .map(|_| 1024 + sizes.next_u64() % (15 << 10))
        .collect();
    let mut left = size.saturating_sub(small.iter().sum());
    let mut number = 0;
    while left > 0 {
        let file_size = left.min(BIG_FILE);
        writer.file_from(
            &format!("{top}/blob{number:02}.bin"),
            0o644,
            file_size,
            MixedContent::new(seed * 1000 + number, file_size),
        )?;
        left -= file_size;
        number += 1;
    }
    for (position, file_size) in small.iter().enumerate() {
        writer.file_from(
            &format!("{top}/small/f{position:03}.txt"),
            0o644,
            *file_size,
            MixedContent::new(seed * 1000 + 500 + position as u64, *file_size),
        )?;
    }
    writer.finish()
}

/// Sizes of the data layers, bigger first (10, 9, … parts), about `total`.
pub fn layer_sizes(layers: usize, total: u64) -> Vec<u64> {
    let weights: Vec<u64> = (0..layers as u64)
        .map(|index| layers as u64 + 1 - index)
        .collect();
    let sum: u64 = weights.iter().sum();
    weights
        .iter()
        .map(|weight| (total * weight / sum.max(1)).max(64 << 10))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_deterministic_and_mixed() {
        let mut first = Vec::new();
        MixedContent::new(7, 200_000)
            .read_to_end(&mut first)
            .unwrap();
        let mut second = Vec::new();
        MixedContent::new(7, 200_000)
            .read_to_end(&mut second)
            .unwrap();
        assert_eq!(first.len(), 200_000);
        assert_eq!(first, second);
        // The first block is raw bytes, the second hex text.
        assert!(first[..BLOCK].iter().any(|byte| !byte.is_ascii_hexdigit()));
        assert!(first[BLOCK..2 * BLOCK].iter().all(u8::is_ascii_hexdigit));
    }

    #[test]
    fn sizes_add_up_and_shrink() {
        let sizes = layer_sizes(4, 10 << 20);
        assert_eq!(sizes.len(), 4);
        assert!(sizes.windows(2).all(|pair| pair[0] >= pair[1]));
        let total: u64 = sizes.iter().sum();
        assert!(total <= 10 << 20 && total > 9 << 20, "{total}");
    }

    #[test]
    fn a_data_layer_compresses_but_not_much() {
        let directory = tempfile::tempdir().unwrap();
        let layer = data_layer(&directory.path().join("l.tar.gz"), 2, 1 << 20).unwrap();
        assert!(layer.gzip);
        assert!(
            layer.size > 600 << 10 && layer.size < 1 << 20,
            "{}",
            layer.size
        );
    }
}
