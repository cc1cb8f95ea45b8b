//! Joining strings across elements: ReduceJoin (along axes) and UnsortedSegmentJoin (slices
//! grouped by segment id). Both gather the source offsets of each output's strings first, then
//! join each group into one string, so no per-element tensor is built.

use super::{strings, strings_tensor, Made};
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec, Registry};
use crate::kernels::util::int_values;

pub fn register(r: &mut Registry) {
    r.add("ReduceJoin", reduce_join);
    r.add("UnsortedSegmentJoin", unsorted_segment_join);
}

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut out = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        out[i] = out[i + 1] * shape[i + 1];
    }
    out
}

/// The source offsets of the elements of `shape` visited with `axes` as the dimensions, the
/// last varying fastest.
fn visit(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    let strides = strides(shape);
    let mut offsets = vec![0];
    for &axis in axes {
        let (size, stride) = (shape[axis], strides[axis]);
        offsets = offsets
            .iter()
            .flat_map(|&o| (0..size).map(move |i| o + i * stride))
            .collect();
    }
    offsets
}

/// The reduction axes, checked against the rank (negative ones count from the end) and for
/// duplicates.
fn reduction_axes(listed: &[i64], rank: usize) -> KResult<Vec<usize>> {
    let mut axes: Vec<usize> = Vec::with_capacity(listed.len());
    for &axis in listed {
        let r = rank as i64;
        if axis < -r || axis >= r {
            return Err(fail(format!(
                "Invalid reduction dimension {axis} for input with {rank} dimension(s)"
            )));
        }
        let a = axis.rem_euclid(r.max(1)) as usize;
        if axes.contains(&a) {
            return Err(fail(format!("Duplicate reduction dimension {axis}")));
        }
        axes.push(a);
    }
    Ok(axes)
}

/// Joins along the listed axes, the first listed varying fastest (TensorFlow joins
/// `[[a, b], [c, d]]` over axes [0, 1] as a, c, b, d); no axes leaves the tensor as it is.
fn reduce_join(node: &NodeSpec) -> Made {
    let keep_dims = node.attrs.bool_or("keep_dims", false)?;
    let separator = node.attrs.bytes("separator").unwrap_or_default().to_vec();
    Ok(boxed(move |_, inputs| {
        let input = tensor_input(inputs, 0)?;
        let items = strings(&input, "inputs")?;
        let listed = int_values(&*tensor_input(inputs, 1)?, "reduction_indices")?;
        let shape = input.shape();
        let reduced = reduction_axes(&listed, shape.len())?;
        let kept: Vec<usize> = (0..shape.len()).filter(|a| !reduced.contains(a)).collect();
        let rows = visit(shape, &kept);
        let reversed: Vec<usize> = reduced.iter().rev().copied().collect();
        let within = visit(shape, &reversed);
        // Offsets are in range by construction; a zero dimension leaves `rows` or `within`
        // empty (no outputs, or empty joins).
        let joined = rows
            .iter()
            .map(|&row| {
                let parts = within.iter().filter_map(|&o| items.get(row + o));
                join(parts.map(Vec::as_slice), &separator)
            })
            .collect::<Vec<_>>();
        let out_shape: Vec<usize> = (0..shape.len())
            .filter(|a| keep_dims || kept.contains(a))
            .map(|a| if reduced.contains(&a) { 1 } else { shape[a] })
            .collect();
        one(strings_tensor(out_shape, joined)?)
    }))
}

fn join<'a>(parts: impl Iterator<Item = &'a [u8]>, separator: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, part) in parts.enumerate() {
        if i > 0 {
            out.extend_from_slice(separator);
        }
        out.extend_from_slice(part);
    }
    out
}

/// The slices of `inputs` whose segment id is k joined into output k, in order. As in
/// TensorFlow, the separator goes in only once a segment's string is non-empty (joining "" and
/// "a" gives "a"), and stops at a NUL byte (it is passed on as a C string).
fn unsorted_segment_join(node: &NodeSpec) -> Made {
    let separator = node.attrs.bytes("separator").unwrap_or_default();
    let separator = separator
        .split(|&b| b == 0)
        .next()
        .unwrap_or_default()
        .to_vec();
    Ok(boxed(move |_, inputs| {
        let input = tensor_input(inputs, 0)?;
        let items = strings(&input, "inputs")?;
        let ids_tensor = tensor_input(inputs, 1)?;
        let ids = int_values(&ids_tensor, "segment_ids")?;
        let count_tensor = tensor_input(inputs, 2)?;
        if count_tensor.rank() != 0 {
            return Err(fail("Number of segments must be a scalar"));
        }
        let count = int_values(&count_tensor, "num_segments")?
            .first()
            .copied()
            .unwrap_or(0);
        let shape = input.shape();
        let id_shape = ids_tensor.shape();
        check_segment_ids(shape, id_shape, &ids, count)?;
        let width: usize = shape[id_shape.len()..].iter().product();
        let mut out = vec![Vec::new(); count as usize * width];
        for (row, &segment) in ids.iter().enumerate() {
            for column in 0..width {
                let (Some(item), Some(target)) = (
                    items.get(row * width + column),
                    out.get_mut(segment as usize * width + column),
                ) else {
                    continue;
                };
                if !target.is_empty() {
                    target.extend_from_slice(&separator);
                }
                target.extend_from_slice(item);
            }
        }
        let mut out_shape = vec![count as usize];
        out_shape.extend_from_slice(&shape[id_shape.len()..]);
        one(strings_tensor(out_shape, out)?)
    }))
}

fn check_segment_ids(shape: &[usize], id_shape: &[usize], ids: &[i64], count: i64) -> KResult<()> {
    if id_shape.is_empty() {
        return Err(fail("Segment_id cannot have rank 0"));
    }
    if id_shape.len() > shape.len() {
        return Err(fail(format!(
            "Invalid segment_id rank {} for input with {} dimension(s)",
            id_shape.len(),
            shape.len()
        )));
    }
    if id_shape != &shape[..id_shape.len()] {
        return Err(fail(format!(
            "segment_ids shape {id_shape:?} is not a prefix of the input shape {shape:?}"
        )));
    }
    if count < 0 {
        return Err(fail(format!(
            "Number of segments must be non-negative but got {count}"
        )));
    }
    if ids.iter().any(|&id| id < 0 || id >= count) {
        return Err(fail(
            "segment_ids are not allowed to exceed num_segments or to have negative values.",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_axes_in_the_order_given() {
        assert_eq!(visit(&[2, 2], &[0, 1]), [0, 1, 2, 3]);
        assert_eq!(visit(&[2, 2], &[1, 0]), [0, 2, 1, 3]);
        assert_eq!(visit(&[2, 3], &[]), [0]);
        assert_eq!(visit(&[0, 3], &[0]), Vec::<usize>::new());
    }

    #[test]
    fn checks_reduction_axes() {
        assert_eq!(reduction_axes(&[-1, 0], 2).unwrap(), [1, 0]);
        assert!(reduction_axes(&[2], 2).is_err());
        assert!(reduction_axes(&[1, -1], 2).is_err());
        assert!(reduction_axes(&[0], 0).is_err());
    }
}
