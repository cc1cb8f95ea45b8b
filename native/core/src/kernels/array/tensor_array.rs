//! TensorFlow 1 TensorArrays (the TensorArrayV3 ops of `tf.TensorArray` in graph mode with
//! control flow v1, and of `dynamic_rnn`).
//!
//! Unlike a TensorList, a TensorArray is mutable state: TensorArrayV3 makes one and returns its
//! handle (a resource) and a `flow` scalar; the other ops change or read it through the handle
//! and thread the flow from one to the next, which is what orders them in the graph. So the
//! array lives in a resource, not in TensorList values, while items, shapes and stacking are
//! the TensorList kernels' (super::list). The rules are TensorFlow's: each index is written
//! once, a fixed-size array rejects indices past its size, a read of an index never written
//! gives zeros when the element shape is fully known, and with `clear_after_read` an index
//! cannot be read twice. All the ops are stateful: none may be folded or shared between runs.

use std::sync::{Arc, PoisonError};

use super::list::{
    compatible, count_input, fully_defined, known, merge, rows, shape_text, stacked, zeros_of,
    Partial,
};
use super::{any_ints, Made};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, resource_input, tensor_input, KResult, NodeSpec};
use crate::engine::value::{Resource, ResourceKind};
use crate::engine::{Registry, Value};
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add_stateful("TensorArrayV3", create);
    r.add_stateful("TensorArrayWriteV3", write);
    r.add_stateful("TensorArrayReadV3", read);
    r.add_stateful("TensorArrayGatherV3", gather);
    r.add_stateful("TensorArrayScatterV3", scatter);
    r.add_stateful("TensorArraySizeV3", size);
    r.add_stateful("TensorArrayCloseV3", close);
    r.add_stateful("TensorArrayConcatV3", concat);
    r.add_stateful("TensorArraySplitV3", split);
    r.add_stateful("TensorArrayGradV3", gradient);
}

/// One TensorArray: its items (None where never written, or cleared) and its rules.
struct TensorArray {
    items: Vec<Option<Arc<Tensor>>>,
    read: Vec<bool>,
    cleared: Vec<bool>,
    dtype: DType,
    element_shape: Partial,
    dynamic_size: bool,
    clear_after_read: bool,
    identical_element_shapes: bool,
    name: String,
    closed: bool,
    /// A gradient array: writes to an index add up, and reads past the end give zeros.
    is_grad: bool,
    /// This array's gradient arrays, by source, made on first use.
    gradients: std::collections::HashMap<String, Resource>,
}

fn flow() -> Value {
    Value::tensor(Tensor::scalar(0f32))
}

impl TensorArray {
    fn write(&mut self, index: i64, value: Arc<Tensor>) -> KResult<()> {
        let size = self.items.len();
        let at = usize::try_from(index)
            .ok()
            .filter(|&i| i < size || self.dynamic_size)
            .ok_or_else(|| {
                fail(format!(
                    "TensorArray {}: Tried to write to index {index} but array is not \
                     resizeable and size is: {size}",
                    self.name
                ))
            })?;
        let place = format!(
            "TensorArray {}: Could not write to TensorArray index {index}",
            self.name
        );
        if at >= size {
            super::copy::checked_count(&[at, 3])?;
            self.items.resize(at + 1, None);
            self.read.resize(at + 1, false);
            self.cleared.resize(at + 1, false);
        }
        if value.dtype() != self.dtype {
            return Err(fail(format!(
                "{place} because the value dtype is {} but TensorArray dtype is {}.",
                value.dtype(),
                self.dtype
            )));
        }
        if !compatible(&self.element_shape, value.shape()) {
            return Err(fail(format!(
                "{place} because the value shape is {} which is incompatible with the \
                 TensorArray's inferred element shape: {} (consider setting infer_shape=False).",
                shape_text(&known(value.shape())),
                shape_text(&self.element_shape)
            )));
        }
        if self.identical_element_shapes && fully_defined(&self.element_shape).is_none() {
            self.element_shape = known(value.shape());
        }
        if self.read[at] {
            return Err(fail(format!("{place} because it has already been read.")));
        }
        let value = match &self.items[at] {
            None => value,
            Some(_) if !self.is_grad => {
                return Err(fail(format!(
                    "{place} because it has already been written to."
                )))
            }
            Some(existing) => Arc::new(aggregate(existing, &value, index, &self.name)?),
        };
        self.items[at] = Some(value);
        Ok(())
    }

    fn get(&mut self, index: i64) -> KResult<Arc<Tensor>> {
        let size = self.items.len();
        let at = usize::try_from(index)
            .ok()
            .filter(|&i| i < size || self.is_grad)
            .ok_or_else(|| {
                fail(format!(
                    "Tried to read from index {index} but array size is: {size}"
                ))
            })?;
        if at >= size {
            return self.zeros(index);
        }
        if self.cleared[at] {
            return Err(fail(format!(
                "TensorArray {}: Could not read index {index} twice because it was cleared \
                 after a previous read (perhaps try setting clear_after_read = false?).",
                self.name
            )));
        }
        let Some(value) = self.items[at].clone() else {
            return self.zeros(index);
        };
        if self.clear_after_read {
            self.items[at] = None;
            self.cleared[at] = true;
        }
        self.read[at] = true;
        Ok(value)
    }

    /// What reading an index never written gives: zeros, if the element shape is known.
    fn zeros(&self, index: i64) -> KResult<Arc<Tensor>> {
        let dims = fully_defined(&self.element_shape).ok_or_else(|| {
            fail(format!(
                "TensorArray {}: Could not read from TensorArray index {index}.  Furthermore, \
                 the element shape is not fully defined: {}.  It is possible you are working \
                 with a resizeable TensorArray and stop_gradients is not allowing the gradients \
                 to be written.  If you set the full element_shape property on the forward \
                 TensorArray, the proper all-zeros tensor will be returned instead of incurring \
                 this error.",
                self.name,
                shape_text(&self.element_shape)
            ))
        })?;
        Ok(Arc::new(zeros_of(&dims, self.dtype)?))
    }

    fn check_dtype(&self, wanted: Option<DType>, op: &str) -> KResult<()> {
        match wanted {
            Some(d) if d != self.dtype => Err(fail(format!(
                "{op}: TensorArray dtype is {} but Op requested dtype {d}.",
                self.dtype
            ))),
            _ => Ok(()),
        }
    }
}

/// Runs `f` on the TensorArray input 0's handle points at.
fn with_array<R>(
    inputs: &[Value],
    op: &str,
    f: impl FnOnce(&mut TensorArray) -> KResult<R>,
) -> KResult<R> {
    let handle = resource_input(inputs, 0)?;
    let ResourceKind::Other(state) = &handle.0.kind else {
        return Err(fail(format!(
            "{op}: the handle must be a TensorArray, got variable {}",
            handle.name()
        )));
    };
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    let array = state.downcast_mut::<TensorArray>().ok_or_else(|| {
        fail(format!(
            "{op}: the handle {} is not a TensorArray",
            handle.name()
        ))
    })?;
    if array.closed {
        return Err(fail(format!(
            "{op}: TensorArray {} has already been closed.",
            array.name
        )));
    }
    f(array)
}

fn dtype_attr(node: &NodeSpec) -> Result<Option<DType>, String> {
    if node.attrs.has("dtype") {
        node.attrs.dtype("dtype").map(Some)
    } else {
        Ok(None)
    }
}

fn element_shape_attr(node: &NodeSpec, name: &str) -> Result<Partial, String> {
    if node.attrs.has(name) {
        node.attrs.partial_shape(name)
    } else {
        Ok(None)
    }
}

fn create(node: &NodeSpec) -> Made {
    let dtype = node.attrs.dtype("dtype")?;
    let element_shape = element_shape_attr(node, "element_shape")?;
    let dynamic_size = node.attrs.bool_or("dynamic_size", false)?;
    let clear_after_read = node.attrs.bool_or("clear_after_read", true)?;
    let identical = node.attrs.bool_or("identical_element_shapes", false)?;
    let name = node.attrs.string_or("tensor_array_name", "")?;
    let name = if name.is_empty() {
        node.name.to_string()
    } else {
        name.to_string()
    };
    Ok(boxed(move |_, inputs| {
        let count = count_input(&*tensor_input(inputs, 0)?, "TensorArrayV3: size")?;
        let size = usize::try_from(count)
            .map_err(|_| fail(format!("TensorArrayV3: Size should be >= 0, got {count}")))?;
        super::copy::checked_count(&[size, 3])?;
        let array = TensorArray {
            items: vec![None; size],
            read: vec![false; size],
            cleared: vec![false; size],
            dtype,
            element_shape: element_shape.clone(),
            dynamic_size,
            clear_after_read,
            identical_element_shapes: identical,
            name: name.clone(),
            closed: false,
            is_grad: false,
            gradients: Default::default(),
        };
        Ok(vec![
            Value::Resource(Resource::other(name.clone(), Box::new(array))),
            flow(),
        ])
    }))
}

fn write(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let index = count_input(&*tensor_input(inputs, 1)?, "TensorArrayWriteV3: index")?;
        let value = tensor_input(inputs, 2)?;
        with_array(inputs, "TensorArrayWriteV3", |a| a.write(index, value))?;
        Ok(vec![flow()])
    }))
}

fn read(node: &NodeSpec) -> Made {
    let dtype = dtype_attr(node)?;
    Ok(boxed(move |_, inputs| {
        let index = count_input(&*tensor_input(inputs, 1)?, "TensorArrayReadV3: index")?;
        let value = with_array(inputs, "TensorArrayReadV3", |a| {
            a.check_dtype(dtype, "TensorArrayReadV3")?;
            a.get(index)
        })?;
        Ok(vec![Value::Tensor(value)])
    }))
}

fn indices_input(inputs: &[Value], op: &str) -> KResult<Vec<i64>> {
    let t = tensor_input(inputs, 1)?;
    if t.rank() != 1 {
        return Err(fail(format!(
            "{op}: Expected indices to be a vector, but received shape: {}",
            shape_text(&known(t.shape()))
        )));
    }
    any_ints(&t, "indices")
}

fn gather(node: &NodeSpec) -> Made {
    let dtype = dtype_attr(node)?;
    let element_shape = element_shape_attr(node, "element_shape")?;
    Ok(boxed(move |_, inputs| {
        let wanted = indices_input(inputs, "TensorArrayGatherV3")?;
        let stackedv = with_array(inputs, "TensorArrayGatherV3", |a| {
            a.check_dtype(dtype, "TensorArrayGatherV3")?;
            if wanted.is_empty() {
                let shape = merge(&element_shape, &a.element_shape)?;
                let dims = fully_defined(&shape).ok_or_else(|| {
                    fail(format!(
                        "TensorArrayGatherV3: TensorArray has size zero, but element shape {} \
                         is not fully defined. Currently only static shapes are supported when \
                         packing zero-size TensorArrays.",
                        shape_text(&shape)
                    ))
                })?;
                let mut out = vec![0];
                out.extend(dims);
                return zeros_of(&out, a.dtype);
            }
            let values = wanted
                .iter()
                .map(|&i| a.get(i).map(Some))
                .collect::<KResult<Vec<_>>>()?;
            let first: Vec<usize> = values
                .first()
                .and_then(|v| v.as_ref())
                .map(|t| t.shape().to_vec())
                .unwrap_or_default();
            for (index, value) in values.iter().enumerate() {
                if let Some(v) = value {
                    if v.shape() != first.as_slice() {
                        return Err(fail(format!(
                            "TensorArrayGatherV3: TensorArray has inconsistent shapes.  Index 0 \
                             has shape: {} but index {index} has shape: {}",
                            shape_text(&known(&first)),
                            shape_text(&known(v.shape()))
                        )));
                    }
                }
            }
            stacked(&values, &first, a.dtype)
        })?;
        Ok(vec![Value::tensor(stackedv)])
    }))
}

fn scatter(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let wanted = indices_input(inputs, "TensorArrayScatterV3")?;
        let value = tensor_input(inputs, 2)?;
        let rows_count = value.shape().first().copied();
        if value.rank() < 1 || rows_count != Some(wanted.len()) {
            return Err(fail(format!(
                "TensorArrayScatterV3: Expected len(indices) == values.shape[0], but saw: {} \
                 vs. {}",
                wanted.len(),
                rows_count.unwrap_or(0)
            )));
        }
        let pieces = rows(&value)?;
        with_array(inputs, "TensorArrayScatterV3", |a| {
            for (index, piece) in wanted.iter().zip(pieces) {
                let piece = piece.ok_or_else(|| fail("TensorArrayScatterV3: missing row"))?;
                a.write(*index, piece)?;
            }
            Ok(())
        })?;
        Ok(vec![flow()])
    }))
}

fn size(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let n = with_array(inputs, "TensorArraySizeV3", |a| Ok(a.items.len()))?;
        let n = i32::try_from(n).map_err(|_| fail("TensorArraySizeV3: size exceeds int32"))?;
        Ok(vec![Value::tensor(Tensor::scalar(n))])
    }))
}

fn close(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        with_array(inputs, "TensorArrayCloseV3", |a| {
            a.closed = true;
            Ok(())
        })?;
        Ok(Vec::new())
    }))
}

fn concat(node: &NodeSpec) -> Made {
    let dtype = dtype_attr(node)?;
    let except0 = element_shape_attr(node, "element_shape_except0")?;
    Ok(boxed(move |_, inputs| {
        let (value, lengths) = with_array(inputs, "TensorArrayConcatV3", |a| {
            a.check_dtype(dtype, "TensorArrayConcatV3")?;
            if a.items.is_empty() {
                let dims = fully_defined(&except0).ok_or_else(|| {
                    fail(format!(
                        "TensorArrayConcatV3: TensorArray has size zero, but \
                         element_shape_except0 {} is not fully defined. Currently only static \
                         shapes are supported when concatenating zero-size TensorArrays.",
                        shape_text(&except0)
                    ))
                })?;
                let mut shape = vec![0];
                shape.extend(dims);
                return Ok((zeros_of(&shape, a.dtype)?, Vec::new()));
            }
            let values = (0..a.items.len())
                .map(|i| a.get(i as i64))
                .collect::<KResult<Vec<_>>>()?;
            concatenated(&values, a.dtype)
        })?;
        let count = lengths.len();
        Ok(vec![
            Value::tensor(value),
            Value::tensor(Tensor::from_vec(vec![count], lengths)),
        ])
    }))
}

/// `values` joined along their first axis, and each one's length along it.
fn concatenated(values: &[Arc<Tensor>], dtype: DType) -> KResult<(Tensor, Vec<i64>)> {
    let first = values
        .first()
        .ok_or_else(|| fail("TensorArrayConcatV3: nothing to concatenate"))?;
    let mut lengths = Vec::with_capacity(values.len());
    for (index, value) in values.iter().enumerate() {
        let Some((&rows, rest)) = value.shape().split_first() else {
            return Err(fail(format!(
                "TensorArrayConcatV3: Concat saw a scalar shape at index {index} but requires \
                 at least vectors."
            )));
        };
        if rest != &first.shape()[1..] {
            return Err(fail(format!(
                "TensorArrayConcatV3: Concat saw inconsistent shapes at index {index}: index 0 \
                 has shape {} but index {index} has shape {}",
                shape_text(&known(first.shape())),
                shape_text(&known(value.shape()))
            )));
        }
        lengths.push(rows as i64);
    }
    let mut shape = first.shape().to_vec();
    shape[0] = lengths.iter().map(|&n| n as usize).sum();
    super::copy::checked_count(&shape)?;
    let parts: Vec<&crate::tensor::Storage> = values.iter().map(|v| v.storage()).collect();
    let mismatch = || fail(format!("TensorArrayConcatV3: items must all be {dtype}"));
    let storage = map_storages!(&parts, vs => vs.concat(), mismatch());
    Ok((crate::kernels::util::make(shape, storage)?, lengths))
}

fn split(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let value = tensor_input(inputs, 1)?;
        let sizes_t = tensor_input(inputs, 2)?;
        if sizes_t.rank() != 1 {
            return Err(fail(format!(
                "TensorArraySplitV3: Expected lengths to be a vector, received shape: {}",
                shape_text(&known(sizes_t.shape()))
            )));
        }
        let Some((&rows, rest)) = value.shape().split_first() else {
            return Err(fail(format!(
                "TensorArraySplitV3: Expected value to be at least a vector, but received \
                 shape: {}",
                shape_text(&known(value.shape()))
            )));
        };
        let sizes = any_ints(&sizes_t, "lengths")?;
        let total: i64 = sizes.iter().sum();
        if sizes.iter().any(|&n| n < 0) || total != rows as i64 {
            return Err(fail(format!(
                "TensorArraySplitV3: Expected sum of lengths to be equal to values.shape[0], \
                 but sum of lengths is: {total} and value's shape is: {}",
                shape_text(&known(value.shape()))
            )));
        }
        let inner = super::copy::prod(rest);
        let mut pieces = Vec::with_capacity(sizes.len());
        let mut start = 0usize;
        for &n in &sizes {
            let n = n as usize;
            let (from, to) = (start * inner, (start + n) * inner);
            let storage =
                map_storage!(value.storage(), v => v.get(from..to).unwrap_or_default().to_vec());
            let mut shape = vec![n];
            shape.extend_from_slice(rest);
            pieces.push(Arc::new(crate::kernels::util::make(shape, storage)?));
            start += n;
        }
        with_array(inputs, "TensorArraySplitV3", |a| {
            if !a.dynamic_size && sizes.len() != a.items.len() {
                return Err(fail(format!(
                    "TensorArraySplitV3: TensorArray's size is not equal to the size of lengths \
                     ({} vs. {}), and the TensorArray is not marked as dynamically resizeable",
                    a.items.len(),
                    sizes.len()
                )));
            }
            for (index, piece) in pieces.into_iter().enumerate() {
                a.write(index as i64, piece)?;
            }
            Ok(())
        })?;
        Ok(vec![flow()])
    }))
}

/// The gradient array of input 0's array for `source`, made on first use: same size, dtype and
/// element shape, and later writes to an index add to it.
fn gradient(node: &NodeSpec) -> Made {
    let source = node.attrs.string("source")?.to_string();
    Ok(boxed(move |_, inputs| {
        let handle = with_array(inputs, "TensorArrayGradV3", |a| {
            if let Some(found) = a.gradients.get(&source) {
                return Ok(found.clone());
            }
            let size = a.items.len();
            let name = format!("{}@{source}", a.name);
            let grad = TensorArray {
                items: vec![None; size],
                read: vec![false; size],
                cleared: vec![false; size],
                dtype: a.dtype,
                element_shape: a.element_shape.clone(),
                dynamic_size: false,
                clear_after_read: true,
                identical_element_shapes: false,
                name: name.clone(),
                closed: false,
                is_grad: true,
                gradients: Default::default(),
            };
            let made = Resource::other(name, Box::new(grad));
            a.gradients.insert(source.clone(), made.clone());
            Ok(made)
        })?;
        Ok(vec![Value::Resource(handle), flow()])
    }))
}

/// `a + b`, as a gradient array adds a second write to an index.
fn aggregate(a: &Tensor, b: &Tensor, index: i64, name: &str) -> KResult<Tensor> {
    if a.shape() != b.shape() {
        return Err(fail(format!(
            "TensorArray {name}: Could not aggregate to TensorArray index {index} because the \
             existing shape is {} but the new input shape is {}.",
            shape_text(&known(a.shape())),
            shape_text(&known(b.shape()))
        )));
    }
    use crate::tensor::Storage as S;
    fn sum<T: Copy + std::ops::Add<Output = T>>(x: &[T], y: &[T]) -> Vec<T> {
        x.iter().zip(y).map(|(&p, &q)| p + q).collect()
    }
    let storage = match (a.storage(), b.storage()) {
        (S::Float32(x), S::Float32(y)) => S::Float32(sum(x, y)),
        (S::Float64(x), S::Float64(y)) => S::Float64(sum(x, y)),
        (S::Int32(x), S::Int32(y)) => {
            S::Int32(x.iter().zip(y).map(|(&p, &q)| p.wrapping_add(q)).collect())
        }
        (S::Int64(x), S::Int64(y)) => {
            S::Int64(x.iter().zip(y).map(|(&p, &q)| p.wrapping_add(q)).collect())
        }
        _ => {
            return Err(fail(format!(
                "TensorArray {name}: adding {} values at index {index} is not supported",
                a.dtype()
            )))
        }
    };
    crate::kernels::util::make(a.shape().to_vec(), storage)
}
