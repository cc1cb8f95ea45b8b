//! TensorList ops, as Keras recurrent layers, `tf.TensorArray` and `tf.function` loops emit
//! them. Lists have value semantics: an op that "changes" a list outputs a new one sharing the
//! items (`Arc`s), so setting an item copies only the item pointers.
//!
//! Reading an item never set yields zeros of the element shape: the list's declared shape
//! merged with the reading op's `element_shape` input, and (GetItem, Stack, Gather, ConcatV2)
//! with the shapes of the items that are set; it must come out fully defined.
//!
//! [`TensorList`] has no `max_num_elements`, so EmptyTensorList's capacity is checked but not
//! kept, and PushBack cannot enforce it.
//!
//! A node whose `element_dtype` is DT_VARIANT works on a list of variant tensors instead
//! (`tf.map_fn` over a ragged tensor): Reserve, FromTensor, GetItem, SetItem and Stack hand such
//! nodes to [`super::variant_list`]; any other op given such a list fails naming it.

use std::sync::Arc;

use super::copy::{checked_count, zeros};
use super::{any_ints, variant_list, Made};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::value::TensorList;
use crate::engine::{Registry, Value};
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("EmptyTensorList", empty_list);
    r.add("TensorListReserve", reserve);
    r.add("TensorListFromTensor", from_tensor);
    r.add("TensorListSplit", split);
    r.add("TensorListLength", length);
    r.add("TensorListElementShape", element_shape);
    r.add("TensorListGetItem", get_item);
    r.add("TensorListSetItem", set_item);
    r.add("TensorListStack", stack);
    r.add("TensorListGather", gather);
    r.add("TensorListConcatV2", concat_v2);
    r.add("TensorListPushBack", push_back);
    r.add("TensorListPopBack", pop_back);
    r.add("TensorListResize", resize);
    r.add("TensorListScatterIntoExistingList", scatter_into);
}

/// A partial shape: None for an unknown rank, -1 for an unknown dimension.
pub(super) type Partial = Option<Vec<i64>>;

pub(super) fn shape_text(s: &Partial) -> String {
    match s {
        None => "<unknown>".into(),
        Some(d) => {
            let dims: Vec<String> = d
                .iter()
                .map(|&x| if x < 0 { "?".into() } else { x.to_string() })
                .collect();
            format!("[{}]", dims.join(","))
        }
    }
}

pub(super) fn known(shape: &[usize]) -> Partial {
    Some(shape.iter().map(|&d| d as i64).collect())
}

fn list_input(inputs: &[Value], i: usize) -> KResult<Arc<TensorList>> {
    match inputs.get(i) {
        Some(Value::List(l)) => Ok(l.clone()),
        Some(Value::VariantList(_)) => Err(fail(format!(
            "input {i} is a TensorList of variant tensors, which this op does not support"
        ))),
        Some(other) => Err(fail(format!(
            "input {i} must be a TensorList, got a {}",
            other.describe()
        ))),
        None => Err(fail(format!("missing input {i}"))),
    }
}

/// An element_shape input: -1 (a scalar) for an unknown rank, else dims with -1 unknown.
pub(super) fn shape_input(t: &Tensor) -> KResult<Partial> {
    let v = crate::kernels::util::int_values(t, "element_shape")?;
    match t.rank() {
        0 if v == [-1] => Ok(None),
        0 => Err(fail(
            "The only valid scalar shape tensor is the fully unknown shape specified as -1.",
        )),
        1 if v.iter().all(|&d| d >= -1) => Ok(Some(v)),
        1 => Err(fail(format!(
            "element_shape dimensions must be >= -1, got {v:?}"
        ))),
        _ => Err(fail(format!(
            "element_shape must be a scalar or vector, got shape {:?}",
            t.shape()
        ))),
    }
}

/// The most specific shape compatible with both; an error if they conflict.
pub(super) fn merge(a: &Partial, b: &Partial) -> KResult<Partial> {
    let (Some(x), Some(y)) = (a, b) else {
        return Ok(a.clone().or_else(|| b.clone()));
    };
    if x.len() != y.len() {
        return Err(fail(format!(
            "PartialTensorShape: Incompatible ranks during merge: {} vs. {}",
            x.len(),
            y.len()
        )));
    }
    x.iter()
        .zip(y)
        .map(|(&p, &q)| match (p, q) {
            (-1, q) => Ok(q),
            (p, -1) => Ok(p),
            (p, q) if p == q => Ok(p),
            _ => Err(fail(format!(
                "PartialTensorShape: Incompatible shapes during merge: {} vs. {}",
                shape_text(a),
                shape_text(b)
            ))),
        })
        .collect::<KResult<Vec<i64>>>()
        .map(Some)
}

pub(super) fn compatible(partial: &Partial, shape: &[usize]) -> bool {
    match partial {
        None => true,
        Some(p) => {
            p.len() == shape.len() && p.iter().zip(shape).all(|(&a, &d)| a < 0 || a == d as i64)
        }
    }
}

pub(super) fn fully_defined(s: &Partial) -> Option<Vec<usize>> {
    s.as_ref()?
        .iter()
        .map(|&d| usize::try_from(d).ok())
        .collect()
}

/// Refines `shape` with the shapes of the set items among `items`.
fn merge_items<'a>(
    mut shape: Partial,
    items: impl Iterator<Item = &'a Option<Arc<Tensor>>>,
) -> KResult<Partial> {
    for item in items.flatten() {
        shape = merge(&shape, &known(item.shape()))?;
    }
    Ok(shape)
}

fn check_dtype(list: &TensorList, wanted: Option<DType>) -> KResult<()> {
    match wanted {
        Some(d) if d != list.element_dtype => Err(fail(format!(
            "Invalid data types; op elements {d} but list elements {}",
            list.element_dtype
        ))),
        _ => Ok(()),
    }
}

fn check_item(list: &TensorList, item: &Tensor, complaint: &str) -> KResult<()> {
    check_dtype(list, Some(item.dtype()))?;
    if !compatible(&list.element_shape, item.shape()) {
        return Err(fail(format!(
            "{complaint} {} list shape: {}",
            shape_text(&known(item.shape())),
            shape_text(&list.element_shape)
        )));
    }
    Ok(())
}

/// A count or index input (any integer scalar or one-element tensor).
pub(super) fn count_input(t: &Tensor, what: &str) -> KResult<i64> {
    match any_ints(t, what)?.as_slice() {
        [x] => Ok(*x),
        _ => Err(fail(format!(
            "{what} must be a scalar, got shape {:?}",
            t.shape()
        ))),
    }
}

/// Reserve's `num_elements`: a non-negative scalar, and that many unset items of type `T`
/// allocatable. Both kinds of list (tensors, variants) reserve through it.
pub(super) fn reserve_count<T>(t: &Tensor) -> KResult<usize> {
    let count = count_input(t, "num_elements")?;
    let count = usize::try_from(count).map_err(|_| {
        fail(format!(
            "The num_elements to reserve must be a non negative number, but got {count}"
        ))
    })?;
    checked_count(&[count, std::mem::size_of::<Option<T>>()])?;
    Ok(count)
}

/// SetItem's index `i` as a slot: below the list's `size`, or (`resize`) any non-negative one.
pub(super) fn set_index(i: i64, size: usize, resize: bool) -> KResult<usize> {
    usize::try_from(i)
        .ok()
        .filter(|&u| u < size || resize)
        .ok_or_else(|| {
            fail(format!(
                "Trying to modify element {i} in a list with {size} elements."
            ))
        })
}

/// `item` into slot `at`, first growing `items` with unset items when `at` is past the end.
pub(super) fn set_slot<T: Clone>(items: &mut Vec<Option<T>>, at: usize, item: T) -> KResult<()> {
    if at >= items.len() {
        checked_count(&[at, 2])?;
        items.resize(at + 1, None);
    }
    if let Some(slot) = items.get_mut(at) {
        *slot = Some(item);
    }
    Ok(())
}

pub(super) fn zeros_of(shape: &[usize], dtype: DType) -> KResult<Tensor> {
    make(shape.to_vec(), zeros(dtype, checked_count(shape)?))
}

/// Items stacked along a new first axis; unset items read as zeros of `shape`.
pub(super) fn stacked(
    items: &[Option<Arc<Tensor>>],
    shape: &[usize],
    dtype: DType,
) -> KResult<Tensor> {
    let blank = if items.iter().any(Option::is_none) {
        Some(Arc::new(zeros_of(shape, dtype)?))
    } else {
        None
    };
    let mut parts: Vec<&Storage> = Vec::with_capacity(items.len());
    for item in items {
        let t = item
            .as_ref()
            .or(blank.as_ref())
            .ok_or_else(|| fail("internal: blank"))?;
        if t.shape() != shape {
            return Err(fail(format!(
                "Incompatible shapes in list: {:?} vs. {shape:?}",
                t.shape()
            )));
        }
        parts.push(t.storage());
    }
    let mut out_shape = vec![items.len()];
    out_shape.extend_from_slice(shape);
    checked_count(&out_shape)?;
    if parts.is_empty() {
        return zeros_of(&out_shape, dtype);
    }
    let mismatch = || fail(format!("list items must all be {dtype}"));
    let storage = map_storages!(&parts, vs => vs.concat(), mismatch());
    make(out_shape, storage)
}

/// Rows of `t` along its first axis as tensors.
pub(super) fn rows(t: &Tensor) -> KResult<Vec<Option<Arc<Tensor>>>> {
    let n = t.shape().first().copied().unwrap_or(0);
    let row_shape = t.shape()[1..].to_vec();
    let inner: usize = super::copy::prod(&row_shape);
    let pieces = split_storage!(t.storage(), v =>
        (0..n).map(|i| v.get(i * inner..(i + 1) * inner).unwrap_or_default().to_vec())
            .collect::<Vec<_>>());
    pieces
        .into_iter()
        .map(|s| make(row_shape.clone(), s).map(|t| Some(Arc::new(t))))
        .collect()
}

fn element_dtype(node: &NodeSpec) -> Result<Option<DType>, String> {
    if node.attrs.has("element_dtype") {
        node.attrs.dtype("element_dtype").map(Some)
    } else {
        Ok(None)
    }
}

fn list_value(list: TensorList) -> KResult {
    Ok(vec![Value::List(Arc::new(list))])
}

fn empty_list(node: &NodeSpec) -> Made {
    let dtype = node.attrs.dtype("element_dtype")?;
    Ok(boxed(move |_, inputs| {
        let shape = shape_input(&*tensor_input(inputs, 0)?)?;
        let capacity = count_input(&*tensor_input(inputs, 1)?, "max_num_elements")?;
        if capacity < -1 {
            return Err(fail(format!(
                "max_num_elements must be -1 (unlimited) or non-negative, got {capacity}"
            )));
        }
        list_value(TensorList {
            element_dtype: dtype,
            element_shape: shape,
            items: Vec::new(),
        })
    }))
}

fn reserve(node: &NodeSpec) -> Made {
    if variant_list::of_variants(node)? {
        return variant_list::reserve(node);
    }
    let dtype = node.attrs.dtype("element_dtype")?;
    Ok(boxed(move |_, inputs| {
        let shape = shape_input(&*tensor_input(inputs, 0)?)?;
        let count = reserve_count::<Arc<Tensor>>(&*tensor_input(inputs, 1)?)?;
        list_value(TensorList {
            element_dtype: dtype,
            element_shape: shape,
            items: vec![None; count],
        })
    }))
}

fn from_tensor(node: &NodeSpec) -> Made {
    if variant_list::of_variants(node)? {
        return variant_list::from_tensor(node);
    }
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        if t.rank() < 1 {
            return Err(fail(format!(
                "Tensor must be at least a vector, but saw shape: {:?}",
                t.shape()
            )));
        }
        let shape = shape_input(&*tensor_input(inputs, 1)?)?;
        if !compatible(&shape, &t.shape()[1..]) {
            return Err(fail(format!(
                "Specified a list with shape {} from a tensor with shape {:?}",
                shape_text(&shape),
                &t.shape()[1..]
            )));
        }
        list_value(TensorList {
            element_dtype: t.dtype(),
            element_shape: shape,
            items: rows(&t)?,
        })
    }))
}

/// Consecutive pieces of a tensor along its first axis, `lengths[i]` rows each; together they
/// must use every row. element_shape constrains all but the first dimension.
fn split(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        if t.rank() < 1 {
            return Err(fail(format!(
                "Tensor must be at least a vector, but saw shape: {:?}",
                t.shape()
            )));
        }
        let shape = shape_input(&*tensor_input(inputs, 1)?)?;
        let rest_ok = match &shape {
            None => true,
            Some(d) => {
                let mut want = d.clone();
                if let Some(first) = want.first_mut() {
                    *first = -1;
                }
                compatible(&Some(want), t.shape())
            }
        };
        if !rest_ok {
            return Err(fail(format!(
                "tensor shape {:?} is not compatible with element_shape {}",
                t.shape(),
                shape_text(&shape)
            )));
        }
        let lengths_t = tensor_input(inputs, 2)?;
        if lengths_t.rank() != 1 {
            return Err(fail(format!(
                "Expected lengths to be a vector, received shape: {:?}",
                lengths_t.shape()
            )));
        }
        let rows = t.shape()[0];
        let mut bounds = Vec::new();
        let mut start = 0usize;
        for n in any_ints(&lengths_t, "lengths")? {
            let len =
                usize::try_from(n).map_err(|_| fail(format!("Invalid value in lengths: {n}")))?;
            if start.saturating_add(len) > rows {
                return Err(fail(format!(
                    "Attempting to slice [{start}, {}] from tensor with length {rows}",
                    start.saturating_add(len)
                )));
            }
            bounds.push((start, len));
            start += len;
        }
        if start != rows {
            return Err(fail(format!(
                "Unused values in tensor. Length of tensor: {rows} Values used: {start}"
            )));
        }
        let storages = super::join::split_along(&t, 0, &bounds)?;
        let items = storages
            .into_iter()
            .zip(&bounds)
            .map(|(s, &(_, len))| {
                let mut dims = t.shape().to_vec();
                dims[0] = len;
                make(dims, s).map(|x| Some(Arc::new(x)))
            })
            .collect::<KResult<_>>()?;
        list_value(TensorList {
            element_dtype: t.dtype(),
            element_shape: shape,
            items,
        })
    }))
}

fn length(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let list = list_input(inputs, 0)?;
        let n = i32::try_from(list.items.len()).map_err(|_| fail("list is too long"))?;
        one(Tensor::scalar(n))
    }))
}

fn element_shape(node: &NodeSpec) -> Made {
    let dtype = super::int_dtype_attr(node, "shape_type", DType::Int32)?;
    Ok(boxed(move |_, inputs| {
        let list = list_input(inputs, 0)?;
        let t = match &list.element_shape {
            None => super::int_tensor(dtype, Vec::new(), vec![-1])?,
            Some(d) => super::int_tensor(dtype, vec![d.len()], d.clone())?,
        };
        one(t)
    }))
}

pub(super) fn index_in(t: &Tensor, size: usize, verb: &str) -> KResult<usize> {
    let i = count_input(t, "index")?;
    usize::try_from(i)
        .ok()
        .filter(|&u| u < size)
        .ok_or_else(|| {
            fail(format!(
                "Trying to {verb} element {i} in a list with {size} elements."
            ))
        })
}

fn get_item(node: &NodeSpec) -> Made {
    if variant_list::of_variants(node)? {
        return variant_list::get_item(node);
    }
    let dtype = element_dtype(node)?;
    Ok(boxed(move |_, inputs| {
        let list = list_input(inputs, 0)?;
        check_dtype(&list, dtype)?;
        let i = index_in(&*tensor_input(inputs, 1)?, list.items.len(), "access")?;
        if let Some(Some(item)) = list.items.get(i) {
            return Ok(vec![Value::Tensor(item.clone())]);
        }
        let mut shape = merge(
            &shape_input(&*tensor_input(inputs, 2)?)?,
            &list.element_shape,
        )?;
        if fully_defined(&shape).is_none() {
            shape = merge_items(shape, list.items.iter())?;
        }
        let dims = fully_defined(&shape).ok_or_else(|| {
            fail(format!(
                "Trying to read an uninitialized tensor but element_shape is not fully defined: \
                 {} and no list element is set.",
                shape_text(&shape)
            ))
        })?;
        one(zeros_of(&dims, list.element_dtype)?)
    }))
}

fn set_item(node: &NodeSpec) -> Made {
    if variant_list::of_variants(node)? {
        return variant_list::set_item(node);
    }
    let dtype = element_dtype(node)?;
    let resize = node.attrs.bool_or("resize_if_index_out_of_bounds", false)?;
    Ok(boxed(move |_, inputs| {
        let list = list_input(inputs, 0)?;
        check_dtype(&list, dtype)?;
        let i = count_input(&*tensor_input(inputs, 1)?, "index")?;
        let item = tensor_input(inputs, 2)?;
        let at = set_index(i, list.items.len(), resize)?;
        check_item(
            &list,
            &item,
            "Tried to set a tensor with incompatible shape at a list index. Item element shape:",
        )?;
        let mut new = (*list).clone();
        set_slot(&mut new.items, at, item)?;
        list_value(new)
    }))
}

fn stack(node: &NodeSpec) -> Made {
    if variant_list::of_variants(node)? {
        return variant_list::stack(node);
    }
    let dtype = element_dtype(node)?;
    let num = node.attrs.int_or("num_elements", -1)?;
    Ok(boxed(move |_, inputs| {
        let list = list_input(inputs, 0)?;
        check_dtype(&list, dtype)?;
        let n = list.items.len();
        if num != -1 && num != n as i64 {
            return Err(fail(format!(
                "Operation expected a list with {num} elements but got a list with {n} elements."
            )));
        }
        let mut shape = merge(
            &shape_input(&*tensor_input(inputs, 1)?)?,
            &list.element_shape,
        )?;
        if fully_defined(&shape).is_none() && n == 0 {
            return Err(fail(format!(
                "Tried to stack elements of an empty list with non-fully-defined element_shape: \
                 {}",
                shape_text(&shape)
            )));
        }
        if fully_defined(&list.element_shape).is_none() {
            shape = merge_items(shape, list.items.iter())?;
        }
        let dims = fully_defined(&shape).ok_or_else(|| {
            fail(format!(
                "Tried to stack list which only contains uninitialized tensors and has a \
                 non-fully-defined element_shape: {}",
                shape_text(&shape)
            ))
        })?;
        one(stacked(&list.items, &dims, list.element_dtype)?)
    }))
}

fn gather(node: &NodeSpec) -> Made {
    let dtype = element_dtype(node)?;
    Ok(boxed(move |_, inputs| {
        let list = list_input(inputs, 0)?;
        check_dtype(&list, dtype)?;
        let positions = any_ints(&*tensor_input(inputs, 1)?, "indices")?;
        let mut shape = merge(
            &shape_input(&*tensor_input(inputs, 2)?)?,
            &list.element_shape,
        )?;
        if fully_defined(&shape).is_none() && positions.is_empty() {
            return Err(fail(format!(
                "Tried to gather 0-elements from a list with non-fully-defined shape: {}",
                shape_text(&shape)
            )));
        }
        let size = list.items.len();
        let picked: Vec<Option<Arc<Tensor>>> = positions
            .iter()
            .map(|&i| {
                usize::try_from(i)
                    .ok()
                    .and_then(|u| list.items.get(u))
                    .cloned()
                    .ok_or_else(|| {
                        fail(format!(
                            "Trying to gather element {i} in a list with {size} elements."
                        ))
                    })
            })
            .collect::<KResult<_>>()?;
        if fully_defined(&list.element_shape).is_none() {
            shape = merge_items(shape, picked.iter())?;
        }
        let dims = fully_defined(&shape).ok_or_else(|| {
            fail(format!(
                "Tried to gather uninitialized tensors from a list with non-fully-defined \
                 element_shape: {}",
                shape_text(&shape)
            ))
        })?;
        one(stacked(&picked, &dims, list.element_dtype)?)
    }))
}

fn concat_v2(node: &NodeSpec) -> Made {
    let dtype = element_dtype(node)?;
    Ok(boxed(move |_, inputs| {
        let list = list_input(inputs, 0)?;
        check_dtype(&list, dtype)?;
        let shape = merge(
            &shape_input(&*tensor_input(inputs, 1)?)?,
            &list.element_shape,
        )?;
        let leading = any_ints(&*tensor_input(inputs, 2)?, "leading_dims")?;
        if shape.as_ref().is_some_and(Vec::is_empty) {
            return Err(fail(
                "Concat requires elements to be at least vectors, found scalars instead.",
            ));
        }
        let (mut first, mut rest) = match &shape {
            None => (-1, None),
            Some(d) => (d[0], Some(d[1..].to_vec())),
        };
        if list.items.is_empty() && fully_defined(&rest).is_none() {
            return Err(fail(format!(
                "All except the first dimension must be fully defined when concating an empty \
                 tensor list. element_shape: {}",
                shape_text(&shape)
            )));
        }
        if fully_defined(&list.element_shape).is_none() {
            (first, rest) = infer_concat_shape(&list.items, first, rest)?;
        }
        let rest = fully_defined(&rest).ok_or_else(|| {
            fail(format!(
                "Trying to concat list with only uninitialized tensors but \
                 element_shape_except_first_dim is not fully defined: {}",
                shape_text(&rest)
            ))
        })?;
        let lengths = concat_lengths(&list.items, first, &leading)?;
        let mut pieces = Vec::with_capacity(lengths.len());
        for (item, &n) in list.items.iter().zip(&lengths) {
            pieces.push(match item {
                Some(t) => t.clone(),
                None => {
                    let mut s = vec![n];
                    s.extend_from_slice(&rest);
                    Arc::new(zeros_of(&s, list.element_dtype)?)
                }
            });
        }
        let joined = if pieces.is_empty() {
            let mut s = vec![0];
            s.extend_from_slice(&rest);
            zeros_of(&s, list.element_dtype)?
        } else if pieces.len() == 1 {
            (*pieces[0]).clone()
        } else {
            super::join::concat(&pieces, 0)?
        };
        let lengths: Vec<i64> = lengths.iter().map(|&n| n as i64).collect();
        Ok(vec![
            Value::tensor(joined),
            Value::tensor(Tensor::from_vec(vec![lengths.len()], lengths)),
        ])
    }))
}

/// Refines the trailing dims with the set items; the first dim becomes the one all set items
/// share when element_shape leaves it unknown.
fn infer_concat_shape(
    items: &[Option<Arc<Tensor>>],
    first: i64,
    mut rest: Partial,
) -> KResult<(i64, Partial)> {
    let mut inferred = first;
    let mut agreed = first < 0;
    for (i, item) in items.iter().enumerate() {
        let Some(t) = item else { continue };
        let Some((&lead, tail)) = t.shape().split_first() else {
            return Err(fail(format!(
                "Concat saw a scalar shape at index {i} but requires at least vectors."
            )));
        };
        rest = merge(&rest, &known(tail))?;
        if first >= 0 && first != lead as i64 {
            return Err(fail(format!(
                "First entry of element_shape input does not match the first dim of list \
                 element at index: {i} Expected: {first} Actual: {lead}"
            )));
        }
        if agreed {
            if inferred < 0 {
                inferred = lead as i64;
            } else if inferred != lead as i64 {
                inferred = -1;
                agreed = false;
            }
        }
    }
    Ok((inferred, rest))
}

fn concat_lengths(
    items: &[Option<Arc<Tensor>>],
    first: i64,
    leading: &[i64],
) -> KResult<Vec<usize>> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let n = match item {
                Some(t) => return Ok(t.shape().first().copied().unwrap_or(0)),
                None if i >= leading.len() && first >= 0 => first,
                None => *leading.get(i).ok_or_else(|| {
                    fail(format!(
                        "List contains uninitialized tensor at index {i} but leading_dims has \
                         only {} elements.",
                        leading.len()
                    ))
                })?,
            };
            usize::try_from(n).map_err(|_| fail(format!("leading_dims[{i}] = {n} is negative")))
        })
        .collect()
}

fn push_back(node: &NodeSpec) -> Made {
    let dtype = element_dtype(node)?;
    Ok(boxed(move |_, inputs| {
        let list = list_input(inputs, 0)?;
        check_dtype(&list, dtype)?;
        let item = tensor_input(inputs, 1)?;
        check_item(
            &list,
            &item,
            "Tried to append a tensor with incompatible shape to a list. Op element shape:",
        )?;
        let mut new = (*list).clone();
        new.items.push(Some(item));
        list_value(new)
    }))
}

fn pop_back(node: &NodeSpec) -> Made {
    let dtype = element_dtype(node)?;
    Ok(boxed(move |_, inputs| {
        let list = list_input(inputs, 0)?;
        check_dtype(&list, dtype)?;
        let mut new = (*list).clone();
        let last = new
            .items
            .pop()
            .ok_or_else(|| fail("Trying to pop from an empty list."))?;
        let item = match last {
            Some(t) => t,
            None => {
                let shape = merge(
                    &shape_input(&*tensor_input(inputs, 1)?)?,
                    &list.element_shape,
                )?;
                let dims = fully_defined(&shape).ok_or_else(|| {
                    fail(format!(
                        "Trying to read an uninitialized tensor but element_shape is not fully \
                         defined.{}",
                        shape_text(&shape)
                    ))
                })?;
                Arc::new(zeros_of(&dims, list.element_dtype)?)
            }
        };
        Ok(vec![Value::List(Arc::new(new)), Value::Tensor(item)])
    }))
}

fn resize(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let list = list_input(inputs, 0)?;
        let n = count_input(&*tensor_input(inputs, 1)?, "size")?;
        let n = usize::try_from(n).map_err(|_| {
            fail(format!(
                "TensorListSlice expects size to be non-negative. Got: {n}"
            ))
        })?;
        checked_count(&[n, 16])?;
        let mut new = (*list).clone();
        new.items.resize(n, None);
        list_value(new)
    }))
}

fn scatter_into(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let list = list_input(inputs, 0)?;
        let t = tensor_input(inputs, 1)?;
        let indices = tensor_input(inputs, 2)?;
        if t.dtype() != list.element_dtype {
            return Err(fail(format!(
                "Invalid data types; input tensor type: {} list element_type: {}",
                t.dtype(),
                list.element_dtype
            )));
        }
        if t.rank() < 1 {
            return Err(fail(format!(
                "Tensor must be at least a vector, but saw shape: {:?}",
                t.shape()
            )));
        }
        if indices.rank() != 1 || indices.len() != t.shape()[0] {
            return Err(fail(format!(
                "Expected indices to be a vector of length tensor.shape[0] = {}, got shape {:?}",
                t.shape()[0],
                indices.shape()
            )));
        }
        if !compatible(&list.element_shape, &t.shape()[1..]) {
            return Err(fail(format!(
                "Tried to scatter elements of shape {:?} into a list with element shape {}",
                &t.shape()[1..],
                shape_text(&list.element_shape)
            )));
        }
        let positions = any_ints(&indices, "indices")?
            .into_iter()
            .map(|i| {
                usize::try_from(i)
                    .map_err(|_| fail("Indices in TensorListScatter must all be non-negative."))
            })
            .collect::<KResult<Vec<usize>>>()?;
        let mut new = (*list).clone();
        if let Some(&max) = positions.iter().max() {
            checked_count(&[max, 16])?;
            if max >= new.items.len() {
                new.items.resize(max + 1, None);
            }
        }
        for (row, at) in rows(&t)?.into_iter().zip(positions) {
            new.items[at] = row;
        }
        list_value(new)
    }))
}

#[cfg(test)]
mod tests {
    use super::super::test_util::run;
    use super::*;
    use crate::protos::attr_value::Value as A;

    fn t(x: Tensor) -> Value {
        Value::tensor(x)
    }

    fn ints(v: &[i32]) -> Value {
        t(Tensor::from_vec(vec![v.len()], v.to_vec()))
    }

    fn float_dtype() -> (&'static str, A) {
        ("element_dtype", A::Type(DType::Float32.to_proto()))
    }

    fn tensor_of(v: &Value) -> Arc<Tensor> {
        match v {
            Value::Tensor(t) => t.clone(),
            other => panic!("not a tensor: {other:?}"),
        }
    }

    /// What a Keras RNN's While loop does: unstack the input, read each step, write each
    /// step's output into a reserved list, and stack the outputs.
    #[test]
    fn a_recurrent_loop_round_trips() {
        let x = Tensor::from_vec(vec![3, 2], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let input = run("TensorListFromTensor", &[], vec![t(x), ints(&[2])]).unwrap();
        let scalar = |i: i32| t(Tensor::scalar(i));
        let reserved = run(
            "TensorListReserve",
            &[float_dtype()],
            vec![ints(&[-1]), scalar(3)],
        )
        .unwrap();
        let mut out = reserved[0].clone();
        for i in (0..3).rev() {
            let item = run(
                "TensorListGetItem",
                &[float_dtype()],
                vec![input[0].clone(), scalar(i), ints(&[2])],
            )
            .unwrap();
            out = run(
                "TensorListSetItem",
                &[float_dtype()],
                vec![out, scalar(2 - i), item[0].clone()],
            )
            .unwrap()
            .remove(0);
        }
        let stacked = run(
            "TensorListStack",
            &[float_dtype(), ("num_elements", A::I(3))],
            vec![out.clone(), ints(&[-1])],
        )
        .unwrap();
        let s = tensor_of(&stacked[0]);
        assert_eq!(s.shape(), &[3, 2]);
        assert_eq!(s.values::<f32>().unwrap(), &[5.0, 6.0, 3.0, 4.0, 1.0, 2.0]);
        let len = run("TensorListLength", &[], vec![out]).unwrap();
        assert_eq!(tensor_of(&len[0]).values::<i32>().unwrap(), &[3]);
    }

    #[test]
    fn unset_items_read_as_zeros_only_with_a_known_shape() {
        let scalar = |i: i32| t(Tensor::scalar(i));
        let list = run(
            "TensorListReserve",
            &[float_dtype()],
            vec![ints(&[-1, 2]), scalar(2)],
        )
        .unwrap();
        let unknown = run(
            "TensorListStack",
            &[float_dtype()],
            vec![list[0].clone(), ints(&[-1, 2])],
        );
        assert!(unknown.is_err());
        let zeros = run(
            "TensorListGetItem",
            &[float_dtype()],
            vec![list[0].clone(), scalar(1), ints(&[3, 2])],
        )
        .unwrap();
        assert_eq!(tensor_of(&zeros[0]).shape(), &[3, 2]);
        let out_of_range = run(
            "TensorListGetItem",
            &[float_dtype()],
            vec![list[0].clone(), scalar(2), ints(&[3, 2])],
        );
        assert!(out_of_range.is_err());
        let wrong_shape = run(
            "TensorListSetItem",
            &[float_dtype()],
            vec![
                list[0].clone(),
                scalar(0),
                t(Tensor::from_vec(vec![3], vec![0f32; 3])),
            ],
        );
        assert!(wrong_shape.is_err());
    }

    #[test]
    fn push_pop_and_concat() {
        let empty = run(
            "EmptyTensorList",
            &[float_dtype()],
            vec![ints(&[-1]), t(Tensor::scalar(-1i32))],
        )
        .unwrap();
        let a = t(Tensor::from_vec(vec![1], vec![1.0f32]));
        let b = t(Tensor::from_vec(vec![2], vec![2.0f32, 3.0]));
        let one_item = run(
            "TensorListPushBack",
            &[float_dtype()],
            vec![empty[0].clone(), a],
        )
        .unwrap();
        let two = run(
            "TensorListPushBack",
            &[float_dtype()],
            vec![one_item[0].clone(), b],
        )
        .unwrap();
        let joined = run(
            "TensorListConcatV2",
            &[float_dtype()],
            vec![
                two[0].clone(),
                ints(&[-1]),
                t(Tensor::from_vec(vec![0], Vec::<i64>::new())),
            ],
        )
        .unwrap();
        assert_eq!(
            tensor_of(&joined[0]).values::<f32>().unwrap(),
            &[1.0, 2.0, 3.0]
        );
        assert_eq!(tensor_of(&joined[1]).values::<i64>().unwrap(), &[1, 2]);
        let popped = run(
            "TensorListPopBack",
            &[float_dtype()],
            vec![two[0].clone(), ints(&[-1])],
        )
        .unwrap();
        assert_eq!(tensor_of(&popped[1]).values::<f32>().unwrap(), &[2.0, 3.0]);
        assert!(run(
            "TensorListPopBack",
            &[float_dtype()],
            vec![empty[0].clone(), ints(&[-1])]
        )
        .is_err());
    }

    #[test]
    fn split_then_concat_restores_the_tensor() {
        let x = Tensor::from_vec(vec![3, 2], (0..6).collect::<Vec<i32>>());
        let list = run(
            "TensorListSplit",
            &[],
            vec![
                t(x.clone()),
                ints(&[-1, 2]),
                t(Tensor::from_vec(vec![2], vec![1i64, 2])),
            ],
        )
        .unwrap();
        let int_dtype = ("element_dtype", A::Type(DType::Int32.to_proto()));
        let joined = run(
            "TensorListConcatV2",
            &[int_dtype],
            vec![
                list[0].clone(),
                ints(&[-1, 2]),
                t(Tensor::from_vec(vec![0], Vec::<i64>::new())),
            ],
        )
        .unwrap();
        assert_eq!(*tensor_of(&joined[0]), x);
        let short = run(
            "TensorListSplit",
            &[],
            vec![
                t(x),
                ints(&[-1, 2]),
                t(Tensor::from_vec(vec![1], vec![2i64])),
            ],
        );
        assert!(short.is_err());
    }
}
