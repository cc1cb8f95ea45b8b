//! Slicing and padding: Slice, StridedSlice (every mask, negative strides), Pad, PadV2 and
//! MirrorPad. Slices are per-axis offset tables for [`gather_tensor`], so a slice whose last
//! axis has stride 1 copies whole runs; constant padding fills the output and copies rows in.

use super::copy::{checked_count, gather_tensor, if_empty, strides};
use super::Made;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{int_values, make};
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("Slice", slice);
    r.add("StridedSlice", strided_slice);
    r.add("Pad", |_| pad(false));
    r.add("PadV2", |_| pad(true));
    r.add("MirrorPad", mirror_pad);
}

/// One output axis of a slice: `count` elements from `start` in steps of `step`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Axis {
    start: i64,
    step: i64,
    count: usize,
}

/// The tables of a slice of `t` along every axis.
fn slice_tables(t: &Tensor, axes: &[Axis]) -> Vec<Vec<usize>> {
    let st = strides(t.shape());
    axes.iter()
        .zip(&st)
        .map(|(a, &s)| {
            (0..a.count as i64)
                .map(|j| (a.start + j * a.step) as usize * s)
                .collect()
        })
        .collect()
}

/// The slice of `t` along `axes`.
fn sliced(t: &Tensor, axes: &[Axis]) -> KResult<Tensor> {
    let dims: Vec<usize> = axes.iter().map(|a| a.count).collect();
    if let Some(empty) = if_empty(t.dtype(), &dims)? {
        return Ok(empty);
    }
    gather_tensor(t, &slice_tables(t, axes))
}

fn slice(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let begin = int_values(&*tensor_input(inputs, 1)?, "begin")?;
        let size = int_values(&*tensor_input(inputs, 2)?, "size")?;
        let axes = slice_axes(t.shape(), &begin, &size)?;
        one(sliced(&t, &axes)?)
    }))
}

fn slice_axes(shape: &[usize], begin: &[i64], size: &[i64]) -> KResult<Vec<Axis>> {
    if begin.len() != shape.len() || size.len() != shape.len() {
        return Err(fail(format!(
            "begin {begin:?} and size {size:?} must have one entry per dimension of the \
             input of shape {shape:?}"
        )));
    }
    let mut axes = Vec::with_capacity(shape.len());
    for i in 0..shape.len() {
        let dim = shape[i] as i64;
        let start = begin[i];
        if start < 0 || start > dim {
            return Err(fail(format!(
                "Expected begin[{i}] in [0, {dim}], but got {start}"
            )));
        }
        let count = if size[i] == -1 { dim - start } else { size[i] };
        if count < 0 || count > dim - start {
            return Err(fail(format!(
                "Expected size[{i}] in [0, {}], but got {}",
                dim - start,
                size[i]
            )));
        }
        axes.push(Axis {
            start,
            step: 1,
            count: count as usize,
        });
    }
    Ok(axes)
}

/// StridedSlice's five masks.
#[derive(Clone, Copy)]
struct Masks {
    begin: i64,
    end: i64,
    ellipsis: i64,
    new_axis: i64,
    shrink: i64,
}

fn strided_slice(node: &NodeSpec) -> Made {
    let a = &node.attrs;
    let masks = Masks {
        begin: a.int_or("begin_mask", 0)?,
        end: a.int_or("end_mask", 0)?,
        ellipsis: a.int_or("ellipsis_mask", 0)?,
        new_axis: a.int_or("new_axis_mask", 0)?,
        shrink: a.int_or("shrink_axis_mask", 0)?,
    };
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let specs: Vec<Tensor> = (1..4)
            .map(|i| tensor_input(inputs, i).map(|x| (*x).clone()))
            .collect::<KResult<_>>()?;
        if specs
            .iter()
            .any(|s| s.rank() != 1 || s.shape() != specs[0].shape())
        {
            return Err(fail(format!(
                "Expected begin, end, and strides to be 1D equal size tensors, but got shapes \
                 {:?}, {:?}, and {:?} instead",
                specs[0].shape(),
                specs[1].shape(),
                specs[2].shape()
            )));
        }
        let begin = int_values(&specs[0], "begin")?;
        let end = int_values(&specs[1], "end")?;
        let step = int_values(&specs[2], "strides")?;
        let (axes, final_shape) = strided_plan(t.shape(), &begin, &end, &step, masks)?;
        let out = sliced(&t, &axes)?;
        one(out
            .reshaped(final_shape)
            .ok_or_else(|| fail("internal: final shape"))?)
    }))
}

/// Where an output dimension of a strided slice comes from.
#[derive(Clone, Copy)]
enum Out {
    Dim(usize),
    NewAxis,
    Shrunk,
}

/// One dense spec entry: (begin, end, stride, begin masked, end masked, shrink).
type Dense = (i64, i64, i64, bool, bool, bool);

/// The per-input-axis slices and the final output shape of a strided slice. TensorFlow first
/// maps the sparse spec (with an ellipsis and new axes) onto one entry per input dimension,
/// then clamps each dimension's bounds.
fn strided_plan(
    shape: &[usize],
    begin: &[i64],
    end: &[i64],
    step: &[i64],
    m: Masks,
) -> KResult<(Vec<Axis>, Vec<usize>)> {
    if m.ellipsis & (m.ellipsis - 1) != 0 {
        return Err(fail("Multiple ellipses in slice spec not allowed"));
    }
    let rank = shape.len();
    let (dense, gather) = dense_spec(rank, begin, end, step, m)?;
    let mut axes = Vec::with_capacity(rank);
    for (i, (&dim, spec)) in shape.iter().zip(&dense).enumerate() {
        axes.push(dense_slice(i, dim as i64, *spec)?);
    }
    let final_shape = gather
        .iter()
        .filter_map(|g| match g {
            Out::Dim(d) => Some(axes[*d].count),
            Out::NewAxis => Some(1),
            Out::Shrunk => None,
        })
        .collect();
    Ok((axes, final_shape))
}

fn dense_spec(
    rank: usize,
    begin: &[i64],
    end: &[i64],
    step: &[i64],
    m: Masks,
) -> KResult<(Vec<Dense>, Vec<Out>)> {
    let mut sparse = begin.len().min(62);
    let bit = |mask: i64, i: usize| mask >> i & 1 == 1;
    let mut ellipsis = m.ellipsis & ((1i64 << sparse) - 1);
    if ellipsis == 0 {
        ellipsis = 1 << sparse;
        sparse += 1;
    }
    let ellipsis_at = 63 - ellipsis.leading_zeros() as usize;
    let new_after = (ellipsis_at + 1..sparse)
        .filter(|&i| bit(m.new_axis, i))
        .count();
    let mut dense: Vec<Dense> = vec![(0, 0, 1, true, true, false); rank];
    let mut gather = Vec::new();
    let mut full = 0usize;
    for i in 0..sparse {
        if bit(ellipsis, i) {
            let stop = (rank + 1 + new_after).saturating_sub(sparse - i).min(rank);
            gather.extend((full..stop.max(full)).map(Out::Dim));
            full = full.max(stop);
        } else if bit(m.new_axis, i) {
            gather.push(Out::NewAxis);
        } else {
            if full >= rank {
                return Err(fail(format!(
                    "Index out of range using input dim {full}; input has only {rank} dims"
                )));
            }
            let shrink = bit(m.shrink, i);
            dense[full] = (
                begin[i],
                end[i],
                step[i],
                bit(m.begin, i),
                bit(m.end, i),
                shrink,
            );
            gather.push(if shrink { Out::Shrunk } else { Out::Dim(full) });
            full += 1;
        }
    }
    Ok((dense, gather))
}

/// One input dimension's slice, clamped as TensorFlow does: out-of-range bounds clamp to the
/// ends, masked bounds take the whole range in the stride's direction, and a shrunk index must
/// lie inside the dimension.
fn dense_slice(i: usize, dim: i64, spec: Dense) -> KResult<Axis> {
    let (begin, end, stride, begin_masked, end_masked, shrink) = spec;
    if stride == 0 {
        return Err(fail(format!("strides[{i}] must be non-zero")));
    }
    if shrink {
        if stride < 0 {
            return Err(fail("only stride 1 allowed on non-range indexing"));
        }
        let at = if begin < 0 { begin + dim } else { begin };
        if at < 0 || at >= dim {
            return Err(fail(format!(
                "slice index {begin} of dimension {i} out of bounds"
            )));
        }
        return Ok(Axis {
            start: at,
            step: 1,
            count: 1,
        });
    }
    let (low, high) = if stride > 0 { (0, dim) } else { (-1, dim - 1) };
    let clamp = |value: i64, masked: bool, is_begin: bool| {
        if masked {
            return if (stride > 0) == is_begin { low } else { high };
        }
        let v = if value < 0 {
            value.saturating_add(dim)
        } else {
            value
        };
        v.clamp(low, high)
    };
    let start = clamp(begin, begin_masked, true);
    let stop = clamp(end, end_masked, false);
    let span = stop - start;
    if span == 0 || (span < 0) != (stride < 0) {
        return Ok(Axis {
            start: 0,
            step: 1,
            count: 0,
        });
    }
    let count = (span.unsigned_abs()).div_ceil(stride.unsigned_abs()) as usize;
    Ok(Axis {
        start,
        step: stride,
        count,
    })
}

/// A checked `[rank, 2]` paddings input as (before, after) pairs.
fn paddings(p: &Tensor, rank: usize) -> KResult<Vec<(usize, usize)>> {
    if p.rank() != 2 || p.shape()[1] != 2 || p.shape()[0] != rank {
        return Err(fail(format!(
            "paddings must be a [{rank}, 2] matrix for an input of rank {rank}, got shape {:?}",
            p.shape()
        )));
    }
    let v = int_values(p, "paddings")?;
    v.chunks_exact(2)
        .map(|c| match (usize::try_from(c[0]), usize::try_from(c[1])) {
            (Ok(a), Ok(b)) => Ok((a, b)),
            _ => Err(fail(format!("paddings must be non-negative, got {v:?}"))),
        })
        .collect()
}

fn padded_shape(shape: &[usize], widths: &[(usize, usize)]) -> KResult<Vec<usize>> {
    let out: Option<Vec<usize>> = shape
        .iter()
        .zip(widths)
        .map(|(&d, &(a, b))| d.checked_add(a)?.checked_add(b))
        .collect();
    let out = out.ok_or_else(|| fail("padded shape overflows"))?;
    checked_count(&out)?;
    Ok(out)
}

fn pad(with_value: bool) -> Made {
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let widths = paddings(&*tensor_input(inputs, 1)?, t.rank())?;
        let out_shape = padded_shape(t.shape(), &widths)?;
        let fill = if with_value {
            let v = tensor_input(inputs, 2)?;
            if v.len() != 1 || v.rank() > 0 && v.shape() != [1] {
                return Err(fail(format!(
                    "constant_values must be a scalar, got shape {:?}",
                    v.shape()
                )));
            }
            (*v).clone()
        } else {
            Tensor::new(vec![], super::copy::zeros(t.dtype(), 1))
                .ok_or_else(|| fail("internal: zero"))?
        };
        let mismatch = fail(format!(
            "constant_values must be {}, got {}",
            t.dtype(),
            fill.dtype()
        ));
        let storage = map_storage2!(t.storage(), fill.storage(), v, f =>
            pad_constant(v, t.shape(), &out_shape, &widths, &f[0]), mismatch);
        one(make(out_shape, storage)?)
    }))
}

/// `src` of `shape` placed at offset `before` of each axis in an output filled with `fill`.
/// The output is written once, front to back: the unpadded trailing axes form contiguous
/// rows copied whole (a memcpy for plain types), and the borders are filled in runs.
pub(super) fn pad_constant<T: Clone>(
    src: &[T],
    shape: &[usize],
    out_shape: &[usize],
    widths: &[(usize, usize)],
    fill: &T,
) -> Vec<T> {
    let total: usize = super::copy::prod(out_shape);
    if src.is_empty() {
        return vec![fill.clone(); total];
    }
    // The innermost padded axis: everything inside it is one contiguous run of the input.
    let Some(last) = widths.iter().rposition(|&(a, b)| a != 0 || b != 0) else {
        return src.to_vec();
    };
    let mut out = Vec::with_capacity(total);
    let layout = PadLayout {
        shape,
        widths,
        out_strides: &strides(out_shape),
        last,
    };
    layout.emit(0, src, fill, &mut out);
    out
}

/// The geometry [`pad_constant`] walks: `last` is the innermost padded axis.
struct PadLayout<'a> {
    shape: &'a [usize],
    widths: &'a [(usize, usize)],
    out_strides: &'a [usize],
    last: usize,
}

impl PadLayout<'_> {
    /// Appends the output block of `axis` whose input block is `src`.
    fn emit<T: Clone>(&self, axis: usize, src: &[T], fill: &T, out: &mut Vec<T>) {
        let (before, after) = self.widths[axis];
        let stride = self.out_strides[axis];
        out.resize(out.len() + before * stride, fill.clone());
        if axis == self.last {
            out.extend_from_slice(src);
        } else {
            let inner = src.len() / self.shape[axis].max(1);
            for block in src.chunks_exact(inner.max(1)) {
                self.emit(axis + 1, block, fill, out);
            }
        }
        out.resize(out.len() + after * stride, fill.clone());
    }
}

fn mirror_pad(node: &NodeSpec) -> Made {
    let reflect = match node.attrs.string("mode")? {
        "REFLECT" => true,
        "SYMMETRIC" => false,
        other => return Err(format!("unknown MirrorPad mode {other:?}")),
    };
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let widths = paddings(&*tensor_input(inputs, 1)?, t.rank())?;
        let out_shape = padded_shape(t.shape(), &widths)?;
        let mode = if reflect { "REFLECT" } else { "SYMMETRIC" };
        for (&dim, &(before, after)) in t.shape().iter().zip(&widths) {
            let ok = if reflect {
                before.max(after) < dim
            } else {
                before.max(after) <= dim
            };
            if !ok {
                return Err(fail(format!(
                    "paddings must be {} the dimension size {dim} in {mode} mode, got \
                     {before}, {after}",
                    if reflect {
                        "less than"
                    } else {
                        "no greater than"
                    },
                )));
            }
        }
        if let Some(empty) = if_empty(t.dtype(), &out_shape)? {
            return one(empty);
        }
        let st = strides(t.shape());
        let tables: Vec<Vec<usize>> = (0..t.rank())
            .map(|i| {
                let (dim, before) = (t.shape()[i] as i64, widths[i].0 as i64);
                (0..out_shape[i])
                    .map(|j| mirror_index(j as i64 - before, dim, reflect) * st[i])
                    .collect()
            })
            .collect();
        one(gather_tensor(&t, &tables)?)
    }))
}

/// The source index of position `j` (relative to the input's start) of a mirrored axis.
fn mirror_index(j: i64, dim: i64, reflect: bool) -> usize {
    let shift = i64::from(!reflect);
    let i = if j < 0 {
        -j - shift
    } else if j >= dim {
        2 * dim - j - 2 + shift
    } else {
        j
    };
    i.clamp(0, (dim - 1).max(0)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masks() -> Masks {
        Masks {
            begin: 0,
            end: 0,
            ellipsis: 0,
            new_axis: 0,
            shrink: 0,
        }
    }

    #[test]
    fn negative_strides_walk_backwards() {
        let (axes, shape) =
            strided_plan(&[5], &[-1], &[0], &[-2], Masks { end: 1, ..masks() }).unwrap();
        assert_eq!(shape, vec![3]);
        assert_eq!(
            axes[0],
            Axis {
                start: 4,
                step: -2,
                count: 3
            }
        );
    }

    #[test]
    fn new_axis_and_shrink_reshape_the_output() {
        let m = Masks {
            new_axis: 1,
            shrink: 2,
            ..masks()
        };
        let (_, shape) = strided_plan(&[3, 4], &[0, 1], &[0, 2], &[1, 1], m).unwrap();
        assert_eq!(shape, vec![1, 4]);
        assert!(strided_plan(
            &[3],
            &[3],
            &[4],
            &[1],
            Masks {
                shrink: 1,
                ..masks()
            }
        )
        .is_err());
    }

    #[test]
    fn mirror_indices() {
        let reflect: Vec<usize> = (-2..5).map(|j| mirror_index(j, 3, true)).collect();
        assert_eq!(reflect, vec![2, 1, 0, 1, 2, 1, 0]);
        let symmetric: Vec<usize> = (-2..5).map(|j| mirror_index(j, 3, false)).collect();
        assert_eq!(symmetric, vec![1, 0, 0, 1, 2, 2, 1]);
    }

    /// Constant padding by its definition: each output element is the input element it
    /// lands on, or the fill.
    fn pad_by_element(src: &[i32], shape: &[usize], widths: &[(usize, usize)]) -> Vec<i32> {
        let out_shape: Vec<usize> = shape
            .iter()
            .zip(widths)
            .map(|(d, (a, b))| d + a + b)
            .collect();
        let (st, out_st) = (strides(shape), strides(&out_shape));
        (0..out_shape.iter().product::<usize>())
            .map(|o| {
                let mut at = 0;
                for d in 0..shape.len() {
                    let j = o / out_st[d] % out_shape[d];
                    match j.checked_sub(widths[d].0).filter(|&i| i < shape[d]) {
                        Some(i) => at += i * st[d],
                        None => return -1,
                    }
                }
                src[at]
            })
            .collect()
    }

    #[test]
    fn constant_padding_places_rows_and_fills_borders() {
        let shape = [2, 3, 4, 5];
        let src: Vec<i32> = (0..120).collect();
        for widths in [
            [(0, 0), (0, 1), (0, 1), (0, 0)],
            [(1, 0), (0, 0), (2, 3), (1, 1)],
            [(0, 2), (1, 1), (0, 0), (0, 0)],
            [(0, 0); 4],
        ] {
            let out_shape: Vec<usize> = shape
                .iter()
                .zip(&widths)
                .map(|(d, (a, b))| d + a + b)
                .collect();
            assert_eq!(
                pad_constant(&src, &shape, &out_shape, &widths, &-1),
                pad_by_element(&src, &shape, &widths),
                "{widths:?}"
            );
        }
        assert_eq!(
            pad_constant(&[], &[0, 2], &[1, 3], &[(0, 1), (1, 0)], &-1),
            [-1; 3]
        );
    }
}
