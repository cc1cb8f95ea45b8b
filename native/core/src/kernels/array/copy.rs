//! Data movement over any dtype: every array op that only rearranges elements is written once,
//! generic over the element type, and applied to a [`Storage`] through [`map_storage!`], which
//! keeps the variant (float16, bfloat16 and uint16 share `u16` but stay distinct).
//!
//! The central primitive is [`axis_gather`]: output element `(i0, .., in)` is source element
//! `o0[i0] + .. + on[in]`, each axis having its own table of source offsets. Transpose, Slice,
//! StridedSlice, ReverseV2, Tile, BroadcastTo and MirrorPad are all such tables; when the last
//! axis reads consecutive elements whole runs are copied (a memcpy for plain types).

use crate::engine::kernel::{fail, KResult};
use crate::tensor::{element_count, Storage, Tensor};

/// Rebuilds a storage of the same variant: `$body` sees the buffer as `$v` (a `&Vec<T>`) and
/// yields a `Vec<T>`, or `?`-propagates an error.
macro_rules! map_storage {
    ($storage:expr, $v:ident => $body:expr) => {
        for_variants!(@one $storage, $v, $body)
    };
}

/// Like [`map_storage!`] over two storages that must share a variant (an op's data and its
/// fill value or update); returns `Err($mismatch)` when they differ.
macro_rules! map_storage2 {
    ($a:expr, $b:expr, $x:ident, $y:ident => $body:expr, $mismatch:expr) => {
        for_variants!(@two $a, $b, $x, $y, $body, $mismatch)
    };
}

/// Like [`map_storage!`] over a slice of storages that must share a variant: `$vs` is a
/// `Vec<&[T]>`; `Err($mismatch)` when they differ, `Err(fail)` when there are none.
macro_rules! map_storages {
    ($all:expr, $vs:ident => $body:expr, $mismatch:expr) => {
        for_variants!(@many $all, $vs, $body, $mismatch)
    };
}

/// [`map_storage!`] for a body yielding several `Vec<T>`: a `Vec<Storage>` (split outputs).
macro_rules! split_storage {
    ($storage:expr, $v:ident => $body:expr) => {
        for_variants!(@split $storage, $v, $body)
    };
}

/// The variant list the storage macros expand over.
macro_rules! for_variants {
    (@go one [$storage:expr, $v:ident, $body:expr] $($var:ident)*) => {{
        use $crate::tensor::Storage as S;
        match $storage {
            $(S::$var($v) => S::$var($body),)*
        }
    }};
    (@go split [$storage:expr, $v:ident, $body:expr] $($var:ident)*) => {{
        use $crate::tensor::Storage as S;
        match $storage {
            $(S::$var($v) => $body.into_iter().map(S::$var).collect::<Vec<S>>(),)*
        }
    }};
    (@go two [$a:expr, $b:expr, $x:ident, $y:ident, $body:expr, $mismatch:expr] $($var:ident)*) => {{
        use $crate::tensor::Storage as S;
        match ($a, $b) {
            $((S::$var($x), S::$var($y)) => S::$var($body),)*
            _ => return Err($mismatch),
        }
    }};
    (@go many [$all:expr, $vs:ident, $body:expr, $mismatch:expr] $($var:ident)*) => {{
        use $crate::tensor::Storage as S;
        let all: &[&S] = $all;
        match all.first() {
            $(Some(S::$var(_)) => {
                let $vs = all
                    .iter()
                    .map(|s| match s {
                        S::$var(v) => Some(v.as_slice()),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| $mismatch)?;
                S::$var($body)
            })*
            None => return Err($crate::engine::kernel::fail("no inputs")),
        }
    }};
    (@$kind:ident $($args:tt)*) => {
        for_variants!(@go $kind [$($args)*] Float16 BFloat16 UInt16 Float32 Float64 Int8 Int16
            Int32 Int64 UInt8 UInt32 UInt64 Bool Complex64 Complex128 String)
    };
}

/// Row-major strides of `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut out = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        out[i] = out[i + 1] * shape[i + 1];
    }
    out
}

/// The element count of an output shape, an error when it overflows.
pub fn checked_count(shape: &[usize]) -> KResult<usize> {
    // Beyond this no buffer of any element type can be allocated (a Vec panics past
    // isize::MAX bytes), so it is an error rather than a crash.
    const LIMIT: usize = isize::MAX as usize / 32;
    element_count(shape)
        .filter(|&n| n <= LIMIT)
        .ok_or_else(|| fail(format!("output shape {shape:?} is too large")))
}

/// The product of some dimensions of a valid shape, saturating: a tensor with a zero
/// dimension may have others whose product overflows, and then nothing is read anyway.
pub fn prod(dims: &[usize]) -> usize {
    dims.iter().fold(1usize, |p, &d| p.saturating_mul(d))
}

/// An empty tensor of `shape` when it has no elements (before building any per-axis tables,
/// whose lengths are the dimensions and may be huge when another one is zero).
pub fn if_empty(dtype: crate::DType, shape: &[usize]) -> KResult<Option<Tensor>> {
    if element_count(shape) == Some(0) {
        return crate::kernels::util::make(shape.to_vec(), zeros(dtype, 0)).map(Some);
    }
    checked_count(shape)?;
    Ok(None)
}

/// Output element `(i0, .., in)` = `src[tables[0][i0] + .. + tables[n][in]]`; the caller
/// guarantees every sum is in bounds (an out-of-bounds one is an internal error, not a panic).
pub fn axis_gather<T: Clone>(src: &[T], tables: &[Vec<usize>]) -> KResult<Vec<T>> {
    let dims: Vec<usize> = tables.iter().map(Vec::len).collect();
    let count = checked_count(&dims)?;
    let mut out = Vec::with_capacity(count);
    if count == 0 {
        return Ok(out);
    }
    let Some((last, _)) = tables.split_last() else {
        out.extend(src.first().cloned());
        return Ok(out);
    };
    let oob = || fail("internal: gather offset out of bounds");
    let Some((outer, run_start, run_len)) = trailing_run(tables) else {
        // The last axis is not consecutive: element by element.
        let outer = &tables[..tables.len() - 1];
        let mut index = vec![0usize; outer.len()];
        loop {
            let base: usize = outer.iter().zip(&index).map(|(t, &i)| t[i]).sum();
            for &o in last {
                out.push(src.get(base + o).ok_or_else(oob)?.clone());
            }
            if !advance(&mut index, &dims[..outer.len()]) {
                return Ok(out);
            }
        }
    };
    let mut index = vec![0usize; outer.len()];
    loop {
        let base: usize = outer.iter().zip(&index).map(|(t, &i)| t[i]).sum();
        let start = base + run_start;
        out.extend_from_slice(src.get(start..start + run_len).ok_or_else(oob)?);
        if !advance(&mut index, &dims[..outer.len()]) {
            return Ok(out);
        }
    }
}

/// When the trailing axes read one contiguous run of the source: the remaining outer tables,
/// the run's start and its length. Axes merge while each steps by the length of the run
/// after it, so a slice of whole rows (or an identity) copies in few, long runs.
fn trailing_run(tables: &[Vec<usize>]) -> Option<(&[Vec<usize>], usize, usize)> {
    let (last, _) = tables.split_last()?;
    let first = last.first().copied()?;
    if !last.iter().enumerate().all(|(i, &o)| o == first + i) {
        return None;
    }
    let (mut start, mut len, mut k) = (first, last.len(), tables.len() - 1);
    while k > 0 {
        let t = &tables[k - 1];
        let Some(&t0) = t.first() else { break };
        if !t.iter().enumerate().all(|(i, &o)| o == t0 + i * len) {
            break;
        }
        start += t0;
        len *= t.len();
        k -= 1;
    }
    Some((&tables[..k], start, len))
}

/// Steps a row-major multi-index; false once it wraps around.
pub fn advance(index: &mut [usize], dims: &[usize]) -> bool {
    for d in (0..index.len()).rev() {
        index[d] += 1;
        if index[d] < dims[d] {
            return true;
        }
        index[d] = 0;
    }
    false
}

/// [`axis_gather`] over any storage.
pub fn gather_storage(src: &Storage, tables: &[Vec<usize>]) -> KResult<Storage> {
    Ok(map_storage!(src, v => axis_gather(v, tables)?))
}

/// A tensor of `shape` from `src` through per-axis offset tables (one per output axis).
pub fn gather_tensor(src: &Tensor, tables: &[Vec<usize>]) -> KResult<Tensor> {
    let shape = tables.iter().map(Vec::len).collect();
    crate::kernels::util::make(shape, gather_storage(src.storage(), tables)?)
}

/// Rows `src[i*row .. (i+1)*row]` for each `i` of `rows`, concatenated; indices are checked.
pub fn take_rows<T: Clone>(src: &[T], row: usize, rows: &[usize], out: &mut Vec<T>) -> KResult<()> {
    for &r in rows {
        let start = r
            .checked_mul(row)
            .ok_or_else(|| fail("internal: row offset overflows"))?;
        let slice = src
            .get(start..start + row)
            .ok_or_else(|| fail("internal: row out of bounds"))?;
        out.extend_from_slice(slice);
    }
    Ok(())
}

/// `n` copies of the first element of `v` (a fill value), empty when `v` is.
pub fn repeat_first<T: Clone>(v: &[T], n: usize) -> Vec<T> {
    v.first().map(|x| vec![x.clone(); n]).unwrap_or_default()
}

/// A storage of `n` zeros (false, empty strings) of `dtype`.
pub fn zeros(dtype: crate::DType, n: usize) -> Storage {
    use crate::DType as D;
    match dtype {
        D::Float16 => Storage::Float16(vec![0; n]),
        D::BFloat16 => Storage::BFloat16(vec![0; n]),
        D::UInt16 => Storage::UInt16(vec![0; n]),
        D::Float32 => Storage::Float32(vec![0.0; n]),
        D::Float64 => Storage::Float64(vec![0.0; n]),
        D::Int8 => Storage::Int8(vec![0; n]),
        D::Int16 => Storage::Int16(vec![0; n]),
        D::Int32 => Storage::Int32(vec![0; n]),
        D::Int64 => Storage::Int64(vec![0; n]),
        D::UInt8 => Storage::UInt8(vec![0; n]),
        D::UInt32 => Storage::UInt32(vec![0; n]),
        D::UInt64 => Storage::UInt64(vec![0; n]),
        D::Bool => Storage::Bool(vec![false; n]),
        D::Complex64 => Storage::Complex64(vec![[0.0; 2]; n]),
        D::Complex128 => Storage::Complex128(vec![[0.0; 2]; n]),
        D::String => Storage::String(vec![Vec::new(); n]),
    }
}

/// A storage of `n` ones of `dtype`; None for strings, which have no one.
pub fn ones(dtype: crate::DType, n: usize) -> Option<Storage> {
    use crate::DType as D;
    Some(match dtype {
        D::Float16 => Storage::Float16(vec![0x3c00; n]),
        D::BFloat16 => Storage::BFloat16(vec![0x3f80; n]),
        D::UInt16 => Storage::UInt16(vec![1; n]),
        D::Float32 => Storage::Float32(vec![1.0; n]),
        D::Float64 => Storage::Float64(vec![1.0; n]),
        D::Int8 => Storage::Int8(vec![1; n]),
        D::Int16 => Storage::Int16(vec![1; n]),
        D::Int32 => Storage::Int32(vec![1; n]),
        D::Int64 => Storage::Int64(vec![1; n]),
        D::UInt8 => Storage::UInt8(vec![1; n]),
        D::UInt32 => Storage::UInt32(vec![1; n]),
        D::UInt64 => Storage::UInt64(vec![1; n]),
        D::Bool => Storage::Bool(vec![true; n]),
        D::Complex64 => Storage::Complex64(vec![[1.0, 0.0]; n]),
        D::Complex128 => Storage::Complex128(vec![[1.0, 0.0]; n]),
        D::String => return None,
    })
}

/// A tensor with the same elements under `shape` (one copy: storage is owned by the tensor).
pub fn reshape_copy(t: &Tensor, shape: Vec<usize>) -> KResult<Tensor> {
    crate::kernels::util::make(shape, t.storage().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_gather_copies_runs_and_single_elements() {
        let src: Vec<i32> = (0..6).collect();
        // Transpose of a [2, 3] matrix: axis tables are strides of the permuted source.
        let t = axis_gather(&src, &[vec![0, 1, 2], vec![0, 3]]).unwrap();
        assert_eq!(t, vec![0, 3, 1, 4, 2, 5]);
        let rows = axis_gather(&src, &[vec![3, 0], vec![0, 1, 2]]).unwrap();
        assert_eq!(rows, vec![3, 4, 5, 0, 1, 2]);
        assert!(axis_gather(&src, &[vec![6]]).is_err());
        assert_eq!(axis_gather(&src, &[]).unwrap(), vec![0]);
        assert!(axis_gather(&src, &[vec![], vec![0]]).unwrap().is_empty());
    }
}
