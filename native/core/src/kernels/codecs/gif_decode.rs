//! GIF decoding as TensorFlow's gif_io composes frames: each frame starts from the previous
//! one (black before the first), its transparent index keeps what was there, and a frame is
//! clipped to the screen. The `gif` crate reads the blocks and undoes LZW and interlacing; the
//! colour indices are looked up here, in the frame's palette or the global one.

use std::num::NonZeroU64;

use super::Pixels;

/// Output larger than this many bytes is refused: frames x height x width x 3.
const MAX_BYTES: usize = 1 << 31;

/// Every frame as [frames, height, width, 3] (only the first with `first_only`).
pub(super) fn decode(data: &[u8], first_only: bool) -> Result<Pixels, String> {
    let size = data.len();
    let invalid = |e: gif::DecodingError| {
        format!("Invalid GIF data (size {size}), failed to slurp gif file: {e}")
    };
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::Indexed);
    options.check_frame_consistency(false);
    if let Some(limit) = NonZeroU64::new(MAX_BYTES as u64) {
        options.set_memory_limit(gif::MemoryLimit::Bytes(limit));
    }
    let mut decoder = options.read_info(data).map_err(invalid)?;
    let (width, height) = (usize::from(decoder.width()), usize::from(decoder.height()));
    let global = decoder.global_palette().map(<[u8]>::to_vec);
    let frame_bytes = height * width * 3;
    let mut canvas = vec![0u8; frame_bytes];
    let mut out = Vec::new();
    let mut count = 0;
    while let Some(frame) = decoder.read_next_frame().map_err(invalid)? {
        if frame.width == 0 || frame.height == 0 {
            return Err("Invalid GIF data: a frame of size 0".into());
        }
        if (count + 1) * frame_bytes > MAX_BYTES {
            return Err(format!(
                "Invalid GIF data (size {size}): the image is too large"
            ));
        }
        let colors = frame
            .palette
            .as_deref()
            .or(global.as_deref())
            .ok_or_else(|| format!("Invalid GIF data (size {size}), missing color map"))?;
        draw(&mut canvas, (height, width), frame, colors, size)?;
        out.extend_from_slice(&canvas);
        count += 1;
        if first_only {
            break;
        }
    }
    if count == 0 {
        return Err(format!(
            "Invalid GIF data (size {size}), gif file does not contain any image"
        ));
    }
    Ok(Pixels::u8(vec![count, height, width, 3], out))
}

/// Draws `frame` over the canvas: its pixels inside the screen, but transparent ones.
fn draw(
    canvas: &mut [u8],
    (height, width): (usize, usize),
    frame: &gif::Frame,
    colors: &[u8],
    size: usize,
) -> Result<(), String> {
    let (top, left) = (usize::from(frame.top), usize::from(frame.left));
    let frame_width = usize::from(frame.width);
    let bottom = (top + usize::from(frame.height)).min(height);
    let right = (left + frame_width).min(width);
    let entries = colors.len() / 3;
    for y in top..bottom {
        let start = (y - top) * frame_width;
        let Some(indices) = frame
            .buffer
            .get(start..start + (right.saturating_sub(left)))
        else {
            return Err(format!("Invalid GIF data (size {size}), truncated frame"));
        };
        for (x, &index) in (left..right).zip(indices) {
            if frame.transparent == Some(index) {
                continue;
            }
            let index = usize::from(index);
            if index >= entries {
                return Err(format!(
                    "Invalid GIF data (size {size}), found color index {index} outside of color map range {entries}"
                ));
            }
            let at = (y * width + x) * 3;
            canvas[at..at + 3].copy_from_slice(&colors[index * 3..index * 3 + 3]);
        }
    }
    Ok(())
}
