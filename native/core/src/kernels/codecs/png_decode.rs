//! PNG decoding as TensorFlow asks libpng to decode: every colour type and bit depth, Adam7,
//! palettes and tRNS; then the channels asked for (0: as stored, where a palette counts as RGB,
//! or RGBA with tRNS, and tRNS does not add alpha to gray or RGB). Gray becomes RGB by
//! repetition, RGB becomes gray with libpng's integer weights 9797/19234/3737 (/32768,
//! truncated at 8 bits and rounded at 16, an 8-bit gray pixel kept as it is), alpha is added
//! (libpng's filler) or made from tRNS. The `png` crate does the lossless part (chunks, CRCs, inflate,
//! filters, interlacing, palette and low-bit-depth expansion with tRNS as alpha).

use std::io::Cursor;

use png::{ColorType, Transformations};

use super::{Pixels, Samples};

/// Decoded images above this many bytes are refused before anything is allocated.
const MAX_BYTES: usize = 1 << 31;

const GRAY_WEIGHTS: [u32; 3] = [9797, 19234, 3737];

/// Decodes `data` to `channels` (0, 1, 3 or 4) samples a pixel: 8-bit, or 16-bit for a 16-bit
/// file.
pub(super) fn decode(data: &[u8], channels: usize) -> Result<Pixels, String> {
    let invalid = |e: png::DecodingError| format!("Invalid PNG data, size {}: {e}", data.len());
    let mut decoder =
        png::Decoder::new_with_limits(Cursor::new(data), png::Limits { bytes: MAX_BYTES });
    decoder.set_transformations(Transformations::EXPAND);
    let mut reader = decoder.read_info().map_err(invalid)?;
    let (stored_type, depth) = {
        let info = reader.info();
        (info.color_type, info.bit_depth as u32)
    };
    let sixteen = depth == 16;
    // The alpha TensorFlow adds: libpng's filler (1 << bit depth) - 1 of the file's depth,
    // even where the samples were expanded to 8 bits (so 1 for a 1-bit file).
    let filler = (1u32 << depth) - 1;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| format!("Invalid PNG data, size {}: image too large", data.len()))?;
    let mut buffer = vec![0u8; size];
    let frame = reader.next_frame(&mut buffer).map_err(invalid)?;
    reader.finish().map_err(invalid)?;
    let (height, width) = (frame.height as usize, frame.width as usize);
    let expanded = frame.color_type.samples();
    buffer.truncate(frame.buffer_size());
    // As stored: a palette is RGB (RGBA with tRNS); tRNS adds no alpha to gray or RGB.
    let stored = match stored_type {
        ColorType::Indexed => expanded,
        other => other.samples(),
    };
    let wanted = if channels == 0 { stored } else { channels };
    let layout = Layout {
        expanded,
        wanted,
        pixels: height * width,
    };
    let samples = if sixteen {
        let values: Vec<u16> = buffer
            .chunks_exact(2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .collect();
        Samples::U16(layout.convert(&values, filler as u16, gray16))
    } else {
        Samples::U8(layout.convert(&buffer, filler as u8, gray8))
    };
    Ok(Pixels {
        shape: vec![height, width, wanted],
        samples,
    })
}

/// How expanded samples (1 to 4 a pixel: gray or RGB, then alpha when even) become `wanted`.
struct Layout {
    expanded: usize,
    wanted: usize,
    pixels: usize,
}

impl Layout {
    fn convert<T: Copy>(&self, values: &[T], full: T, gray: fn([T; 3]) -> T) -> Vec<T> {
        let mut out = Vec::with_capacity(self.pixels * self.wanted);
        let colour_in = if self.expanded >= 3 { 3 } else { 1 };
        let has_alpha = self.expanded.is_multiple_of(2);
        for pixel in values.chunks_exact(self.expanded) {
            let alpha = if has_alpha {
                pixel[self.expanded - 1]
            } else {
                full
            };
            match (colour_in, self.wanted) {
                (1, 1 | 2) => out.push(pixel[0]),
                (1, _) => out.extend_from_slice(&[pixel[0]; 3]),
                (_, 1 | 2) => out.push(gray([pixel[0], pixel[1], pixel[2]])),
                _ => out.extend_from_slice(&pixel[..3]),
            }
            if self.wanted.is_multiple_of(2) {
                out.push(alpha);
            }
        }
        out
    }
}

/// libpng's RGB to gray at 8 bits: truncated, gray pixels unchanged.
fn gray8([r, g, b]: [u8; 3]) -> u8 {
    if r == g && g == b {
        return r;
    }
    let [wr, wg, wb] = GRAY_WEIGHTS;
    ((wr * u32::from(r) + wg * u32::from(g) + wb * u32::from(b)) >> 15) as u8
}

/// libpng's RGB to gray at 16 bits: rounded.
fn gray16([r, g, b]: [u16; 3]) -> u16 {
    let [wr, wg, wb] = GRAY_WEIGHTS.map(u64::from);
    ((wr * u64::from(r) + wg * u64::from(g) + wb * u64::from(b) + 16384) >> 15) as u16
}
