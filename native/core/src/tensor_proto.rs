//! Decoding TensorProto messages (Const nodes, attrs, signature defaults) into [`Tensor`]s.
//!
//! Accepts every encoding TensorFlow produces, as `runtime/tensor_proto.py` does: packed
//! `tensor_content`, each typed `*_val` field, and the rule that a typed field with fewer values
//! than the shape holds repeats its last value (no values at all means zeros). `half_val` holds
//! float16/bfloat16 bit patterns. Sizes the message claims are checked before allocating; since
//! the repeat rule lets a few bytes claim a huge tensor, expansion is capped at
//! [`MAX_EXPANDED_BYTES`].

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::protos::{tensor_shape_proto::Dim, TensorProto, TensorShapeProto};
use crate::tensor::{element_count, Storage, Tensor};
use crate::wire::{read_varint, split_by_lengths};

/// The most bytes a tensor expanded by the repeat-the-last-value rule may take.
pub const MAX_EXPANDED_BYTES: usize = 1 << 31;

/// The value of `proto`; `place` names the node, attribute or file it came from in errors.
pub fn tensor_from_proto(proto: &TensorProto, place: &str) -> Result<Tensor> {
    let fail = |detail: String| Error::TensorProto {
        place: place.into(),
        detail,
    };
    let dtype = DType::from_proto(proto.dtype)
        .ok_or_else(|| fail(format!("DataType {} has no tensor value here", proto.dtype)))?;
    let shape = defined_shape(proto.tensor_shape.as_ref()).map_err(&fail)?;
    let count = element_count(&shape).ok_or_else(|| {
        fail(format!(
            "tensor shape {shape:?} holds more elements than memory can"
        ))
    })?;
    let storage = if proto.tensor_content.is_empty() {
        from_field(proto, dtype, count)
    } else {
        from_content(&proto.tensor_content, dtype, count)
    }
    .map_err(&fail)?;
    Tensor::new(shape, storage).ok_or_else(|| fail("element count does not match shape".into()))
}

/// The dimensions of a shape that must be fully known (as a constant's is).
pub fn defined_shape(proto: Option<&TensorShapeProto>) -> std::result::Result<Vec<usize>, String> {
    let Some(proto) = proto else {
        return Ok(Vec::new());
    };
    if proto.unknown_rank {
        return Err("tensor value has an unknown rank".into());
    }
    let sizes: Vec<i64> = proto.dim.iter().map(|d| d.size).collect();
    sizes
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| format!("tensor value has a negative dimension in shape {sizes:?}"))
}

/// A known-rank TensorShapeProto of `dims` (-1 for an unknown dimension).
pub fn shape_proto(dims: &[i64]) -> TensorShapeProto {
    TensorShapeProto {
        dim: dims
            .iter()
            .map(|&size| Dim {
                size,
                name: String::new(),
            })
            .collect(),
        unknown_rank: false,
    }
}

fn from_content(
    content: &[u8],
    dtype: DType,
    count: usize,
) -> std::result::Result<Storage, String> {
    let Some(item) = dtype.item_size() else {
        return string_list(content, count).map(Storage::String);
    };
    let needed = count.checked_mul(item);
    if needed != Some(content.len()) {
        return Err(format!(
            "tensor_content holds {} bytes, but {count} elements of {dtype} need {}",
            content.len(),
            needed.map_or("more than memory holds".into(), |n| n.to_string())
        ));
    }
    Storage::from_le_bytes(dtype, content).ok_or_else(|| format!("{dtype} is not fixed-width"))
}

/// Strings packed as `count` varint lengths followed by the concatenated bytes.
fn string_list(content: &[u8], count: usize) -> std::result::Result<Vec<Vec<u8>>, String> {
    let mut pos = 0;
    let mut lengths = Vec::new();
    for _ in 0..count {
        // Each length takes at least one byte, so `count` is bounded by the content here.
        let length = read_varint(content, &mut pos, 64)
            .ok_or("string tensor_content ends inside its lengths")?;
        lengths.push(usize::try_from(length).map_err(|_| "string length overflows")?);
    }
    let rest = content.len() - pos;
    let total = lengths.iter().try_fold(0usize, |a, &n| a.checked_add(n));
    if total != Some(rest) {
        return Err(format!(
            "string tensor_content claims {} bytes of strings but holds {rest}",
            total.map_or("more".into(), |n| n.to_string())
        ));
    }
    Ok(split_by_lengths(&content[pos..], &lengths))
}

fn from_field(
    proto: &TensorProto,
    dtype: DType,
    count: usize,
) -> std::result::Result<Storage, String> {
    Ok(match dtype {
        DType::Float32 => Storage::Float32(expand("float_val", &proto.float_val, count)?),
        DType::Float64 => Storage::Float64(expand("double_val", &proto.double_val, count)?),
        DType::Int64 => Storage::Int64(expand("int64_val", &proto.int64_val, count)?),
        DType::UInt32 => Storage::UInt32(expand("uint32_val", &proto.uint32_val, count)?),
        DType::UInt64 => Storage::UInt64(expand("uint64_val", &proto.uint64_val, count)?),
        DType::Bool => Storage::Bool(expand("bool_val", &proto.bool_val, count)?),
        DType::String => Storage::String(expand("string_val", &proto.string_val, count)?),
        // Narrow integers are stored widened in int_val; like numpy's astype, they wrap.
        DType::Int32 => Storage::Int32(expand("int_val", &proto.int_val, count)?),
        DType::Int16 => Storage::Int16(expand(
            "int_val",
            &narrowed(&proto.int_val, |v| v as i16),
            count,
        )?),
        DType::Int8 => Storage::Int8(expand(
            "int_val",
            &narrowed(&proto.int_val, |v| v as i8),
            count,
        )?),
        DType::UInt8 => Storage::UInt8(expand(
            "int_val",
            &narrowed(&proto.int_val, |v| v as u8),
            count,
        )?),
        DType::UInt16 => Storage::UInt16(expand(
            "int_val",
            &narrowed(&proto.int_val, |v| v as u16),
            count,
        )?),
        DType::Float16 => {
            Storage::Float16(expand("half_val", &half_bits(&proto.half_val)?, count)?)
        }
        DType::BFloat16 => {
            Storage::BFloat16(expand("half_val", &half_bits(&proto.half_val)?, count)?)
        }
        DType::Complex64 => {
            Storage::Complex64(expand("scomplex_val", &pairs(&proto.scomplex_val)?, count)?)
        }
        DType::Complex128 => {
            Storage::Complex128(expand("dcomplex_val", &pairs(&proto.dcomplex_val)?, count)?)
        }
    })
}

/// `int_val`'s values as a narrower integer type.
fn narrowed<T>(values: &[i32], cast: fn(i32) -> T) -> Vec<T> {
    values.iter().map(|&v| cast(v)).collect()
}

/// `values` padded to `count` by repeating the last one (zeros if there are none).
fn expand<T: Clone + Default>(
    field: &str,
    values: &[T],
    count: usize,
) -> std::result::Result<Vec<T>, String> {
    if values.len() > count {
        return Err(format!(
            "{field} holds {} values, more than the {count} elements of the tensor's shape",
            values.len()
        ));
    }
    if values.len() < count && count.saturating_mul(std::mem::size_of::<T>()) > MAX_EXPANDED_BYTES {
        return Err(format!(
            "{field} holds {} values for {count} elements; repeating the last one would take \
             more than {MAX_EXPANDED_BYTES} bytes",
            values.len()
        ));
    }
    let mut out = values.to_vec();
    out.resize(count, values.last().cloned().unwrap_or_default());
    Ok(out)
}

fn half_bits(values: &[i32]) -> std::result::Result<Vec<u16>, String> {
    values
        .iter()
        .map(|&v| u16::try_from(v))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| {
            "half_val holds a value outside 0..65535, which is not a 16-bit pattern".into()
        })
}

fn pairs<T: Copy>(values: &[T]) -> std::result::Result<Vec<[T; 2]>, String> {
    if !values.len().is_multiple_of(2) {
        return Err(format!(
            "holds an odd number of values ({}); complex values are (real, imag) pairs",
            values.len()
        ));
    }
    Ok(values.chunks_exact(2).map(|p| [p[0], p[1]]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protos::DataType;

    fn proto(dtype: DataType, dims: &[i64]) -> TensorProto {
        TensorProto {
            dtype: dtype as i32,
            tensor_shape: Some(shape_proto(dims)),
            ..Default::default()
        }
    }

    fn decode(p: &TensorProto) -> Result<Tensor> {
        tensor_from_proto(p, "node c")
    }

    fn error_text(p: &TensorProto) -> String {
        decode(p).unwrap_err().to_string()
    }

    #[test]
    fn packed_content_is_little_endian() {
        let mut p = proto(DataType::DtFloat, &[2]);
        p.tensor_content = [1.5f32.to_le_bytes(), (-2f32).to_le_bytes()].concat();
        let t = decode(&p).unwrap();
        assert_eq!(
            (t.shape(), t.storage()),
            (&[2][..], &Storage::Float32(vec![1.5, -2.0]))
        );
        p.tensor_content.pop();
        assert!(error_text(&p)
            .contains("tensor_content holds 7 bytes, but 2 elements of float32 need 8"));
    }

    #[test]
    fn a_short_typed_field_repeats_its_last_value_and_none_means_zeros() {
        let mut p = proto(DataType::DtFloat, &[2, 2]);
        assert_eq!(
            decode(&p).unwrap().storage(),
            &Storage::Float32(vec![0.0; 4])
        );
        p.float_val = vec![1.0, 2.0];
        assert_eq!(
            decode(&p).unwrap().storage(),
            &Storage::Float32(vec![1.0, 2.0, 2.0, 2.0])
        );
        p.float_val = vec![1.0; 5];
        assert!(error_text(&p).contains("float_val holds 5 values, more than the 4 elements"));
    }

    #[test]
    fn repeating_is_capped_before_allocating() {
        let mut p = proto(DataType::DtInt64, &[1 << 40]);
        p.int64_val = vec![7];
        assert!(error_text(&p).contains("would take more than"));
        let p = proto(DataType::DtFloat, &[1 << 40, 1 << 40]);
        assert!(error_text(&p).contains("more elements than memory can"));
    }

    #[test]
    fn narrow_integers_wrap_like_numpy_astype() {
        let mut p = proto(DataType::DtInt8, &[2]);
        p.int_val = vec![-1, 200];
        assert_eq!(decode(&p).unwrap().storage(), &Storage::Int8(vec![-1, -56]));
        let mut p = proto(DataType::DtUint16, &[1]);
        p.int_val = vec![65535];
        assert_eq!(decode(&p).unwrap().storage(), &Storage::UInt16(vec![65535]));
    }

    #[test]
    fn half_val_holds_bit_patterns() {
        let mut p = proto(DataType::DtHalf, &[2]);
        p.half_val = vec![0x3C00]; // 1.0 in float16
        assert_eq!(
            decode(&p).unwrap().storage(),
            &Storage::Float16(vec![0x3C00, 0x3C00])
        );
        let mut p = proto(DataType::DtBfloat16, &[1]);
        p.half_val = vec![0x3F80]; // 1.0 in bfloat16
        assert_eq!(
            decode(&p).unwrap().storage(),
            &Storage::BFloat16(vec![0x3F80])
        );
        p.half_val = vec![70000];
        assert!(error_text(&p).contains("not a 16-bit pattern"));
    }

    #[test]
    fn strings_from_string_val_and_from_packed_content() {
        let mut p = proto(DataType::DtString, &[3]);
        p.string_val = vec![b"a".to_vec(), b"bc".to_vec()];
        let expected = vec![b"a".to_vec(), b"bc".to_vec(), b"bc".to_vec()];
        assert_eq!(decode(&p).unwrap().storage(), &Storage::String(expected));
        let mut p = proto(DataType::DtString, &[2]);
        p.tensor_content = b"\x01\x02xyz".to_vec();
        let expected = vec![b"x".to_vec(), b"yz".to_vec()];
        assert_eq!(decode(&p).unwrap().storage(), &Storage::String(expected));
        p.tensor_content = b"\x01\x05xyz".to_vec();
        assert!(error_text(&p).contains("claims 6 bytes of strings but holds 3"));
        let mut p = proto(DataType::DtString, &[1 << 60]);
        p.tensor_content = b"\x01".to_vec();
        assert!(error_text(&p).contains("ends inside its lengths"));
    }

    #[test]
    fn complex_values_are_pairs() {
        let mut p = proto(DataType::DtComplex64, &[1]);
        p.scomplex_val = vec![1.0, 2.0];
        assert_eq!(
            decode(&p).unwrap().storage(),
            &Storage::Complex64(vec![[1.0, 2.0]])
        );
        p.scomplex_val = vec![1.0];
        assert!(error_text(&p).contains("odd number of values"));
    }

    #[test]
    fn bad_shapes_and_dtypes_name_the_place() {
        let p = proto(DataType::DtFloat, &[-1]);
        assert_eq!(
            error_text(&p),
            "node c: tensor value has a negative dimension in shape [-1]"
        );
        let mut p = proto(DataType::DtFloat, &[]);
        p.tensor_shape = Some(TensorShapeProto {
            dim: Vec::new(),
            unknown_rank: true,
        });
        assert!(error_text(&p).contains("unknown rank"));
        let p = proto(DataType::DtResource, &[]);
        assert!(error_text(&p).contains("DataType 20 has no tensor value here"));
    }
}
