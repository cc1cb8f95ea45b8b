//! Ragged tensors encoded as variant tensors and decoded again: RaggedTensorToVariant and
//! RaggedTensorFromVariant, with which `tf.map_fn` carries the rows of a ragged tensor through
//! a While loop (in TensorLists of variants, super::variant_list) and joins the rows it made.
//!
//! A ragged tensor is nested row splits, outermost first, over flat values. Encoding it whole
//! gives a scalar variant; encoding it batched gives a vector with one item per row, each a
//! ragged tensor of one ragged dimension less (its splits rebased to start at 0). Decoding a
//! variant tensor of rank k whose items have ragged rank r gives one ragged tensor of ragged
//! rank k + r: k - 1 uniform outer splits for the variant's own dimensions, then the items'
//! rows, then their splits, all over the items' values joined along their first axis.

use std::sync::Arc;

use super::copy::checked_count;
use super::join::{concat, split_along};
use super::list::zeros_of;
use super::{int_dtype_attr, int_tensor, Made};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, NodeSpec};
use crate::engine::variant::{RaggedItem, VariantTensor};
use crate::engine::{Registry, Value};
use crate::kernels::util::{int_values, make};
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("RaggedTensorToVariant", to_variant);
    r.add("RaggedTensorFromVariant", from_variant);
}

fn to_variant(node: &NodeSpec) -> Made {
    let ragged_rank = node.attrs.int("RAGGED_RANK")?;
    let ragged_rank = usize::try_from(ragged_rank)
        .map_err(|_| format!("attr RAGGED_RANK must be non-negative, got {ragged_rank}"))?;
    let batched = node.attrs.bool("batched_input")?;
    Ok(boxed(move |_, inputs| {
        if inputs.len() != ragged_rank + 1 {
            return Err(fail(format!(
                "{} row splits for RAGGED_RANK {ragged_rank}",
                inputs.len().saturating_sub(1)
            )));
        }
        let splits = (0..ragged_rank)
            .map(|i| tensor_input(inputs, i))
            .collect::<KResult<Vec<_>>>()?;
        let values = tensor_input(inputs, ragged_rank)?;
        let nested = checked_splits(&splits, &values)?;
        let encoded = if !batched {
            variant(Vec::new(), vec![Arc::new(RaggedItem { splits, values })])?
        } else if ragged_rank == 0 {
            dense_rows(&values)?
        } else {
            ragged_rows(&nested, &splits, &values)?
        };
        Ok(vec![Value::Variant(Arc::new(encoded))])
    }))
}

/// The row splits as integers, after TensorFlow's checks: each is a non-empty vector that
/// starts at 0, never decreases, and ends at the length of the level inside it (the next
/// splits' rows, or the values).
fn checked_splits(splits: &[Arc<Tensor>], values: &Tensor) -> KResult<Vec<Vec<i64>>> {
    if !splits.is_empty() && values.rank() == 0 {
        return Err(fail(
            "Requires flat_values to have rank>=1 when nested_row_splits is not empty, but is 0.",
        ));
    }
    let mut nested = Vec::with_capacity(splits.len());
    for (level, t) in splits.iter().enumerate() {
        if t.rank() != 1 {
            return Err(fail(format!(
                "Invalid ragged splits: ragged splits must be rank 1 but is rank {}",
                t.rank()
            )));
        }
        let s = int_values(t, "row splits")?;
        let (Some(&first), Some(&last)) = (s.first(), s.last()) else {
            return Err(fail(
                "Invalid ragged splits: ragged splits must have at least one splits, but is empty",
            ));
        };
        if first != 0 {
            // (sic: TensorFlow's message has the two spaces)
            return Err(fail(format!(
                "Invalid ragged splits: first element of ragged splits  must be 0 but is {first}"
            )));
        }
        if let Some(i) = (1..s.len()).find(|&i| s[i] < s[i - 1]) {
            return Err(fail(format!(
                "Invalid ragged splits: ragged splits must be monotonically increasing, but \
                 ragged_splits[{i}]={} is smaller than row_splits[{}]={}",
                s[i],
                i - 1,
                s[i - 1]
            )));
        }
        let inner = match splits.get(level + 1) {
            Some(next) => next.len().saturating_sub(1),
            None => values.shape().first().copied().unwrap_or(0),
        };
        if last != inner as i64 {
            return Err(fail(format!(
                "Invalid ragged splits: last element of ragged splits must be the number of \
                 ragged values({inner}) but is {last}"
            )));
        }
        nested.push(s);
    }
    Ok(nested)
}

/// Each row of a dense tensor (ragged rank 0) as an item of a variant vector.
fn dense_rows(values: &Tensor) -> KResult<VariantTensor> {
    if values.rank() == 0 {
        return Err(fail("Can't unbatch rank-0 tensor."));
    }
    let items = super::list::rows(values)?
        .into_iter()
        .flatten()
        .map(|values| {
            Arc::new(RaggedItem {
                splits: Vec::new(),
                values,
            })
        })
        .collect::<Vec<_>>();
    variant(vec![items.len()], items)
}

/// Each row of a ragged tensor (ragged rank >= 1) as an item of a variant vector: its inner
/// splits rebased to start at 0, and its slice of the values.
fn ragged_rows(
    nested: &[Vec<i64>],
    splits: &[Arc<Tensor>],
    values: &Tensor,
) -> KResult<VariantTensor> {
    let outer = nested.first().ok_or_else(|| fail("internal: no splits"))?;
    let rows = outer.len().saturating_sub(1);
    let mut inner: Vec<Vec<Arc<Tensor>>> = Vec::with_capacity(rows);
    let mut bounds = Vec::with_capacity(rows);
    for pair in outer.windows(2) {
        let (mut begin, mut end) = (index(pair[0])?, index(pair[1])?);
        let mut own = Vec::with_capacity(nested.len() - 1);
        for (level, t) in nested.iter().zip(splits).skip(1) {
            let part = level
                .get(begin..=end)
                .ok_or_else(|| fail("internal: row splits out of range"))?;
            let (&first, &last) = part
                .first()
                .zip(part.last())
                .ok_or_else(|| fail("internal: empty row splits"))?;
            let rebased = part.iter().map(|&x| x - first).collect();
            own.push(Arc::new(int_tensor(t.dtype(), vec![part.len()], rebased)?));
            (begin, end) = (index(first)?, index(last)?);
        }
        inner.push(own);
        bounds.push((begin, end - begin));
    }
    let pieces = split_along(values, 0, &bounds)?;
    let items = inner
        .into_iter()
        .zip(pieces)
        .zip(&bounds)
        .map(|((splits, storage), &(_, len))| {
            let mut shape = values.shape().to_vec();
            if let Some(first) = shape.first_mut() {
                *first = len;
            }
            let values = Arc::new(make(shape, storage)?);
            Ok(Arc::new(RaggedItem { splits, values }))
        })
        .collect::<KResult<Vec<_>>>()?;
    variant(vec![rows], items)
}

fn index(x: i64) -> KResult<usize> {
    usize::try_from(x).map_err(|_| fail(format!("internal: negative row split {x}")))
}

fn variant(shape: Vec<usize>, items: Vec<Arc<RaggedItem>>) -> KResult<VariantTensor> {
    VariantTensor::new(shape, items).ok_or_else(|| fail("internal: variant items miscounted"))
}

fn from_variant(node: &NodeSpec) -> Made {
    let input_rank = node.attrs.int("input_ragged_rank")?;
    let output_rank = node.attrs.int("output_ragged_rank")?;
    if input_rank < -1 || output_rank < 0 {
        return Err(format!(
            "input_ragged_rank ({input_rank}) must be >= -1 and output_ragged_rank \
             ({output_rank}) >= 0"
        ));
    }
    let values_dtype = node.attrs.dtype("Tvalues")?;
    let splits_dtype = int_dtype_attr(node, "Tsplits", DType::Int64)?;
    Ok(boxed(move |_, inputs| {
        let encoded = match inputs.first() {
            Some(Value::Variant(v)) => v.clone(),
            Some(other) => {
                return Err(fail(format!(
                    "the input is not a variant tensor of encoded ragged tensors but a {}",
                    other.describe()
                )))
            }
            None => return Err(fail("missing input 0")),
        };
        let outer_rank = encoded.shape().len() as i64;
        let inner_rank = if input_rank == -1 {
            output_rank - outer_rank
        } else {
            input_rank
        };
        if inner_rank < 0 || inner_rank + outer_rank != output_rank {
            return Err(fail(format!(
                "output_ragged_rank must be equal to input_ragged_rank + encoded_ragged.dims(); \
                 output_ragged_rank: {output_rank}, input_ragged_rank: {inner_rank}, \
                 encoded_variant.dims(): {outer_rank}."
            )));
        }
        let decoded = Decoded {
            values_dtype,
            splits_dtype,
            inner_rank: inner_rank as usize,
        };
        decoded.check(encoded.items())?;
        let (splits, values) = if encoded.shape().is_empty() {
            decoded.scalar(encoded.items())?
        } else {
            decoded.stacked(&encoded)?
        };
        let mut out: Vec<Value> = splits.into_iter().map(Value::Tensor).collect();
        out.push(Value::Tensor(values));
        Ok(out)
    }))
}

/// What RaggedTensorFromVariant decodes: items of `inner_rank` splits over `values_dtype`
/// values, into splits of `splits_dtype`.
struct Decoded {
    values_dtype: DType,
    splits_dtype: DType,
    inner_rank: usize,
}

impl Decoded {
    /// TensorFlow's checks of each item: its ragged rank, values dtype and splits dtype.
    fn check(&self, items: &[Arc<RaggedItem>]) -> KResult<()> {
        for item in items {
            if item.splits.len() != self.inner_rank {
                return Err(fail(format!(
                    "Encoded input RaggedTensorVariant has ragged_rank={}.  Expected \
                     ragged_rank={}.",
                    item.splits.len(),
                    self.inner_rank
                )));
            }
            if item.values.dtype() != self.values_dtype {
                return Err(fail(format!(
                    "Expected values Tensor dtype: {}, found: {}",
                    self.values_dtype,
                    item.values.dtype()
                )));
            }
            if let Some(s) = item.splits.iter().find(|s| s.dtype() != self.splits_dtype) {
                return Err(fail(format!(
                    "Expected row_splits Tensor dtype: {}, found: {}",
                    self.splits_dtype,
                    s.dtype()
                )));
            }
        }
        Ok(())
    }

    /// A scalar variant: its one item as it is (splits in the output's dtype).
    fn scalar(&self, items: &[Arc<RaggedItem>]) -> KResult<(Vec<Arc<Tensor>>, Arc<Tensor>)> {
        let item = items.first().ok_or_else(|| fail("internal: no item"))?;
        Ok((item.splits.clone(), item.values.clone()))
    }

    /// A variant tensor of rank >= 1: uniform splits for its dimensions but the last, its
    /// items' rows, their splits shifted to follow one another, and their values joined.
    fn stacked(&self, encoded: &VariantTensor) -> KResult<(Vec<Arc<Tensor>>, Arc<Tensor>)> {
        let shape = encoded.shape();
        let items = encoded.items();
        let mut splits = Vec::with_capacity(shape.len() + self.inner_rank);
        for d in 1..shape.len() {
            let rows = checked_count(&shape[..d])?;
            let width = shape[d] as i64;
            splits.push((0..=rows as i64).map(|k| k.saturating_mul(width)).collect());
        }
        let rows = items
            .iter()
            .enumerate()
            .map(|(i, item)| match item.splits.first() {
                Some(s) => Ok(s.len().saturating_sub(1)),
                None => item.values.shape().first().copied().ok_or_else(|| {
                    fail(format!(
                        "Ragged values must have rank >= 1; encoded scalar element at index {i} \
                         has values Tensor of shape []"
                    ))
                }),
            })
            .collect::<KResult<Vec<usize>>>()?;
        splits.push(running(rows.iter().map(|&n| n as i64)));
        for level in 0..self.inner_rank {
            splits.push(self.joined_level(items, level)?);
        }
        let splits = splits
            .into_iter()
            .map(|s| Ok(Arc::new(int_tensor(self.splits_dtype, vec![s.len()], s)?)))
            .collect::<KResult<_>>()?;
        Ok((splits, joined_values(items, self.values_dtype)?))
    }

    /// Splits `level` of every item, each shifted by the values of the items before it.
    fn joined_level(&self, items: &[Arc<RaggedItem>], level: usize) -> KResult<Vec<i64>> {
        let mut out = vec![0i64];
        let mut offset = 0i64;
        for item in items {
            let s = item
                .splits
                .get(level)
                .ok_or_else(|| fail("internal: missing splits"))?;
            let s = int_values(s, "row splits")?;
            out.extend(s.iter().skip(1).map(|&x| x + offset));
            offset += s.last().copied().unwrap_or(0);
        }
        Ok(out)
    }
}

/// The items' values joined along their first axis (values of shape [0] when there are none);
/// all must have the first item's inner shape.
fn joined_values(items: &[Arc<RaggedItem>], dtype: DType) -> KResult<Arc<Tensor>> {
    let Some(first) = items.first() else {
        return Ok(Arc::new(zeros_of(&[0], dtype)?));
    };
    let inner = first.values.shape().get(1..).unwrap_or_default();
    for (i, item) in items.iter().enumerate().skip(1) {
        let other = item.values.shape().get(1..).unwrap_or_default();
        if other != inner {
            return Err(fail(format!(
                "All flat_values must have compatible shapes.  Shape at index 0: {inner:?}.  \
                 Shape at index {i}: {other:?}.  If you are using tf.map_fn, then you may need \
                 to specify an explicit fn_output_signature with appropriate ragged_rank, \
                 and/or convert output tensors to RaggedTensors."
            )));
        }
    }
    if items.len() == 1 {
        return Ok(first.values.clone());
    }
    let parts: Vec<Arc<Tensor>> = items.iter().map(|i| i.values.clone()).collect();
    Ok(Arc::new(concat(&parts, 0)?))
}

/// 0 followed by the running sums of `counts`.
fn running(counts: impl Iterator<Item = i64>) -> Vec<i64> {
    let mut out = vec![0i64];
    let mut total = 0;
    for n in counts {
        total += n;
        out.push(total);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_util::run;
    use super::*;
    use crate::protos::attr_value::Value as A;
    use crate::protos::DataType;

    fn t(x: Tensor) -> Value {
        Value::tensor(x)
    }

    fn i64s(v: &[i64]) -> Value {
        t(Tensor::from_vec(vec![v.len()], v.to_vec()))
    }

    fn floats(v: &[f32]) -> Value {
        t(Tensor::from_vec(vec![v.len()], v.to_vec()))
    }

    fn scalar(i: i32) -> Value {
        t(Tensor::scalar(i))
    }

    fn no_shape() -> Value {
        t(Tensor::from_vec(vec![0], Vec::<i32>::new()))
    }

    fn variant_dtype() -> (&'static str, A) {
        ("element_dtype", A::Type(DataType::DtVariant as i32))
    }

    fn encode(ragged_rank: i64, batched: bool, inputs: Vec<Value>) -> KResult<Value> {
        let attrs = [
            ("RAGGED_RANK", A::I(ragged_rank)),
            ("batched_input", A::B(batched)),
            ("Tvalues", A::Type(DType::Float32.to_proto())),
        ];
        Ok(run("RaggedTensorToVariant", &attrs, inputs)?.remove(0))
    }

    fn decode(input: i64, output: i64, encoded: Value) -> KResult<Vec<Value>> {
        let attrs = [
            ("input_ragged_rank", A::I(input)),
            ("output_ragged_rank", A::I(output)),
            ("Tvalues", A::Type(DType::Float32.to_proto())),
        ];
        run("RaggedTensorFromVariant", &attrs, vec![encoded])
    }

    fn ints_of(v: &Value) -> Vec<i64> {
        match v {
            Value::Tensor(x) => int_values(x, "test").unwrap(),
            other => panic!("not a tensor: {other:?}"),
        }
    }

    fn floats_of(v: &Value) -> (Vec<usize>, Vec<f32>) {
        match v {
            Value::Tensor(x) => (x.shape().to_vec(), x.values::<f32>().unwrap().to_vec()),
            other => panic!("not a tensor: {other:?}"),
        }
    }

    fn shape_of(v: &Value) -> Vec<usize> {
        match v {
            Value::Variant(x) => x.shape().to_vec(),
            other => panic!("not a variant: {other:?}"),
        }
    }

    /// What tf.map_fn does with a ragged tensor of ragged rank 2: encode its rows, split them
    /// into a list, read each (decoding it to a ragged tensor of ragged rank 1), write the
    /// results into a reserved list, stack it and decode the whole.
    #[test]
    fn map_fn_over_ragged_rows_round_trips() {
        let (outer, inner) = ([0i64, 1, 1, 3], [0i64, 2, 2, 5]);
        let values = [0.0f32, 1.0, 2.0, 3.0, 4.0];
        let rows = encode(2, true, vec![i64s(&outer), i64s(&inner), floats(&values)]).unwrap();
        assert_eq!(shape_of(&rows), [3]);
        let shape = run("Shape", &[], vec![rows.clone()]).unwrap();
        assert_eq!(ints_of(&shape[0]), [3]);
        let list = run(
            "TensorListFromTensor",
            &[variant_dtype()],
            vec![rows, no_shape()],
        )
        .unwrap()
        .remove(0);
        let mut out = run(
            "TensorListReserve",
            &[variant_dtype()],
            vec![scalar(-1), scalar(3)],
        )
        .unwrap()
        .remove(0);
        let mut seen = Vec::new();
        for i in 0..3 {
            let item = run(
                "TensorListGetItem",
                &[variant_dtype()],
                vec![list.clone(), scalar(i), no_shape()],
            )
            .unwrap()
            .remove(0);
            let row = decode(-1, 1, item.clone()).unwrap();
            seen.push((ints_of(&row[0]), floats_of(&row[1]).1));
            out = run(
                "TensorListSetItem",
                &[variant_dtype()],
                vec![out, scalar(i), item],
            )
            .unwrap()
            .remove(0);
        }
        assert_eq!(seen[0], (vec![0, 2], vec![0.0, 1.0]));
        assert_eq!(seen[1], (vec![0], vec![]));
        assert_eq!(seen[2], (vec![0, 0, 3], vec![2.0, 3.0, 4.0]));
        let stacked = run("TensorListStack", &[variant_dtype()], vec![out, no_shape()])
            .unwrap()
            .remove(0);
        let back = decode(-1, 2, stacked).unwrap();
        assert_eq!(ints_of(&back[0]), outer);
        assert_eq!(ints_of(&back[1]), inner);
        assert_eq!(floats_of(&back[2]), (vec![5], values.to_vec()));
    }

    #[test]
    fn a_whole_tensor_and_dense_rows_encode_as_they_are() {
        let splits = t(Tensor::from_vec(vec![3], vec![0i32, 1, 3]));
        let scalar_variant = encode(1, false, vec![splits, floats(&[1.0, 2.0, 3.0])]).unwrap();
        assert_eq!(shape_of(&scalar_variant), Vec::<usize>::new());
        // int32 splits do not decode as the default int64 Tsplits (TensorFlow refuses too).
        assert!(decode(1, 1, scalar_variant).is_err());
        let matrix = t(Tensor::from_vec(vec![2, 2], vec![1.0f32, 2.0, 3.0, 4.0]));
        let rows = encode(0, true, vec![matrix]).unwrap();
        assert_eq!(shape_of(&rows), [2]);
        let back = decode(-1, 1, rows).unwrap();
        assert_eq!(ints_of(&back[0]), [0, 2, 4]);
        assert_eq!(floats_of(&back[1]), (vec![4], vec![1.0, 2.0, 3.0, 4.0]));
    }

    /// A variant matrix (a stacked list of variant vectors) decodes with uniform outer splits.
    #[test]
    fn a_variant_matrix_decodes_with_uniform_outer_splits() {
        let rows = |splits: &[i64], values: &[f32]| {
            encode(1, true, vec![i64s(splits), floats(values)]).unwrap()
        };
        let mut list = run(
            "TensorListReserve",
            &[variant_dtype()],
            vec![scalar(-1), scalar(2)],
        )
        .unwrap()
        .remove(0);
        for (i, item) in [rows(&[0, 1, 1], &[1.0]), rows(&[0, 2, 3], &[2.0, 3.0, 4.0])]
            .into_iter()
            .enumerate()
        {
            list = run(
                "TensorListSetItem",
                &[variant_dtype()],
                vec![list, scalar(i as i32), item],
            )
            .unwrap()
            .remove(0);
        }
        let matrix = run(
            "TensorListStack",
            &[variant_dtype()],
            vec![list, scalar(-1)],
        )
        .unwrap()
        .remove(0);
        assert_eq!(shape_of(&matrix), [2, 2]);
        let back = decode(-1, 2, matrix).unwrap();
        assert_eq!(ints_of(&back[0]), [0, 2, 4]);
        assert_eq!(ints_of(&back[1]), [0, 1, 1, 3, 4]);
        assert_eq!(floats_of(&back[2]).1, [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn an_empty_batch_maps_to_an_empty_ragged_tensor() {
        let rows = encode(1, true, vec![i64s(&[0]), floats(&[])]).unwrap();
        assert_eq!(shape_of(&rows), [0]);
        let reserved = run(
            "TensorListReserve",
            &[variant_dtype()],
            vec![scalar(-1), scalar(0)],
        )
        .unwrap()
        .remove(0);
        let stacked = run(
            "TensorListStack",
            &[variant_dtype()],
            vec![reserved, no_shape()],
        )
        .unwrap()
        .remove(0);
        assert_eq!(shape_of(&stacked), [0]);
        let back = decode(-1, 1, stacked).unwrap();
        assert_eq!(ints_of(&back[0]), [0]);
        assert_eq!(floats_of(&back[1]), (vec![0], vec![]));
    }

    #[test]
    fn invalid_splits_and_mismatched_ranks_are_errors() {
        let values = || floats(&[1.0, 2.0, 3.0]);
        for (splits, says) in [
            (&[1i64, 3][..], "first element"),
            (&[0, 2, 1, 3][..], "monotonically"),
            (&[0, 2][..], "last element"),
            (&[][..], "at least one"),
        ] {
            let err = encode(1, true, vec![i64s(splits), values()]).unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        }
        assert!(encode(2, true, vec![i64s(&[0, 3]), values()]).is_err());
        let rows = encode(1, true, vec![i64s(&[0, 1, 3]), values()]).unwrap();
        assert!(decode(0, 2, rows.clone()).is_err());
        assert!(decode(-1, 0, rows.clone()).is_err());
        assert!(decode(0, 1, values()).is_err());
        let doubles = [
            ("input_ragged_rank", A::I(-1)),
            ("output_ragged_rank", A::I(1)),
            ("Tvalues", A::Type(DType::Float64.to_proto())),
        ];
        assert!(run("RaggedTensorFromVariant", &doubles, vec![rows]).is_err());
    }

    #[test]
    fn variant_lists_refuse_what_they_cannot_do() {
        let rows = encode(1, true, vec![i64s(&[0, 1, 1]), floats(&[1.0])]).unwrap();
        let list = run(
            "TensorListFromTensor",
            &[variant_dtype()],
            vec![rows.clone(), no_shape()],
        )
        .unwrap()
        .remove(0);
        let float_dtype = ("element_dtype", A::Type(DType::Float32.to_proto()));
        let err = run("TensorListLength", &[], vec![list.clone()]).unwrap_err();
        assert!(err.to_string().contains("variant"), "{err}");
        let err = run(
            "TensorListGetItem",
            std::slice::from_ref(&float_dtype),
            vec![list.clone(), scalar(0), no_shape()],
        )
        .unwrap_err();
        assert!(err.to_string().contains("variant"), "{err}");
        assert!(run(
            "TensorListSetItem",
            &[variant_dtype()],
            vec![list.clone(), scalar(0), floats(&[1.0])],
        )
        .is_err());
        assert!(run(
            "TensorListSetItem",
            &[variant_dtype()],
            vec![list.clone(), scalar(2), rows.clone()],
        )
        .is_err());
        assert!(run("Mul", &[], vec![rows.clone(), rows.clone()]).is_err());
        let unset = run(
            "TensorListReserve",
            &[variant_dtype()],
            vec![scalar(-1), scalar(2)],
        )
        .unwrap()
        .remove(0);
        assert!(run(
            "TensorListGetItem",
            &[variant_dtype()],
            vec![unset.clone(), scalar(0), no_shape()],
        )
        .is_err());
        assert!(run(
            "TensorListStack",
            &[variant_dtype()],
            vec![unset, no_shape()]
        )
        .is_err());
        let floats_list = run(
            "TensorListReserve",
            &[float_dtype],
            vec![scalar(-1), scalar(2)],
        )
        .unwrap()
        .remove(0);
        assert!(run(
            "TensorListSetItem",
            &[variant_dtype()],
            vec![floats_list, scalar(0), rows],
        )
        .is_err());
    }
}
