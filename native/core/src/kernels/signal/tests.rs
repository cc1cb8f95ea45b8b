//! A transform with a known spectrum, and the complex-part ops' dtypes.

use crate::kernels::test_util::run_op as run;
use crate::tensor::Tensor;

#[test]
fn rfft_of_a_cosine_has_one_bin() {
    // cos(2π k / 8) for k < 8, then two samples the length crops away.
    let mut signal: Vec<f64> = (0..8)
        .map(|k| (std::f64::consts::PI * f64::from(k) / 4.0).cos())
        .collect();
    signal.extend([99.0, 99.0]);
    let x = Tensor::from_vec(vec![1, 10], signal);
    let out = run(
        "RFFT",
        vec![x.clone(), Tensor::from_vec(vec![1], vec![8i32])],
    )
    .unwrap();
    assert_eq!(out.shape(), &[1, 5]);
    for (bin, z) in out.values::<[f64; 2]>().unwrap().iter().enumerate() {
        let want = if bin == 1 { 4.0 } else { 0.0 };
        assert!(
            (z[0] - want).abs() < 1e-12 && z[1].abs() < 1e-12,
            "{bin}: {z:?}"
        );
    }
    assert!(run(
        "RFFT",
        vec![x.clone(), Tensor::from_vec(vec![1], vec![11i32])]
    )
    .is_err());
    assert!(run(
        "RFFT",
        vec![x.clone(), Tensor::from_vec(vec![2], vec![4i32, 4])]
    )
    .is_err());
    let none = run("RFFT", vec![x, Tensor::from_vec(vec![1], vec![0i32])]).unwrap();
    assert_eq!(none.shape(), &[1, 0]);
}

#[test]
fn complex_parts_round_trip() {
    let re = Tensor::from_vec(vec![2], vec![3.0f32, -1.0]);
    let im = Tensor::scalar(4.0f32);
    let z = run("Complex", vec![re, im]).unwrap();
    assert_eq!(z.values::<[f32; 2]>().unwrap(), &[[3.0, 4.0], [-1.0, 4.0]]);
    assert_eq!(
        run("ComplexAbs", vec![z.clone()])
            .unwrap()
            .values::<f32>()
            .unwrap()[0],
        5.0
    );
    assert_eq!(
        run("Imag", vec![z.clone()])
            .unwrap()
            .values::<f32>()
            .unwrap(),
        &[4.0, 4.0]
    );
    let conj = run("Conj", vec![z.clone()]).unwrap();
    assert_eq!(conj.values::<[f32; 2]>().unwrap()[1], [-1.0, -4.0]);
    assert!(run("Angle", vec![Tensor::scalar(1.0f32)]).is_err());
    let mixed = vec![Tensor::scalar(1.0f32), Tensor::scalar(1.0f64)];
    assert!(run("Complex", mixed).is_err());
}
