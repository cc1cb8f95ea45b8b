//! CRC32C as TensorFlow's file formats store it: *masked* (rotated and offset), so that the
//! checksum of data that itself holds checksums does not degenerate.

const MASK_DELTA: u32 = 0xA282_EAD8;

pub use crc32c::{crc32c, crc32c_append};

/// The masked form stored in files.
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_round_trips_and_matches_leveldb() {
        // crc32c("123456789") is the standard check value 0xE3069283.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        for crc in [0, 1, 0xE306_9283, u32::MAX] {
            assert_eq!(unmask(mask(crc)), crc);
        }
        assert_eq!(mask(0), MASK_DELTA);
    }
}
