//! TensorLists of variant tensors: what `tf.map_fn` over a ragged tensor keeps the encoded rows
//! in (RaggedTensorToVariant's output split by TensorListFromTensor, results written by
//! TensorListSetItem into a TensorListReserve'd list, stacked again by TensorListStack). The
//! TensorList kernels (super::list) hand nodes whose `element_dtype` is DT_VARIANT to these; the
//! rules are theirs, except that an unset item has no default value (there are no zeros of a
//! variant), so reading or stacking one is an error.

use std::sync::Arc;

use super::list::{
    compatible, count_input, fully_defined, index_in, merge, reserve_count, set_index, set_slot,
    shape_input, shape_text, Partial,
};
use super::Made;
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, NodeSpec};
use crate::engine::variant::{VariantList, VariantTensor};
use crate::engine::Value;
use crate::protos::DataType;

/// Whether a TensorList node's `element_dtype` is DT_VARIANT.
pub(super) fn of_variants(node: &NodeSpec) -> Result<bool, String> {
    Ok(node.attrs.has("element_dtype")
        && node.attrs.dtype_number("element_dtype")? == DataType::DtVariant as i32)
}

fn list_input(inputs: &[Value], i: usize) -> KResult<Arc<VariantList>> {
    match inputs.get(i) {
        Some(Value::VariantList(l)) => Ok(l.clone()),
        Some(Value::List(l)) => Err(fail(format!(
            "Invalid data types; op elements variant but list elements {}",
            l.element_dtype
        ))),
        Some(other) => Err(fail(format!(
            "input {i} must be a TensorList, got a {}",
            other.describe()
        ))),
        None => Err(fail(format!("missing input {i}"))),
    }
}

fn variant_input(inputs: &[Value], i: usize) -> KResult<Arc<VariantTensor>> {
    match inputs.get(i) {
        Some(Value::Variant(v)) => Ok(v.clone()),
        Some(Value::Tensor(t)) => Err(fail(format!(
            "Invalid data types; op elements {} but list elements variant",
            t.dtype()
        ))),
        Some(other) => Err(fail(format!(
            "input {i} must be a variant tensor, got a {}",
            other.describe()
        ))),
        None => Err(fail(format!("missing input {i}"))),
    }
}

fn list_value(list: VariantList) -> KResult {
    Ok(vec![Value::VariantList(Arc::new(list))])
}

pub(super) fn reserve(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let shape = shape_input(&*tensor_input(inputs, 0)?)?;
        let count = reserve_count::<Arc<VariantTensor>>(&*tensor_input(inputs, 1)?)?;
        list_value(VariantList {
            element_shape: shape,
            items: vec![None; count],
        })
    }))
}

pub(super) fn from_tensor(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let v = variant_input(inputs, 0)?;
        let rows = v.rows().ok_or_else(|| {
            fail("Tensor must be at least a vector, but saw shape: []".to_string())
        })?;
        let shape = shape_input(&*tensor_input(inputs, 1)?)?;
        let inner = &v.shape()[1..];
        if !compatible(&shape, inner) {
            return Err(fail(format!(
                "Specified a list with shape {} from a tensor with shape {inner:?}",
                shape_text(&shape)
            )));
        }
        list_value(VariantList {
            element_shape: shape,
            items: rows.into_iter().map(|r| Some(Arc::new(r))).collect(),
        })
    }))
}

pub(super) fn get_item(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let list = list_input(inputs, 0)?;
        let i = index_in(&*tensor_input(inputs, 1)?, list.items.len(), "access")?;
        merge(
            &shape_input(&*tensor_input(inputs, 2)?)?,
            &list.element_shape,
        )?;
        match list.items.get(i) {
            Some(Some(item)) => Ok(vec![Value::Variant(item.clone())]),
            _ => Err(fail(format!(
                "Trying to read element {i} of a list of variant tensors, which was never set \
                 (a variant has no default value)"
            ))),
        }
    }))
}

pub(super) fn set_item(node: &NodeSpec) -> Made {
    let resize = node.attrs.bool_or("resize_if_index_out_of_bounds", false)?;
    Ok(boxed(move |_, inputs| {
        let list = list_input(inputs, 0)?;
        let i = count_input(&*tensor_input(inputs, 1)?, "index")?;
        let item = variant_input(inputs, 2)?;
        let at = set_index(i, list.items.len(), resize)?;
        if !compatible(&list.element_shape, item.shape()) {
            return Err(fail(format!(
                "Tried to set a tensor with incompatible shape at a list index. Item element \
                 shape: {} list shape: {}",
                shape_text(&super::list::known(item.shape())),
                shape_text(&list.element_shape)
            )));
        }
        let mut new = (*list).clone();
        set_slot(&mut new.items, at, item)?;
        list_value(new)
    }))
}

pub(super) fn stack(node: &NodeSpec) -> Made {
    let num = node.attrs.int_or("num_elements", -1)?;
    Ok(boxed(move |_, inputs| {
        let list = list_input(inputs, 0)?;
        let n = list.items.len();
        if num != -1 && num != n as i64 {
            return Err(fail(format!(
                "Operation expected a list with {num} elements but got a list with {n} elements."
            )));
        }
        let mut shape: Partial = merge(
            &shape_input(&*tensor_input(inputs, 1)?)?,
            &list.element_shape,
        )?;
        let items = list
            .items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.clone().ok_or_else(|| {
                    fail(format!(
                        "Tried to stack a list of variant tensors whose element {i} was never \
                         set (a variant has no default value)"
                    ))
                })
            })
            .collect::<KResult<Vec<_>>>()?;
        for item in &items {
            shape = merge(&shape, &super::list::known(item.shape()))?;
        }
        let dims = fully_defined(&shape).ok_or_else(|| {
            fail(format!(
                "Tried to stack elements of an empty list with non-fully-defined element_shape: \
                 {}",
                shape_text(&shape)
            ))
        })?;
        let stacked = VariantTensor::stack(&items, &dims)
            .ok_or_else(|| fail("internal: list items of different shapes"))?;
        Ok(vec![Value::Variant(Arc::new(stacked))])
    }))
}
