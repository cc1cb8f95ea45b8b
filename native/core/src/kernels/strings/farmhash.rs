//! FarmHash's 64-bit fingerprint (`farmhashna::Hash64`), which TensorFlow's `Fingerprint64`
//! is: fixed for all platforms and time, so hash buckets written into models stay valid.
//! Written from the published algorithm.

const K0: u64 = 0xC3A5_C85C_97CB_3127;
const K1: u64 = 0xB492_B66F_BE98_F273;
const K2: u64 = 0x9AE1_6A3B_2F90_404F;
const SEED: u64 = 81;

fn word(data: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&data[at..at + 8]);
    u64::from_le_bytes(bytes)
}

fn word32(data: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 4];
    bytes.copy_from_slice(&data[at..at + 4]);
    u64::from(u32::from_le_bytes(bytes))
}

fn shift_mix(v: u64) -> u64 {
    v ^ (v >> 47)
}

/// Murmur-inspired mix of two words into one.
fn hash_len16(u: u64, v: u64, mul: u64) -> u64 {
    let a = shift_mix((u ^ v).wrapping_mul(mul));
    let b = shift_mix((v ^ a).wrapping_mul(mul));
    b.wrapping_mul(mul)
}

fn hash_len0to16(s: &[u8]) -> u64 {
    let len = s.len();
    if len >= 8 {
        let mul = K2.wrapping_add(len as u64 * 2);
        let a = word(s, 0).wrapping_add(K2);
        let b = word(s, len - 8);
        let c = b.rotate_right(37).wrapping_mul(mul).wrapping_add(a);
        let d = a.rotate_right(25).wrapping_add(b).wrapping_mul(mul);
        return hash_len16(c, d, mul);
    }
    if len >= 4 {
        let mul = K2.wrapping_add(len as u64 * 2);
        let a = word32(s, 0);
        return hash_len16((len as u64).wrapping_add(a << 3), word32(s, len - 4), mul);
    }
    if len > 0 {
        let y = u32::from(s[0]).wrapping_add(u32::from(s[len >> 1]) << 8);
        let z = (len as u32).wrapping_add(u32::from(s[len - 1]) << 2);
        return shift_mix(u64::from(y).wrapping_mul(K2) ^ u64::from(z).wrapping_mul(K0))
            .wrapping_mul(K2);
    }
    K2
}

/// The first and last 16 bytes mixed as the 17-32 and 33-64 byte cases both begin.
fn mix_ends(s: &[u8], first_mul: u64, mul: u64) -> (u64, u64, u64) {
    let len = s.len();
    let a = word(s, 0).wrapping_mul(first_mul);
    let b = word(s, 8);
    let c = word(s, len - 8).wrapping_mul(mul);
    let d = word(s, len - 16).wrapping_mul(K2);
    let u = a
        .wrapping_add(b)
        .rotate_right(43)
        .wrapping_add(c.rotate_right(30))
        .wrapping_add(d);
    let v = a
        .wrapping_add(b.wrapping_add(K2).rotate_right(18))
        .wrapping_add(c);
    (a, u, v)
}

fn hash_len17to32(s: &[u8]) -> u64 {
    let mul = K2.wrapping_add(s.len() as u64 * 2);
    let (_, u, v) = mix_ends(s, K1, mul);
    hash_len16(u, v, mul)
}

fn hash_len33to64(s: &[u8]) -> u64 {
    let len = s.len();
    let mul = K2.wrapping_add(len as u64 * 2);
    let (a, y, v) = mix_ends(s, K2, mul);
    let z = hash_len16(y, v, mul);
    let e = word(s, 16).wrapping_mul(mul);
    let f = word(s, 24);
    let g = y.wrapping_add(word(s, len - 32)).wrapping_mul(mul);
    let h = z.wrapping_add(word(s, len - 24)).wrapping_mul(mul);
    hash_len16(
        e.wrapping_add(f)
            .rotate_right(43)
            .wrapping_add(g.rotate_right(30))
            .wrapping_add(h),
        e.wrapping_add(f.wrapping_add(a).rotate_right(18))
            .wrapping_add(g),
        mul,
    )
}

/// Two words from the 32 bytes at `w` and two seeds.
fn weak_hash32(w: &[u64; 4], a: u64, b: u64) -> (u64, u64) {
    let a = a.wrapping_add(w[0]);
    let b = b.wrapping_add(a).wrapping_add(w[3]).rotate_right(21);
    let c = a;
    let a = a.wrapping_add(w[1]).wrapping_add(w[2]);
    let b = b.wrapping_add(a.rotate_right(44));
    (a.wrapping_add(w[3]), b.wrapping_add(c))
}

fn block(s: &[u8], at: usize) -> [u64; 8] {
    std::array::from_fn(|i| word(s, at + 8 * i))
}

/// Inputs over 64 bytes: 64-byte blocks, then the last 64 bytes once more.
fn hash_long(s: &[u8]) -> u64 {
    let len = s.len();
    let mut x = SEED.wrapping_mul(K2).wrapping_add(word(s, 0));
    let mut y = SEED.wrapping_mul(K1).wrapping_add(113);
    let mut z = shift_mix(y.wrapping_mul(K2).wrapping_add(113)).wrapping_mul(K2);
    let (mut v, mut w) = ((0u64, 0u64), (0u64, 0u64));
    for start in (0..(len - 1) / 64).map(|i| i * 64) {
        let b = block(s, start);
        x = x
            .wrapping_add(y)
            .wrapping_add(v.0)
            .wrapping_add(b[1])
            .rotate_right(37)
            .wrapping_mul(K1);
        y = y
            .wrapping_add(v.1)
            .wrapping_add(b[6])
            .rotate_right(42)
            .wrapping_mul(K1);
        x ^= w.1;
        y = y.wrapping_add(v.0).wrapping_add(b[5]);
        z = z.wrapping_add(w.0).rotate_right(33).wrapping_mul(K1);
        v = weak_hash32(
            &[b[0], b[1], b[2], b[3]],
            v.1.wrapping_mul(K1),
            x.wrapping_add(w.0),
        );
        w = weak_hash32(
            &[b[4], b[5], b[6], b[7]],
            z.wrapping_add(w.1),
            y.wrapping_add(b[2]),
        );
        std::mem::swap(&mut z, &mut x);
    }
    let b = block(s, len - 64);
    let mul = K1.wrapping_add((z & 0xFF) << 1);
    w.0 = w.0.wrapping_add(((len - 1) & 63) as u64);
    v.0 = v.0.wrapping_add(w.0);
    w.0 = w.0.wrapping_add(v.0);
    x = x
        .wrapping_add(y)
        .wrapping_add(v.0)
        .wrapping_add(b[1])
        .rotate_right(37)
        .wrapping_mul(mul);
    y = y
        .wrapping_add(v.1)
        .wrapping_add(b[6])
        .rotate_right(42)
        .wrapping_mul(mul);
    x ^= w.1.wrapping_mul(9);
    y = y.wrapping_add(v.0.wrapping_mul(9)).wrapping_add(b[5]);
    z = z.wrapping_add(w.0).rotate_right(33).wrapping_mul(mul);
    v = weak_hash32(
        &[b[0], b[1], b[2], b[3]],
        v.1.wrapping_mul(mul),
        x.wrapping_add(w.0),
    );
    w = weak_hash32(
        &[b[4], b[5], b[6], b[7]],
        z.wrapping_add(w.1),
        y.wrapping_add(b[2]),
    );
    std::mem::swap(&mut z, &mut x);
    hash_len16(
        hash_len16(v.0, w.0, mul)
            .wrapping_add(shift_mix(y).wrapping_mul(K0))
            .wrapping_add(z),
        hash_len16(v.1, w.1, mul).wrapping_add(x),
        mul,
    )
}

/// FarmHash Fingerprint64 of `s` (TensorFlow's `Fingerprint64`).
pub fn fingerprint64(s: &[u8]) -> u64 {
    match s.len() {
        0..=16 => hash_len0to16(s),
        17..=32 => hash_len17to32(s),
        33..=64 => hash_len33to64(s),
        _ => hash_long(s),
    }
}

#[cfg(test)]
mod tests {
    use super::fingerprint64;

    /// Values from the numpy engine's `runtime/farmhash.py` for every length class.
    #[test]
    fn fingerprints_match_the_reference() {
        let cycle: Vec<u8> = (0..=255u8).cycle().take(768).collect();
        let cases: [(&[u8], u64); 11] = [
            (b"", 11160318154034397263),
            (b"a", 12917804110809363939),
            (b"abc", 2640714258260161385),
            (b"abcd", 1897425971756105985),
            (b"abcdefgh", 18368443631171807497),
            (b"abcdefghijklmnopq", 11394395984755135400),
            (&[b'x'; 40], 17003596230054984852),
            (&[b'y'; 64], 4471793200125962424),
            (&[b'z'; 65], 8299915583762718517),
            (&cycle[..200], 525935771297148851),
            (&cycle, 2092031361577642528),
        ];
        for (data, expected) in cases {
            assert_eq!(fingerprint64(data), expected, "length {}", data.len());
        }
    }
}
