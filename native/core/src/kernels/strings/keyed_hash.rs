//! The two other string hashes TensorFlow buckets with, besides FarmHash's Fingerprint64:
//! `hash64` (tensorflow::Hash64, a MurmurHash64A variant behind the legacy StringToHashBucket
//! op) and `siphash24` (SipHash-2-4 keyed by two 64-bit words, TensorFlow's StrongKeyedHash
//! behind StringToHashBucketStrong). Both are written from the published algorithms; they are
//! fixed for all time, so hashes stored in models and vocabularies stay comparable.

const MURMUR_MUL: u64 = 0xC6A4_A793_5BD1_E995;
const MURMUR_SEED: u64 = 0xDE_CAFC_AFFE;

/// Little-endian value of up to 8 bytes.
fn le_word(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0, |acc, &b| (acc << 8) | u64::from(b))
}

/// tensorflow::Hash64 with its default seed: 8-byte little-endian words, then the tail bytes.
pub fn hash64(data: &[u8]) -> u64 {
    let mut h = MURMUR_SEED ^ (data.len() as u64).wrapping_mul(MURMUR_MUL);
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut k = le_word(word).wrapping_mul(MURMUR_MUL);
        k ^= k >> 47;
        h = (h ^ k.wrapping_mul(MURMUR_MUL)).wrapping_mul(MURMUR_MUL);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        h = (h ^ le_word(tail)).wrapping_mul(MURMUR_MUL);
    }
    h ^= h >> 47;
    h = h.wrapping_mul(MURMUR_MUL);
    h ^ (h >> 47)
}

fn sip_rounds(v: &mut [u64; 4], rounds: usize) {
    for _ in 0..rounds {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }
}

/// SipHash-2-4 of `data` under the 128-bit key (k0, k1): 8-byte little-endian words, the last
/// one holding the tail bytes with the length mod 256 in its top byte.
pub fn siphash24(key: [u64; 2], data: &[u8]) -> u64 {
    let [k0, k1] = key;
    let mut v = [
        k0 ^ 0x736F_6D65_7073_6575,
        k1 ^ 0x646F_7261_6E64_6F6D,
        k0 ^ 0x6C79_6765_6E65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let mut absorb = |word: u64| {
        v[3] ^= word;
        sip_rounds(&mut v, 2);
        v[0] ^= word;
    };
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        absorb(le_word(word));
    }
    absorb(le_word(words.remainder()) | ((data.len() as u64 & 0xFF) << 56));
    v[2] ^= 0xFF;
    sip_rounds(&mut v, 4);
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siphash_matches_the_reference_vectors() {
        // The SipHash paper's key 00..0f; messages 00, 00 01, ..., of lengths 0, 1 and 15.
        let key = [0x0706_0504_0302_0100, 0x0F0E_0D0C_0B0A_0908];
        let message: Vec<u8> = (0..64).collect();
        assert_eq!(siphash24(key, &message[..0]), 0x726F_DB47_DD0E_0E31);
        assert_eq!(siphash24(key, &message[..1]), 0x74F8_39C5_93DC_67FD);
        assert_eq!(siphash24(key, &message[..15]), 0xA129_CA61_49BE_45E5);
    }

    #[test]
    fn hash64_matches_the_reference_engine() {
        assert_eq!(hash64(b""), 9_328_806_548_029_283_899);
        assert_eq!(hash64(b"a"), 2_996_632_905_371_535_868);
        assert_eq!(hash64(b"hello world!"), 488_105_371_118_328_303);
    }
}
