//! BMP decoding as TensorFlow's own small decoder: uncompressed 8-, 24- and 32-bit pixels
//! after `header_size` bytes, rows padded to 4 bytes, bottom-up for a positive height; BGR(A)
//! samples become RGB(A), gray is repeated, alpha added as 255 when four channels are asked.

use super::Pixels;

fn le_i32(data: &[u8], at: usize) -> i32 {
    i32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

/// Decodes `data` (already known to start with "BM") to `channels` (0, 3 or 4).
pub(super) fn decode(data: &[u8], channels: usize) -> Result<Pixels, String> {
    if channels == 1 {
        return Err(format!(
            "`channels` must be 0, 3 or 4 for BMP, but got {channels}"
        ));
    }
    if data.len() < 32 {
        return Err(format!(
            "Incomplete bmp content, requires at least 32 bytes to find the header size, width, height, and bpp, got {} bytes",
            data.len()
        ));
    }
    let header_size = le_i32(data, 10);
    let width = le_i32(data, 18);
    let height = le_i32(data, 22);
    let bpp = i16::from_le_bytes([data[28], data[29]]);
    let image_channels = usize::try_from(bpp / 8).unwrap_or(0);
    if !matches!(image_channels, 1 | 3 | 4) {
        return Err(format!(
            "Number of channels inherent in the image must be 1, 3 or 4, was {}",
            bpp / 8
        ));
    }
    if width <= 0 {
        return Err("Width must be positive".into());
    }
    if height == 0 {
        return Err("Height must be nonzero".into());
    }
    let Ok(header) = usize::try_from(header_size) else {
        return Err("header size must be nonnegative".into());
    };
    let (columns, rows) = (width as usize, height.unsigned_abs() as usize);
    if (columns as u64) * (rows as u64) >= ((1u64 << 31) - 1) / 8 {
        return Err("Total possible pixel bytes must be less than 2^30".into());
    }
    let row_size = (image_channels * columns).div_ceil(4) * 4;
    let expected = header as i128 + (row_size * rows) as i128;
    if data.len() as i128 != expected {
        return Err(format!(
            "Input size should match (header_size + row_size * abs_height) but they differ by {}",
            data.len() as i128 - expected
        ));
    }
    let wanted = if channels == 0 {
        image_channels
    } else {
        channels
    };
    let mut out = Vec::with_capacity(rows * columns * wanted);
    for y in 0..rows {
        let stored_row = if height > 0 { rows - 1 - y } else { y };
        let start = header + stored_row * row_size;
        let row = &data[start..start + columns * image_channels];
        for pixel in row.chunks_exact(image_channels) {
            push_pixel(&mut out, pixel, wanted);
        }
    }
    Ok(Pixels::u8(vec![rows, columns, wanted], out))
}

/// One BGR(A) or gray pixel as `wanted` (1 only for a gray file read as stored) RGB(A) samples.
fn push_pixel(out: &mut Vec<u8>, pixel: &[u8], wanted: usize) {
    match pixel {
        [gray] if wanted == 1 => out.push(*gray),
        [gray] => out.extend_from_slice(&[*gray; 3]),
        [b, g, r, ..] => out.extend_from_slice(&[*r, *g, *b]),
        _ => {}
    }
    if wanted == 4 {
        out.push(if pixel.len() == 4 { pixel[3] } else { 255 });
    }
}
