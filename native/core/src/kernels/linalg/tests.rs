//! Small systems with known answers, and the edges the recorded fixtures leave out: empty
//! matrices and right-hand sides, complex adjoints, errors instead of panics on bad shapes.

use std::collections::HashMap;

use crate::engine::{run_node, Value};
use crate::protos::attr_value::Value as A;
use crate::protos::{AttrValue, NodeDef};
use crate::tensor::Tensor;

fn run(op: &str, attrs: &[(&str, bool)], inputs: Vec<Tensor>) -> crate::error::Result<Vec<Tensor>> {
    let attr: HashMap<String, AttrValue> = attrs
        .iter()
        .map(|&(k, b)| {
            (
                k.to_string(),
                AttrValue {
                    value: Some(A::B(b)),
                },
            )
        })
        .collect();
    let node = NodeDef {
        name: op.into(),
        op: op.into(),
        attr,
        ..Default::default()
    };
    Ok(run_node(&node, inputs)?
        .into_iter()
        .map(|v| match v {
            Value::Tensor(t) => (*t).clone(),
            other => panic!("not a tensor: {other:?}"),
        })
        .collect())
}

fn f64s(shape: &[usize], values: &[f64]) -> Tensor {
    Tensor::from_vec(shape.to_vec(), values.to_vec())
}

fn assert_close(t: &Tensor, want: &[f64]) {
    let got = t.values::<f64>().unwrap();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
    }
}

#[test]
fn inverse_and_solve_need_pivoting() {
    // A zero in the corner: elimination without row swaps would divide by it.
    let a = f64s(&[2, 2], &[0.0, 2.0, 4.0, 1.0]);
    let inverse = run("MatrixInverse", &[], vec![a.clone()]).unwrap();
    assert_close(&inverse[0], &[-0.125, 0.25, 0.5, 0.0]);
    let b = f64s(&[2, 1], &[2.0, 5.0]);
    assert_close(
        &run("MatrixSolve", &[], vec![a.clone(), b.clone()]).unwrap()[0],
        &[1.0, 1.0],
    );
    let transposed = run("MatrixSolve", &[("adjoint", true)], vec![a, b]).unwrap();
    assert_close(&transposed[0], &[2.25, 0.5]);
}

#[test]
fn singular_systems_fail_and_bad_shapes_are_errors() {
    let singular = f64s(&[2, 2], &[1.0, 2.0, 2.0, 4.0]);
    assert!(run("MatrixInverse", &[], vec![singular.clone()]).is_err());
    assert!(run(
        "MatrixSolve",
        &[],
        vec![singular, f64s(&[2, 1], &[1.0, 1.0])]
    )
    .is_err());
    let vector = f64s(&[3], &[1.0, 2.0, 3.0]);
    for op in ["MatrixInverse", "Cholesky", "LogMatrixDeterminant"] {
        assert!(run(op, &[], vec![vector.clone()]).is_err(), "{op}");
    }
    let eye = f64s(&[2, 2], &[1.0, 0.0, 0.0, 1.0]);
    assert!(run(
        "MatrixTriangularSolve",
        &[],
        vec![eye.clone(), vector.clone()]
    )
    .is_err());
    assert!(run("MatrixSolve", &[], vec![eye, vector]).is_err());
}

#[test]
fn cholesky_fails_per_matrix() {
    let batch = f64s(&[2, 2, 2], &[4.0, 99.0, 2.0, 5.0, 1.0, 0.0, 0.0, -1.0]);
    let out = run("Cholesky", &[], vec![batch]).unwrap().remove(0);
    let v = out.values::<f64>().unwrap();
    assert_eq!(&v[..4], &[2.0, 0.0, 1.0, 2.0]);
    assert!(v[4].is_nan() && v[5] == 0.0 && v[6].is_nan() && v[7].is_nan());
}

#[test]
fn log_determinants_give_signs() {
    let batch = f64s(
        &[3, 2, 2],
        &[0.0, 1.0, 1.0, 0.0, 2.0, 0.0, 0.0, 3.0, 1.0, 2.0, 2.0, 4.0],
    );
    let out = run("LogMatrixDeterminant", &[], vec![batch]).unwrap();
    assert_eq!(out[0].values::<f64>().unwrap(), &[-1.0, 1.0, 0.0]);
    let logs = out[1].values::<f64>().unwrap();
    assert!(logs[0] == 0.0 && (logs[1] - 6f64.ln()).abs() < 1e-15);
    assert_eq!(logs[2], f64::NEG_INFINITY);
}

#[test]
fn triangular_solves_broadcast_and_use_one_triangle() {
    // The upper triangle (99) is ignored by a lower solve.
    let a = f64s(&[2, 2], &[2.0, 99.0, 1.0, 1.0]);
    let b = f64s(&[3, 2, 1], &[2.0, 2.0, 4.0, 3.0, 0.0, 1.0]);
    let out = run("MatrixTriangularSolve", &[], vec![a.clone(), b]).unwrap();
    assert_eq!(out[0].shape(), &[3, 2, 1]);
    assert_close(&out[0], &[1.0, 1.0, 2.0, 1.0, 0.0, 1.0]);
    let upper = run(
        "MatrixTriangularSolve",
        &[("lower", false), ("adjoint", true)],
        vec![a, f64s(&[2, 0], &[])],
    )
    .unwrap();
    assert_eq!(upper[0].shape(), &[2, 0]);
}

#[test]
fn complex_inverse_of_an_adjoint() {
    // A = [[i, 0], [0, 2]]: adjoint(A)^-1 = [[i, 0], [0, 0.5]].
    let a = Tensor::from_vec(
        vec![2, 2],
        vec![[0.0f32, 1.0], [0.0, 0.0], [0.0, 0.0], [2.0, 0.0]],
    );
    let out = run("MatrixInverse", &[("adjoint", true)], vec![a]).unwrap();
    let v = out[0].values::<[f32; 2]>().unwrap();
    assert_eq!(v, &[[0.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.5, 0.0]]);
}
