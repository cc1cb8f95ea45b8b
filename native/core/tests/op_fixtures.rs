//! The per-op fixtures TensorFlow recorded (`tests/data/ops/<group>.json` and `.npz`, with the
//! NodeDefs in binary form in `<group>.nodes.pb`) replay through the native kernels: every case
//! of an op the engine has a kernel for gives TensorFlow's outputs within float tolerance
//! (integers, booleans and strings exactly), and the cases TensorFlow rejects are errors.

mod common;

use std::collections::BTreeMap;

use base64::Engine as _;
use prost::Message;
use savedmodel_core::engine::{run_node, Value};
use savedmodel_core::kernels::registry;
use savedmodel_core::protos::GraphDef;
use savedmodel_core::{DType, Storage, Tensor};
use serde_json::Value as Json;

fn dtype_named(name: &str) -> DType {
    match name {
        "float16" => DType::Float16,
        "bfloat16" => DType::BFloat16,
        "float32" => DType::Float32,
        "float64" => DType::Float64,
        "int8" => DType::Int8,
        "int16" => DType::Int16,
        "int32" => DType::Int32,
        "int64" => DType::Int64,
        "uint8" => DType::UInt8,
        "uint16" => DType::UInt16,
        "uint32" => DType::UInt32,
        "uint64" => DType::UInt64,
        "bool" => DType::Bool,
        "complex64" => DType::Complex64,
        "complex128" => DType::Complex128,
        "string" => DType::String,
        other => panic!("fixture dtype {other}"),
    }
}

/// The raw data of every array of a (compressed) `.npz`, by key.
fn npz_bytes(group: &str) -> BTreeMap<String, Vec<u8>> {
    let path = common::data_dir().join("ops").join(format!("{group}.npz"));
    let members = savedmodel_npy::read_npz(&path).unwrap_or_else(|e| panic!("{e}"));
    members
        .into_iter()
        .map(|(key, bytes)| {
            let raw = savedmodel_npy::parse_raw(&bytes, &key).unwrap_or_else(|e| panic!("{e}"));
            let data = raw.data.to_vec();
            (key, data)
        })
        .collect()
}

fn stored(spec: &Json, arrays: &BTreeMap<String, Vec<u8>>) -> Tensor {
    let dtype = dtype_named(spec["dtype"].as_str().unwrap());
    let shape: Vec<usize> = spec["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    if dtype == DType::String {
        let items = spec["b64"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                base64::engine::general_purpose::STANDARD
                    .decode(s.as_str().unwrap())
                    .unwrap()
            })
            .collect();
        return Tensor::strings(shape, items);
    }
    let bytes = &arrays[spec["key"].as_str().unwrap()];
    Tensor::new(shape, Storage::from_le_bytes(dtype, bytes).unwrap()).unwrap()
}

/// (rtol, atol) by dtype when the case names none.
fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::Float16 => (1e-3, 1e-3),
        DType::BFloat16 => (1e-2, 1e-2),
        DType::Float32 | DType::Complex64 => (1e-5, 1e-6),
        _ => (1e-12, 1e-12),
    }
}

/// The elements as f64 (complex as interleaved parts; half types widened); None for exact types.
fn floats(t: &Tensor) -> Option<Vec<f64>> {
    Some(match t.storage() {
        Storage::Float16(v) => v.iter().map(|&b| f16_to_f64(b)).collect(),
        Storage::BFloat16(v) => v
            .iter()
            .map(|&b| f64::from(f32::from_bits(u32::from(b) << 16)))
            .collect(),
        Storage::Float32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        Storage::Float64(v) => v.clone(),
        Storage::Complex64(v) => v.iter().flat_map(|c| c.map(f64::from)).collect(),
        Storage::Complex128(v) => v.iter().flat_map(|c| *c).collect(),
        _ => return None,
    })
}

fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

/// Whether `ours` matches `expected`. Float tolerances grow with the largest magnitude of
/// the expected output, since sums and products of many terms round at that scale.
fn compare(ours: &Tensor, expected: &Tensor, case: &Json, exact: bool) -> Result<(), String> {
    if ours.dtype() != expected.dtype() {
        return Err(format!(
            "dtype {}, expected {}",
            ours.dtype(),
            expected.dtype()
        ));
    }
    if ours.shape() != expected.shape() {
        return Err(format!(
            "shape {:?}, expected {:?}",
            ours.shape(),
            expected.shape()
        ));
    }
    if exact {
        return match ours.storage().to_le_bytes() == expected.storage().to_le_bytes() {
            true => Ok(()),
            false => Err("values differ in their bits".into()),
        };
    }
    let (Some(a), Some(b)) = (floats(ours), floats(expected)) else {
        return if ours.storage() == expected.storage() {
            Ok(())
        } else {
            Err(format!(
                "values differ: {:?} vs {:?}",
                ours.storage(),
                expected.storage()
            ))
        };
    };
    let (rtol, atol) = tolerance(ours.dtype());
    let rtol = case["rtol"].as_f64().unwrap_or(rtol);
    let atol = case["atol"].as_f64().unwrap_or(atol);
    let scale = b
        .iter()
        .filter(|x| x.is_finite())
        .fold(0f64, |m, x| m.max(x.abs()));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let same = (x.is_nan() && y.is_nan()) || x == y;
        let within = (x - y).abs() <= atol + rtol * (y.abs() + scale);
        if !same && !within {
            return Err(format!("element {i}: {x}, expected {y}"));
        }
    }
    Ok(())
}

/// Replays `group`'s cases whose op has a native kernel, floats within tolerance or (`exact`)
/// bit for bit; returns how many ran.
fn replay_with(group: &str, exact: bool) -> usize {
    let ops = common::data_dir().join("ops");
    let cases: Vec<Json> =
        serde_json::from_str(&std::fs::read_to_string(ops.join(format!("{group}.json"))).unwrap())
            .unwrap();
    let nodes = GraphDef::decode(
        std::fs::read(ops.join(format!("{group}.nodes.pb")))
            .unwrap()
            .as_slice(),
    )
    .unwrap();
    let arrays = npz_bytes(group);
    let registry = registry();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (case, node) in cases.iter().zip(&nodes.node) {
        if !registry.contains(&node.op) {
            continue;
        }
        ran += 1;
        let inputs = case["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| stored(s, &arrays))
            .collect();
        let result = run_node(node, inputs);
        match (result, case.get("outputs")) {
            (Err(_), None) => {}
            (Ok(_), None) => failures.push(format!(
                "{}: TensorFlow rejects these inputs, we did not",
                node.name
            )),
            (Err(err), Some(_)) => failures.push(format!("{}: {err}", node.name)),
            (Ok(values), Some(outputs)) => {
                let outputs = outputs.as_array().unwrap();
                if values.len() != outputs.len() {
                    failures.push(format!(
                        "{}: {} outputs, expected {}",
                        node.name,
                        values.len(),
                        outputs.len()
                    ));
                    continue;
                }
                for (k, (value, spec)) in values.iter().zip(outputs).enumerate() {
                    let Value::Tensor(ours) = value else {
                        failures.push(format!("{} output {k}: not a tensor", node.name));
                        continue;
                    };
                    if let Err(why) = compare(ours, &stored(spec, &arrays), case, exact) {
                        failures.push(format!("{} output {k}: {why}", node.name));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{group}: {} of {ran} cases fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    ran
}

fn replay(group: &str) -> usize {
    replay_with(group, false)
}

/// Random numbers are TensorFlow's bit for bit, normals too: Box-Muller's logf/sinf/cosf are
/// the C library's (glibc), as TensorFlow's are.
#[test]
fn random_bit_for_bit() {
    assert!(replay_with("random", true) > 300);
}

macro_rules! groups {
    ($($group:ident),* $(,)?) => {
        $(
            #[test]
            fn $group() {
                replay(stringify!($group));
            }
        )*

        /// The groups the tests above replay, one `#[test]` each.
        const GROUPS: &[&str] = &[$(stringify!($group)),*];
    };
}

groups!(
    activation, array, common, detection, gather, image, jpeg, linalg, math, nn, parsing, png,
    ragged, ragged_ops, random, reduction, search, segments, signal, sparse, spatial, special,
    strings, strings2, text, unicode,
);

/// Every `<group>.json` in tests/data/ops has a test above, so a new group cannot go unreplayed.
#[test]
fn every_group_is_replayed() {
    let dir = common::data_dir().join("ops");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().ok()?;
            name.strip_suffix(".json").map(str::to_string)
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = GROUPS.iter().map(|g| g.to_string()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "tests/data/ops groups and the groups!(...) list in op_fixtures.rs differ"
    );
}
