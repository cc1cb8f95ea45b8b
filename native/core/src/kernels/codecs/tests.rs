//! The codecs on inputs the fixtures do not hold: round trips, huge claimed sizes, and
//! truncated or bit-flipped JPEGs, which must be errors or images, never a crash.

use proptest::prelude::*;

use super::jpeg_ffi::{decode, encode, DecodeSpec, EncodeSpec, INVALID_JPEG};
use super::ops::frame_header;

fn spec() -> DecodeSpec {
    DecodeSpec {
        components: 0,
        ratio: 1,
        fancy_upscaling: true,
        accurate: false,
        try_recover_truncated: false,
        acceptable_fraction: 1.0,
        crop: None,
    }
}

fn encode_spec(progressive: bool, chroma_downsampling: bool) -> EncodeSpec {
    EncodeSpec {
        quality: 90,
        progressive,
        optimize_size: false,
        chroma_downsampling,
        density_unit: 1,
        x_density: 300,
        y_density: 300,
        xmp_metadata: Vec::new(),
    }
}

/// A smooth colour image, height x width x channels.
fn gradient(height: usize, width: usize, channels: usize) -> Vec<u8> {
    (0..height * width * channels)
        .map(|i| {
            let (pixel, c) = (i / channels, i % channels);
            let (y, x) = (pixel / width, pixel % width);
            ((y * 7 + x * 3 + c * 50) % 256) as u8
        })
        .collect()
}

/// JPEGs of a few layouts: 4:2:0, 4:4:4, progressive, gray.
fn samples() -> Vec<Vec<u8>> {
    let rgb = gradient(19, 27, 3);
    let gray = gradient(19, 27, 1);
    vec![
        encode(&rgb, 19, 27, 3, &encode_spec(false, true)).unwrap(),
        encode(&rgb, 19, 27, 3, &encode_spec(false, false)).unwrap(),
        encode(&rgb, 19, 27, 3, &encode_spec(true, true)).unwrap(),
        encode(&gray, 19, 27, 1, &encode_spec(false, true)).unwrap(),
    ]
}

#[test]
fn encode_then_decode_is_close() {
    let rgb = gradient(19, 27, 3);
    let bytes = encode(&rgb, 19, 27, 3, &encode_spec(false, false)).unwrap();
    assert_eq!(frame_header(&bytes).unwrap(), [19, 27, 3]);
    let image = decode(&bytes, &spec()).unwrap();
    assert_eq!((image.height, image.width, image.channels), (19, 27, 3));
    let worst = image
        .pixels
        .iter()
        .zip(&rgb)
        .map(|(&a, &b)| (i32::from(a) - i32::from(b)).abs())
        .max()
        .unwrap();
    assert!(worst < 40, "worst difference {worst}");
}

#[test]
fn a_huge_claimed_size_is_an_error_before_allocating() {
    let mut bytes = samples().remove(0);
    let at = bytes.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    // SOF0: length(2) precision(1) height(2) width(2): claim 60000 x 60000.
    bytes[at + 5..at + 9].copy_from_slice(&[0xEA, 0x60, 0xEA, 0x60]);
    assert_eq!(decode(&bytes, &spec()).unwrap_err(), INVALID_JPEG);
}

#[test]
fn every_truncation_is_an_error_or_recovered() {
    for bytes in samples() {
        for len in (0..bytes.len()).step_by(7) {
            let cut = &bytes[..len];
            assert!(decode(cut, &spec()).is_err(), "cut at {len} decoded");
            let recover = DecodeSpec {
                try_recover_truncated: true,
                acceptable_fraction: 0.0,
                ..spec()
            };
            if let Ok(image) = decode(cut, &recover) {
                assert_eq!(
                    image.pixels.len(),
                    image.height * image.width * image.channels
                );
            }
        }
    }
}

#[test]
fn crops_and_scales_of_every_layout_decode() {
    for bytes in samples() {
        for ratio in [1, 2, 4, 8] {
            let s = DecodeSpec { ratio, ..spec() };
            let image = decode(&bytes, &s).unwrap();
            assert_eq!(image.height, 19usize.div_ceil(ratio as usize));
            let crop = DecodeSpec {
                crop: Some([1, 1, image.height as i64 - 1, image.width as i64 - 1]),
                ..s
            };
            let cropped = decode(&bytes, &crop).unwrap();
            assert_eq!(cropped.width, image.width - 1);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Flipped bits anywhere: an error or an image of the size it claims, never a crash.
    #[test]
    fn flipped_bits_never_crash(which in 0usize..4, flips in prop::collection::vec((any::<usize>(), 0u8..8), 1..6),
                                accurate in any::<bool>(), recover in any::<bool>()) {
        let mut bytes = samples().swap_remove(which);
        for (at, bit) in flips {
            let at = at % bytes.len();
            bytes[at] ^= 1 << bit;
        }
        let s = DecodeSpec { accurate, try_recover_truncated: recover, acceptable_fraction: 0.5, ..spec() };
        if let Ok(image) = decode(&bytes, &s) {
            prop_assert_eq!(image.pixels.len(), image.height * image.width * image.channels);
        }
        let _ = frame_header(&bytes);
    }
}
