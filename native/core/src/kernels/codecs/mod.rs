//! Image codec kernels: DecodeJpeg, DecodeAndCropJpeg, ExtractJpegShape, EncodeJpeg(Variable-
//! Quality), DecodePng, DecodeGif, DecodeBmp and DecodeImage, as the reference engine's
//! `runtime/kernels/codecs.py` and `png.py` specify them.
//!
//! TensorFlow serves every decode op with one kernel that sniffs the format (DecodeJpeg decodes
//! a PNG, DecodePng a JPEG, ...), so they share [`decode_image`] here too: the format from the
//! first bytes, then the op's own rules (which formats it refuses, whether GIF frames come as a
//! 4-D batch), then the dtype DecodeImage and DecodePng ask for.
//!
//! JPEG is libjpeg-turbo's own code through FFI (`jpeg_ffi`, the one module with `unsafe`):
//! TensorFlow decodes and encodes with libjpeg-turbo, and its IDCTs, upsamplers and colour
//! tables are defined by that code, so only that code gives TensorFlow's pixels bit for bit.
//! PNG and GIF are lossless, so maintained pure-Rust decoders (`png`, `gif`) give the samples,
//! and the conversions TensorFlow asks of libpng and its GIF reader are done here. BMP is
//! TensorFlow's own small decoder.

use std::sync::Arc;

use crate::engine::kernel::{fail, tensor_input, KResult, Registry};
use crate::engine::value::Value;
use crate::tensor::{Storage, Tensor};
use crate::DType;

mod bmp;
mod gif_decode;
mod jpeg_ffi;
mod ops;
mod png_decode;

#[cfg(test)]
mod tests;

pub fn register(r: &mut Registry) {
    r.add("DecodeJpeg", ops::decode_jpeg);
    r.add("DecodeAndCropJpeg", ops::decode_and_crop_jpeg);
    r.add("ExtractJpegShape", ops::extract_jpeg_shape);
    r.add("EncodeJpeg", ops::encode_jpeg);
    r.add(
        "EncodeJpegVariableQuality",
        ops::encode_jpeg_variable_quality,
    );
    r.add("DecodePng", ops::decode_png);
    r.add("DecodeGif", ops::decode_gif);
    r.add("DecodeBmp", ops::decode_bmp);
    r.add("DecodeImage", ops::decode_image_op);
}

/// The image formats TensorFlow's decode kernel recognises, by their first bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Jpeg,
    Png,
    Gif,
    Bmp,
}

impl Format {
    fn sniff(data: &[u8]) -> Option<Self> {
        if data.starts_with(b"\xff\xd8\xff") {
            Some(Self::Jpeg)
        } else if data.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if data.starts_with(b"GIF8") {
            Some(Self::Gif)
        } else if data.starts_with(b"BM") {
            Some(Self::Bmp)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Jpeg => "JPEG",
            Self::Png => "PNG",
            Self::Gif => "GIF",
            Self::Bmp => "BMP",
        }
    }
}

/// The decode ops, which differ only in the formats and shapes they accept.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum DecodeOp {
    Jpeg,
    CropJpeg,
    Png,
    Gif,
    Bmp,
    /// DecodeImage, with its expand_animations attr.
    Image {
        expand_animations: bool,
    },
}

impl DecodeOp {
    fn name(self) -> &'static str {
        match self {
            Self::Jpeg => "DecodeJpeg",
            Self::CropJpeg => "DecodeAndCropJpeg",
            Self::Png => "DecodePng",
            Self::Gif => "DecodeGif",
            Self::Bmp => "DecodeBmp",
            Self::Image { .. } => "DecodeImage",
        }
    }
}

/// Decoded samples: 8-bit, or 16-bit from a 16-bit PNG.
enum Samples {
    U8(Vec<u8>),
    U16(Vec<u16>),
}

/// A decoded image: [height, width, channels], or [frames, height, width, 3] for GIF.
struct Pixels {
    shape: Vec<usize>,
    samples: Samples,
}

impl Pixels {
    fn u8(shape: Vec<usize>, values: Vec<u8>) -> Self {
        Self {
            shape,
            samples: Samples::U8(values),
        }
    }

    /// A leading batch dimension of 1 (an image decoded by DecodeGif).
    fn batched(mut self) -> Self {
        self.shape.insert(0, 1);
        self
    }

    /// As `dtype` (uint8, uint16 or float32), scaled as TensorFlow scales each format: 8-bit
    /// samples x 256 to uint16 (x 257 from PNG, which libpng widens) and / 255 to float;
    /// 16-bit PNG samples >> 8 to uint8 and / 65535 to float.
    fn into_tensor(self, dtype: DType, png: bool) -> KResult<Tensor> {
        let shape = self.shape;
        Ok(match (self.samples, dtype) {
            (Samples::U8(v), DType::UInt8) => Tensor::from_vec(shape, v),
            (Samples::U16(v), DType::UInt8) => {
                Tensor::from_vec(shape, v.iter().map(|&x| (x >> 8) as u8).collect::<Vec<_>>())
            }
            (Samples::U8(v), DType::UInt16) => {
                let scale = if png { 257 } else { 256 };
                uint16(shape, v.iter().map(|&x| u16::from(x) * scale).collect())?
            }
            (Samples::U16(v), DType::UInt16) => uint16(shape, v)?,
            (Samples::U8(v), DType::Float32) if png => Tensor::from_vec(
                shape,
                v.iter()
                    .map(|&x| f32::from(u16::from(x) * 257) * (1.0 / 65535.0))
                    .collect(),
            ),
            (Samples::U8(v), DType::Float32) => Tensor::from_vec(
                shape,
                v.iter().map(|&x| f32::from(x) * (1.0 / 255.0)).collect(),
            ),
            (Samples::U16(v), DType::Float32) => Tensor::from_vec(
                shape,
                v.iter().map(|&x| f32::from(x) * (1.0 / 65535.0)).collect(),
            ),
            (_, other) => {
                return Err(fail(format!(
                    "`dtype` must be uint8, uint16 or float32, got {other}"
                )))
            }
        })
    }
}

/// A uint16 tensor (uint16 shares its storage with the half floats, so no `from_vec`).
fn uint16(shape: Vec<usize>, values: Vec<u16>) -> KResult<Tensor> {
    Tensor::new(shape, Storage::UInt16(values))
        .ok_or_else(|| fail("decoded samples do not fill the image's shape"))
}

/// The bytes of a scalar string input.
fn scalar_bytes(inputs: &[Value], i: usize, what: &str) -> KResult<Arc<Tensor>> {
    let t = tensor_input(inputs, i)?;
    if !t.shape().is_empty() {
        return Err(fail(format!(
            "`{what}` must be scalar but got shape {:?}",
            t.shape()
        )));
    }
    if t.string_values().is_none() {
        return Err(fail(format!(
            "`{what}` must be a string, got {}",
            t.dtype()
        )));
    }
    Ok(t)
}

/// Decodes `data` as `op` would: the format sniffed, refused where the op refuses it, GIF
/// frames batched or not, then converted to `dtype`.
fn decode_image(
    op: DecodeOp,
    data: &[u8],
    channels: i64,
    dtype: DType,
    jpeg: &jpeg_ffi::DecodeSpec,
) -> KResult<Tensor> {
    if !matches!(channels, 0 | 1 | 3 | 4) {
        return Err(fail(format!(
            "`channels` must be 0, 1, 3 or 4 but got {channels}"
        )));
    }
    let channels = channels as usize;
    if data.is_empty() {
        return Err(fail("Input is empty."));
    }
    let Some(format) = Format::sniff(data) else {
        return Err(fail(
            "Unknown image file format. One of JPEG, JPEG XL, PNG, GIF, BMP, WebP required.",
        ));
    };
    if op == DecodeOp::CropJpeg && format != Format::Jpeg {
        return Err(fail(format!(
            "DecodeAndCropJpeg operation can run on JPEG only, but detected {}.",
            format.name()
        )));
    }
    if op == DecodeOp::Bmp && format != Format::Bmp {
        let lower = format.name().to_lowercase();
        return Err(fail(format!(
            "Trying to decode {} format using DecodeBmp op. Use `decode_{lower}` or `decode_image` instead.",
            format.name()
        )));
    }
    let pixels = match format {
        Format::Png => png_decode::decode(data, channels).map_err(fail)?,
        Format::Jpeg => {
            if channels == 4 {
                return Err(fail("JPEG does not support 4 channels"));
            }
            let spec = jpeg_ffi::DecodeSpec {
                components: channels as u32,
                ..jpeg.clone()
            };
            let image = jpeg_ffi::decode(data, &spec).map_err(fail)?;
            Pixels::u8(
                vec![image.height, image.width, image.channels],
                image.pixels,
            )
        }
        Format::Gif => decode_gif_as(op, data, channels)?,
        Format::Bmp => {
            if !matches!(op, DecodeOp::Bmp | DecodeOp::Image { .. }) {
                return Err(fail(format!(
                    "Trying to decode BMP format using a wrong op. Use `decode_bmp` or `decode_image` instead. Op used: {}",
                    op.name()
                )));
            }
            bmp::decode(data, channels).map_err(fail)?
        }
    };
    let pixels = match (op, format) {
        (DecodeOp::Gif, Format::Png | Format::Jpeg) => pixels.batched(),
        _ => pixels,
    };
    pixels.into_tensor(dtype, format == Format::Png)
}

/// GIF frames as `op` returns them: all of them as a batch (DecodeGif, DecodeImage expanding
/// animations), or the only one as an image.
fn decode_gif_as(op: DecodeOp, data: &[u8], channels: usize) -> KResult<Pixels> {
    if !matches!(channels, 0 | 3) {
        return Err(fail(format!(
            "channels must be 0 or 3 for GIF, got {channels}"
        )));
    }
    let first_only = op
        == DecodeOp::Image {
            expand_animations: false,
        };
    let frames = gif_decode::decode(data, first_only).map_err(fail)?;
    let single = matches!(
        op,
        DecodeOp::Jpeg
            | DecodeOp::Png
            | DecodeOp::Image {
                expand_animations: false
            }
    );
    if !single {
        return Ok(frames);
    }
    if frames.shape[0] != 1 {
        return Err(fail(format!(
            "Got {} frames, but animated gifs can only be decoded by tf.io.decode_gif or tf.io.decode_image",
            frames.shape[0]
        )));
    }
    Ok(Pixels {
        shape: frames.shape[1..].to_vec(),
        samples: frames.samples,
    })
}
