//! The codec ops' kernels: attrs read and checked once per node, then the shared decoder
//! (`decode_image`), the JPEG encoder, or ExtractJpegShape's frame-header walk.

use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::engine::value::Value;
use crate::tensor::Tensor;
use crate::DType;

use super::jpeg_ffi::{self, DecodeSpec, EncodeSpec};
use super::{decode_image, scalar_bytes, DecodeOp};

type Built = Result<Box<dyn Kernel>, String>;

/// DecodeJpeg's attrs (DecodeAndCropJpeg's too); the JPEG defaults for the other decode ops.
fn jpeg_spec(node: &NodeSpec, jpeg_attrs: bool) -> Result<(i64, DecodeSpec), String> {
    let channels = node.attrs.int_or("channels", 0)?;
    let mut spec = DecodeSpec {
        components: 0,
        ratio: 1,
        fancy_upscaling: true,
        accurate: false,
        try_recover_truncated: false,
        acceptable_fraction: 1.0,
        crop: None,
    };
    if !jpeg_attrs {
        return Ok((channels, spec));
    }
    let ratio = node.attrs.int_or("ratio", 1)?;
    spec.ratio = match ratio {
        1 | 2 | 4 | 8 => ratio as u32,
        _ => return Err(format!("ratio must be 1, 2, 4, or 8, got {ratio}")),
    };
    spec.fancy_upscaling = node.attrs.bool_or("fancy_upscaling", true)?;
    spec.try_recover_truncated = node.attrs.bool_or("try_recover_truncated", false)?;
    spec.acceptable_fraction = node.attrs.float_or("acceptable_fraction", 1.0)?;
    spec.accurate = match node.attrs.string_or("dct_method", "")? {
        "" | "INTEGER_FAST" => false,
        "INTEGER_ACCURATE" => true,
        other => {
            return Err(format!(
            "dct_method must be one of {{'', 'INTEGER_FAST', 'INTEGER_ACCURATE'}}, got {other:?}"
        ))
        }
    };
    Ok((channels, spec))
}

/// A decode op's kernel: `contents` (and DecodeAndCropJpeg's `crop_window`) to pixels.
fn decode_kernel(op: DecodeOp, channels: i64, dtype: DType, spec: DecodeSpec) -> Box<dyn Kernel> {
    boxed(move |_, inputs| {
        let contents = scalar_bytes(inputs, 0, "contents")?;
        let data = contents.string_values().and_then(|v| v.first());
        let data = data.map_or(&[][..], Vec::as_slice);
        let mut spec = spec.clone();
        if op == DecodeOp::CropJpeg {
            spec.crop = Some(crop_window(inputs)?);
        }
        one(decode_image(op, data, channels, dtype, &spec)?)
    })
}

/// DecodeAndCropJpeg's `crop_window`: [y, x, height, width], int32.
fn crop_window(inputs: &[Value]) -> KResult<[i64; 4]> {
    let window = tensor_input(inputs, 1)?;
    if window.rank() != 1 {
        return Err(fail(format!(
            "crop_window must be 1-D, got shape {:?}",
            window.shape()
        )));
    }
    let values = window
        .values::<i32>()
        .ok_or_else(|| fail(format!("crop_window must be int32, got {}", window.dtype())))?;
    match values {
        &[y, x, h, w] => Ok([y, x, h, w].map(i64::from)),
        _ => Err(fail(format!(
            "crop_size must have four elements {:?}",
            window.shape()
        ))),
    }
}

pub fn decode_jpeg(node: &NodeSpec) -> Built {
    let (channels, spec) = jpeg_spec(node, true)?;
    Ok(decode_kernel(DecodeOp::Jpeg, channels, DType::UInt8, spec))
}

pub fn decode_and_crop_jpeg(node: &NodeSpec) -> Built {
    let (channels, spec) = jpeg_spec(node, true)?;
    Ok(decode_kernel(
        DecodeOp::CropJpeg,
        channels,
        DType::UInt8,
        spec,
    ))
}

pub fn decode_png(node: &NodeSpec) -> Built {
    let (channels, spec) = jpeg_spec(node, false)?;
    let dtype = dtype_attr(node, "dtype")?;
    Ok(decode_kernel(DecodeOp::Png, channels, dtype, spec))
}

pub fn decode_gif(node: &NodeSpec) -> Built {
    let (_, spec) = jpeg_spec(node, false)?;
    Ok(decode_kernel(DecodeOp::Gif, 3, DType::UInt8, spec))
}

pub fn decode_bmp(node: &NodeSpec) -> Built {
    let (channels, spec) = jpeg_spec(node, false)?;
    Ok(decode_kernel(DecodeOp::Bmp, channels, DType::UInt8, spec))
}

pub fn decode_image_op(node: &NodeSpec) -> Built {
    let (channels, spec) = jpeg_spec(node, false)?;
    let dtype = dtype_attr(node, "dtype")?;
    let expand_animations = node.attrs.bool_or("expand_animations", true)?;
    let op = DecodeOp::Image { expand_animations };
    Ok(decode_kernel(op, channels, dtype, spec))
}

/// The `dtype` attr (uint8 when absent): uint8, uint16 or float32.
fn dtype_attr(node: &NodeSpec, name: &str) -> Result<DType, String> {
    let dtype = match node.attrs.has(name) {
        true => node.attrs.dtype(name)?,
        false => DType::UInt8,
    };
    match dtype {
        DType::UInt8 | DType::UInt16 | DType::Float32 => Ok(dtype),
        other => Err(format!(
            "`dtype` for `{}` must be uint8, uint16 or float32 but got: {other}",
            node.op
        )),
    }
}

// -------------------------------------------------------------------------------------------
// ExtractJpegShape

pub fn extract_jpeg_shape(node: &NodeSpec) -> Built {
    let dtype = match node.attrs.has("output_type") {
        true => node.attrs.dtype("output_type")?,
        false => DType::Int32,
    };
    if !matches!(dtype, DType::Int32 | DType::Int64) {
        return Err(format!("output_type must be int32 or int64, got {dtype}"));
    }
    Ok(boxed(move |_, inputs| {
        let contents = scalar_bytes(inputs, 0, "contents")?;
        let data = contents.string_values().and_then(|v| v.first());
        let data = data.map_or(&[][..], Vec::as_slice);
        let [h, w, c] = frame_header(data)
            .map_err(|e| fail(format!("Could not read image information: {e}")))?;
        one(match dtype {
            DType::Int64 => {
                Tensor::from_vec(vec![3], vec![h, w, c].into_iter().map(i64::from).collect())
            }
            _ => Tensor::from_vec(vec![3], vec![h, w, c].into_iter().map(i32::from).collect()),
        })
    }))
}

/// Walks the marker segments to the frame header (SOF0..SOF15 but DHT, JPG and DAC): its
/// height, width and component count, as libjpeg reports them without decoding.
pub(super) fn frame_header(data: &[u8]) -> Result<[u16; 3], String> {
    if !data.starts_with(b"\xff\xd8") {
        return Err("not a JPEG file".into());
    }
    let mut at = 2;
    while at + 4 <= data.len() {
        if data[at] != 0xFF {
            return Err(format!("no marker at byte {at}"));
        }
        let marker = data[at + 1];
        if marker == 0xFF {
            at += 1;
            continue;
        }
        if marker == 0x01 || (0xD0..=0xD8).contains(&marker) {
            at += 2;
            continue;
        }
        if marker == 0xD9 || marker == 0xDA {
            return Err("no frame header before the scan".into());
        }
        let length = usize::from(u16::from_be_bytes([data[at + 2], data[at + 3]]));
        if (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let Some(body) = data.get(at + 4..at + 10) else {
                return Err("truncated frame header".into());
            };
            let height = u16::from_be_bytes([body[1], body[2]]);
            let width = u16::from_be_bytes([body[3], body[4]]);
            let components = u16::from(body[5]);
            if height == 0 || width == 0 || components == 0 {
                return Err(format!(
                    "empty image ({height}x{width}, {components} components)"
                ));
            }
            return Ok([height, width, components]);
        }
        at += 2 + length;
    }
    Err("no frame header".into())
}

// -------------------------------------------------------------------------------------------
// EncodeJpeg

/// EncodeJpeg's attrs but quality.
struct EncodeAttrs {
    format: String,
    spec: EncodeSpec,
}

fn encode_attrs(node: &NodeSpec) -> Result<EncodeAttrs, String> {
    let format = node.attrs.string_or("format", "")?.to_string();
    if !matches!(format.as_str(), "" | "grayscale" | "rgb") {
        return Err(format!("format must be '', grayscale or rgb, got {format}"));
    }
    let quality = node.attrs.int_or("quality", 95)?;
    if !(0..=100).contains(&quality) {
        return Err(format!("quality must be in [0,100], got {quality}"));
    }
    let density_unit = match node.attrs.string_or("density_unit", "in")? {
        "in" => 1,
        "cm" => 2,
        other => return Err(format!("density_unit must be 'in' or 'cm', got {other}")),
    };
    let spec = EncodeSpec {
        quality: quality as i32,
        progressive: node.attrs.bool_or("progressive", false)?,
        optimize_size: node.attrs.bool_or("optimize_size", false)?,
        chroma_downsampling: node.attrs.bool_or("chroma_downsampling", true)?,
        density_unit,
        // TensorFlow stores the int attrs in JFIF's 16-bit fields.
        x_density: node.attrs.int_or("x_density", 300)? as u16,
        y_density: node.attrs.int_or("y_density", 300)? as u16,
        xmp_metadata: node
            .attrs
            .bytes("xmp_metadata")
            .unwrap_or_default()
            .to_vec(),
    };
    Ok(EncodeAttrs { format, spec })
}

pub fn encode_jpeg(node: &NodeSpec) -> Built {
    let attrs = encode_attrs(node)?;
    Ok(boxed(move |_, inputs| {
        let image = tensor_input(inputs, 0)?;
        one(encode(&image, &attrs.format, &attrs.spec)?)
    }))
}

pub fn encode_jpeg_variable_quality(node: &NodeSpec) -> Built {
    let _ = node;
    Ok(boxed(move |_, inputs| {
        let image = tensor_input(inputs, 0)?;
        let quality = tensor_input(inputs, 1)?;
        if !quality.shape().is_empty() {
            return Err(fail(format!(
                "quality must be a scalar: {:?}",
                quality.shape()
            )));
        }
        let level = quality
            .values::<i32>()
            .and_then(|v| v.first().copied())
            .ok_or_else(|| fail(format!("quality must be int32, got {}", quality.dtype())))?;
        if !(0..=100).contains(&level) {
            return Err(fail(format!("quality must be in [0,100], got {level}")));
        }
        let spec = EncodeSpec {
            quality: level,
            progressive: false,
            optimize_size: false,
            chroma_downsampling: true,
            density_unit: 1,
            x_density: 300,
            y_density: 300,
            xmp_metadata: Vec::new(),
        };
        one(encode(&image, "", &spec)?)
    }))
}

/// Encodes a [height, width, channels] uint8 image; `format` "" takes the channels as they
/// are (1 or 3), "grayscale" and "rgb" require 1 and 3.
fn encode(image: &Tensor, format: &str, spec: &EncodeSpec) -> KResult<Tensor> {
    let &[height, width, channels] = image.shape() else {
        return Err(fail(format!(
            "image must be 3-dimensional{:?}",
            image.shape()
        )));
    };
    let pixels = image
        .values::<u8>()
        .ok_or_else(|| fail(format!("image must be uint8, got {}", image.dtype())))?;
    let wanted = match format {
        "grayscale" => 1,
        "rgb" => 3,
        _ => channels,
    };
    if channels != wanted || !matches!(channels, 1 | 3) {
        return Err(fail(match format {
            "" => format!("image must have 1 or 3 channels, got {:?}", image.shape()),
            _ => format!(
                "image must have {wanted} channels for format {format}, got {:?}",
                image.shape()
            ),
        }));
    }
    let bytes = jpeg_ffi::encode(pixels, height, width, channels, spec)
        .map_err(|e| fail(format!("JPEG encoding failed: {e}")))?;
    Ok(Tensor::strings(vec![], vec![bytes]))
}
