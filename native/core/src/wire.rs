//! Decoding the primitives the file formats are built of: base-128 varints (protobuf, LevelDB
//! tables) and little-endian fixed-width integers.

/// Decodes the varint at `data[*pos..]` and advances `pos`; None if the bytes end first or the
/// value does not fit `bits` bits (32 for the lengths of a table record, 64 for offsets).
pub fn read_varint(data: &[u8], pos: &mut usize, bits: u32) -> Option<u64> {
    let mut value: u64 = 0;
    let mut shift = 0;
    loop {
        let byte = *data.get(*pos)?;
        *pos += 1;
        let part = u64::from(byte & 0x7F);
        let room = bits.checked_sub(shift)?;
        if room == 0 || (room < 7 && part >> room != 0) {
            return None;
        }
        value |= part << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
    }
}

/// The first N bytes of `bytes` as an array, for `from_le_bytes`; callers pass slices of at
/// least N bytes (shorter ones are zero-filled rather than a panic).
pub fn le_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    for (slot, byte) in out.iter_mut().zip(bytes) {
        *slot = *byte;
    }
    out
}

/// Splits `body` into consecutive pieces of the given lengths; callers have checked that the
/// lengths add up to `body.len()` (a shortfall would end the list early, never panic).
pub fn split_by_lengths(body: &[u8], lengths: &[usize]) -> Vec<Vec<u8>> {
    let mut rest = body;
    lengths
        .iter()
        .map(|&n| {
            let (piece, tail) = rest.split_at(n.min(rest.len()));
            rest = tail;
            piece.to_vec()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::read_varint;

    #[test]
    fn decodes_and_bounds() {
        let mut pos = 0;
        assert_eq!(read_varint(&[0xAC, 0x02], &mut pos, 32), Some(300));
        assert_eq!(pos, 2);
        assert_eq!(read_varint(&[0x80], &mut 0, 64), None);
        assert_eq!(
            read_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0x1F], &mut 0, 32),
            None
        );
        assert_eq!(
            read_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F], &mut 0, 32),
            Some(u64::from(u32::MAX))
        );
        let max = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01];
        assert_eq!(read_varint(&max, &mut 0, 64), Some(u64::MAX));
        let over = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02];
        assert_eq!(read_varint(&over, &mut 0, 64), None);
    }
}
