//! Edge cases the TensorFlow fixtures do not cover, run through the registry as the executor
//! runs them: empty tensors, broadcasting paths, bad inputs, and the integer and rounding
//! rules TensorFlow documents.

use std::collections::HashMap;

use crate::engine::{run_node, Value};
use crate::protos::attr_value::Value as A;
use crate::protos::{AttrValue, NodeDef};
use crate::tensor::{Element, Tensor};

fn node(op: &str, attrs: &[(&str, A)]) -> NodeDef {
    let attr: HashMap<String, AttrValue> = attrs
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                AttrValue {
                    value: Some(v.clone()),
                },
            )
        })
        .collect();
    NodeDef {
        name: op.into(),
        op: op.into(),
        attr,
        ..Default::default()
    }
}

fn run(op: &str, attrs: &[(&str, A)], inputs: Vec<Tensor>) -> crate::error::Result<Vec<Tensor>> {
    let values = run_node(&node(op, attrs), inputs)?;
    Ok(values
        .into_iter()
        .map(|v| match v {
            Value::Tensor(t) => (*t).clone(),
            other => panic!("not a tensor: {other:?}"),
        })
        .collect())
}

fn t<T: Element>(shape: &[usize], v: &[T]) -> Tensor {
    Tensor::from_vec(shape.to_vec(), v.to_vec())
}

fn values<T: Element>(out: &Tensor) -> Vec<T> {
    out.values::<T>().expect("dtype").to_vec()
}

fn one_output(op: &str, attrs: &[(&str, A)], inputs: Vec<Tensor>) -> Tensor {
    run(op, attrs, inputs).expect("op runs").remove(0)
}

#[test]
fn broadcasting_covers_empty_and_column_operands() {
    let empty = one_output(
        "AddV2",
        &[],
        vec![t::<f32>(&[0, 3], &[]), t(&[3], &[1.0f32, 2.0, 3.0])],
    );
    assert_eq!(empty.shape(), &[0, 3]);
    let column = one_output(
        "Mul",
        &[],
        vec![t(&[2, 1], &[2i32, 3]), t(&[1, 3], &[1, 2, 3])],
    );
    assert_eq!(column.shape(), &[2, 3]);
    assert_eq!(values::<i32>(&column), vec![2, 4, 6, 3, 6, 9]);
    assert!(run(
        "Sub",
        &[],
        vec![t(&[2], &[1.0f32, 2.0]), t(&[3], &[1.0f32, 2.0, 3.0])]
    )
    .is_err());
    assert!(run("Add", &[], vec![t(&[1], &[1.0f32]), t(&[1], &[1.0f64])]).is_err());
}

#[test]
fn integer_division_follows_c_and_floor_rules() {
    let x = t(&[4], &[-7i32, 7, -7, i32::MIN]);
    let y = t(&[4], &[2i32, -2, -2, -1]);
    let floor = one_output("FloorDiv", &[], vec![x.clone(), y.clone()]);
    assert_eq!(values::<i32>(&floor), vec![-4, -4, 3, i32::MIN]);
    let modulo = one_output("FloorMod", &[], vec![x.clone(), y.clone()]);
    assert_eq!(values::<i32>(&modulo), vec![1, -1, -1, 0]);
    let truncated = one_output("TruncateMod", &[], vec![x.clone(), y]);
    assert_eq!(values::<i32>(&truncated), vec![-1, 1, -1, 0]);
    let zero = t(&[4], &[1i32, 0, 1, 1]);
    assert!(run("Div", &[], vec![x.clone(), zero.clone()]).is_err());
    assert!(run("FloorMod", &[], vec![x, zero]).is_err());
}

#[test]
fn round_is_half_to_even_and_cast_saturates_like_x86() {
    let halves = t(&[5], &[0.5f32, 1.5, 2.5, -0.5, -2.5]);
    let rounded = one_output("Round", &[], vec![halves]);
    assert_eq!(values::<f32>(&rounded), vec![0.0, 2.0, 2.0, -0.0, -2.0]);
    let dst = |d: crate::protos::DataType| ("DstT", A::Type(d as i32));
    let x = t(&[3], &[f32::NAN, 3e9, -1.5]);
    let as_i32 = one_output(
        "Cast",
        &[dst(crate::protos::DataType::DtInt32)],
        vec![x.clone()],
    );
    assert_eq!(values::<i32>(&as_i32), vec![i32::MIN, i32::MIN, -1]);
    let wide = t(&[3], &[300.0f32, -5.0, 3e9]);
    let as_u8 = one_output("Cast", &[dst(crate::protos::DataType::DtUint8)], vec![wide]);
    assert_eq!(values::<u8>(&as_u8), vec![255, 0, 0]);
    let as_u32 = one_output("Cast", &[dst(crate::protos::DataType::DtUint32)], vec![x]);
    assert_eq!(values::<u32>(&as_u32)[1], 3_000_000_000);
}

#[test]
fn select_picks_rows_with_a_vector_condition() {
    let cond = t(&[2], &[true, false]);
    let x = t(&[2, 2], &[1i64, 2, 3, 4]);
    let y = t(&[2, 2], &[5i64, 6, 7, 8]);
    let out = one_output("Select", &[], vec![cond, x.clone(), y.clone()]);
    assert_eq!(values::<i64>(&out), vec![1, 2, 7, 8]);
    assert!(run("Select", &[], vec![t(&[3], &[true, true, true]), x, y]).is_err());
}

#[test]
fn reductions_handle_empty_inputs_axes_and_keep_dims() {
    let keep = [("keep_dims", A::B(true))];
    let x = t(
        &[2, 2, 2, 3],
        &(0..24).map(|v| v as f32).collect::<Vec<_>>(),
    );
    let pooled = one_output("Mean", &keep, vec![x.clone(), t(&[2], &[1i32, 2])]);
    assert_eq!(pooled.shape(), &[2, 1, 1, 3]);
    assert_eq!(
        values::<f32>(&pooled),
        vec![4.5, 5.5, 6.5, 16.5, 17.5, 18.5]
    );
    let unchanged = one_output("Sum", &[], vec![x.clone(), t::<i32>(&[0], &[])]);
    assert_eq!(unchanged, x);
    assert!(run("Sum", &[], vec![x.clone(), t(&[2], &[1i32, -3])]).is_err());
    assert!(run("Sum", &[], vec![x, t(&[1], &[4i32])]).is_err());
    let empty = t::<f32>(&[2, 0], &[]);
    let mean = one_output("Mean", &[], vec![empty.clone(), t(&[], &[1i32])]);
    assert!(values::<f32>(&mean).iter().all(|v| v.is_nan()));
    let max = one_output("Max", &[], vec![t::<i32>(&[0], &[]), t(&[], &[0i32])]);
    assert_eq!(values::<i32>(&max), vec![i32::MIN]);
    let int_mean = one_output("Mean", &[], vec![t(&[3], &[-1i8, -2, 0]), t(&[], &[0i32])]);
    assert_eq!(values::<i8>(&int_mean), vec![-1]);
}

#[test]
fn scans_top_k_and_arg_max_order_ties_by_index() {
    let attrs = [("exclusive", A::B(true)), ("reverse", A::B(true))];
    let scan = one_output(
        "Cumsum",
        &attrs,
        vec![t(&[3], &[1i32, 2, 3]), t(&[], &[0i32])],
    );
    assert_eq!(values::<i32>(&scan), vec![5, 3, 0]);
    let out = run(
        "TopKV2",
        &[],
        vec![t(&[4], &[1.0f32, 3.0, 3.0, 2.0]), t(&[], &[2i32])],
    )
    .expect("top k");
    assert_eq!(values::<f32>(&out[0]), vec![3.0, 3.0]);
    assert_eq!(values::<i32>(&out[1]), vec![1, 2]);
    assert!(run(
        "TopKV2",
        &[],
        vec![t(&[2], &[1.0f32, 2.0]), t(&[], &[3i32])]
    )
    .is_err());
    let arg = one_output(
        "ArgMax",
        &[],
        vec![t(&[3], &[f32::NAN, 1.0, 1.0]), t(&[], &[0i32])],
    );
    assert_eq!(values::<i64>(&arg), vec![1]);
}

#[test]
fn softmax_rows_sum_to_one_and_sparse_labels_are_checked() {
    let x = t(&[2, 3], &[1.0f32, 2.0, 3.0, 1000.0, 1000.0, 1000.0]);
    let soft = values::<f32>(&one_output("Softmax", &[], vec![x.clone()]));
    assert!((soft[..3].iter().sum::<f32>() - 1.0).abs() < 1e-6);
    assert!((soft[3] - 1.0 / 3.0).abs() < 1e-6);
    let op = "SparseSoftmaxCrossEntropyWithLogits";
    assert!(run(op, &[], vec![x.clone(), t(&[2], &[0i32, 3])]).is_err());
    let loss = run(op, &[], vec![x, t(&[2], &[2i32, 0])]).expect("loss");
    assert!((values::<f32>(&loss[1])[2] - (soft[2] - 1.0)).abs() < 1e-6);
}

/// An op's rule for combining two values.
type Fold<'a> = &'a dyn Fn(f32, f32) -> f32;

/// Reductions over the pixels of NHWC tensors (blocks of 16 channels summed in registers, and
/// the channels past the last whole block) give, bit for bit, the fold of each channel's
/// values in order, NaNs included; an image of at least 32K values is folded in eight runs of
/// pixels, each in order from the identity, the runs' results then folded in order. (One
/// channel is one row of values, folded with eight accumulators: not in order, so the large
/// images start at three channels.)
#[test]
fn reductions_over_pixels_fold_each_channel_in_order() {
    let max = |a: f32, b: f32| if b > a || b.is_nan() { b } else { a };
    let min = |a: f32, b: f32| if b < a || b.is_nan() { b } else { a };
    for channels in [1, 3, 16, 20, 37, 48] {
        for (h, w) in [(1, 1), (2, 3), (5, 6), (40, 40), (41, 43)] {
            if channels == 1 && h * w >= 32 {
                continue;
            }
            let shape = [2, h, w, channels];
            let count = h * w;
            let mut v: Vec<f32> = (0..2 * count * channels)
                .map(|i| ((i * 7919) % 101) as f32 * 0.37 - 18.0)
                .collect();
            v[count * channels / 2] = f32::NAN;
            let x = t(&shape, &v);
            let folds: [(&str, f32, Fold); 3] = [
                ("Sum", 0.0, &|a, b| a + b),
                ("Max", f32::NEG_INFINITY, &max),
                ("Min", f32::INFINITY, &min),
            ];
            for (op, init, f) in folds {
                let got = one_output(op, &[], vec![x.clone(), t(&[2], &[1i32, 2])]);
                assert_eq!(got.shape(), &[2, channels]);
                let runs = if count * channels >= 32 * 1024 { 8 } else { 1 };
                let run = count.div_ceil(runs);
                let want = (0..2 * channels).map(|o| {
                    let (image, c) = (o / channels, o % channels);
                    let value = |p: usize| v[(image * count + p) * channels + c];
                    (0..count).step_by(run).fold(init, |a, first| {
                        let pixels = first..count.min(first + run);
                        f(a, pixels.fold(init, |b, p| f(b, value(p))))
                    })
                });
                let same = values::<f32>(&got)
                    .iter()
                    .zip(want)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{op} over {shape:?}");
            }
        }
    }
}

/// A global average pooling's Mean (keras_cnn's, [32, 13, 13, 16] over the pixels), best of
/// 200 (`cargo test --release -p savedmodel-core --lib bench_global_mean -- --ignored
/// --nocapture`).
#[test]
#[ignore]
fn bench_global_mean() {
    let shape = [32, 13, 13, 16];
    let x = t(
        &shape,
        &(0..shape.iter().product::<usize>())
            .map(|i| (i % 97) as f32 * 0.1)
            .collect::<Vec<_>>(),
    );
    let axes = t(&[2], &[1i32, 2]);
    let mut best = f64::INFINITY;
    for _ in 0..200 {
        let inputs = vec![x.clone(), axes.clone()];
        let start = std::time::Instant::now();
        one_output("Mean", &[], inputs);
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!("Mean over the pixels of {shape:?}: {:.1} us", best * 1e6);
}
