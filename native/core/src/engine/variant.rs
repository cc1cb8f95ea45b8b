//! `DT_VARIANT` values other than TensorLists of tensors: tensors of encoded ragged tensors, as
//! `RaggedTensorToVariant` makes them so that `tf.map_fn` can carry the rows of a ragged tensor
//! through a While loop, and the TensorLists that loop keeps them in.
//!
//! A variant tensor has a shape like any tensor, and one element per position, here always an
//! encoded ragged tensor ([`RaggedItem`]). Only the ops that encode, decode or carry such values
//! (RaggedTensorToVariant / FromVariant, Shape and a few TensorList ops) accept them; every other
//! op sees an input that is not a tensor, an error naming it. Items are shared (`Arc`), so
//! splitting a variant tensor into rows and stacking rows again copies no ragged data.

use std::sync::Arc;

use crate::tensor::{element_count, Tensor};

/// One encoded ragged tensor: its row splits, outermost first (int32 or int64 vectors), and its
/// flat values. No splits: a dense tensor (ragged rank 0).
#[derive(Debug)]
pub struct RaggedItem {
    pub splits: Vec<Arc<Tensor>>,
    pub values: Arc<Tensor>,
}

/// A variant tensor of encoded ragged tensors: its shape and its items in row-major order.
#[derive(Debug)]
pub struct VariantTensor {
    shape: Vec<usize>,
    items: Vec<Arc<RaggedItem>>,
}

impl VariantTensor {
    /// A variant tensor of `shape` over `items`; None if their counts differ.
    pub fn new(shape: Vec<usize>, items: Vec<Arc<RaggedItem>>) -> Option<Self> {
        (element_count(&shape) == Some(items.len())).then_some(Self { shape, items })
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn items(&self) -> &[Arc<RaggedItem>] {
        &self.items
    }

    /// The sub-tensors along the first axis (TensorListFromTensor's items); None for a scalar.
    pub fn rows(&self) -> Option<Vec<VariantTensor>> {
        let (&n, inner) = self.shape.split_first()?;
        let size = element_count(inner)?;
        Some(
            (0..n)
                .map(|i| Self {
                    shape: inner.to_vec(),
                    items: self.items[i * size..(i + 1) * size].to_vec(),
                })
                .collect(),
        )
    }

    /// `parts`, all of shape `shape`, stacked along a new first axis (TensorListStack); None
    /// if a part has another shape.
    pub fn stack(parts: &[Arc<VariantTensor>], shape: &[usize]) -> Option<Self> {
        if parts.iter().any(|p| p.shape != shape) {
            return None;
        }
        let mut full = vec![parts.len()];
        full.extend_from_slice(shape);
        let items = parts.iter().flat_map(|p| p.items.iter().cloned()).collect();
        Self::new(full, items)
    }
}

/// A TensorList whose elements are variant tensors (`element_dtype` DT_VARIANT), with value
/// semantics like [`super::value::TensorList`]; unset items are None.
#[derive(Clone, Debug)]
pub struct VariantList {
    /// -1 for an unknown dimension; None for an unknown rank.
    pub element_shape: Option<Vec<i64>>,
    pub items: Vec<Option<Arc<VariantTensor>>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(v: f32) -> Arc<RaggedItem> {
        Arc::new(RaggedItem {
            splits: Vec::new(),
            values: Arc::new(Tensor::scalar(v)),
        })
    }

    fn value(item: &RaggedItem) -> f32 {
        item.values.values::<f32>().unwrap()[0]
    }

    #[test]
    fn rows_and_stack_are_inverse() {
        let t = VariantTensor::new(vec![3, 2], (0..6).map(|i| item(i as f32)).collect()).unwrap();
        let rows: Vec<Arc<VariantTensor>> = t.rows().unwrap().into_iter().map(Arc::new).collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].shape(), &[2]);
        assert_eq!(value(&rows[1].items()[1]), 3.0);
        let back = VariantTensor::stack(&rows, &[2]).unwrap();
        assert_eq!(back.shape(), &[3, 2]);
        assert!(back
            .items()
            .iter()
            .zip(t.items())
            .all(|(a, b)| Arc::ptr_eq(a, b)));
        assert!(VariantTensor::stack(&rows, &[3]).is_none());
        let scalar = VariantTensor::new(Vec::new(), vec![item(1.0)]).unwrap();
        assert!(scalar.rows().is_none());
        assert!(VariantTensor::new(vec![2], vec![item(1.0)]).is_none());
    }
}
