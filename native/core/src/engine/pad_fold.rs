//! Folding zero padding into the convolution that reads it. Keras pads explicitly before
//! strided convolutions (ZeroPadding2D, then Conv2D or DepthwiseConv2dNative with VALID
//! padding); the Pad materializes a padded copy of its input that only the convolution reads.
//! A convolution with `padding = "EXPLICIT"` and TensorFlow's `explicit_paddings` attr (8
//! ints, (before, after) per dimension in data_format order) computes the same result from the
//! unpadded input, its windows treating the border as zeros.
//!
//! Only a Pad whose paddings are constants, whose fill is exactly zero (Pad, or PadV2 with a
//! constant +0), which pads the spatial dimensions only, and whose output nothing else reads
//! (no other consumer, not a plan output, no control edge on it) is folded.
//!
//! A MaxPool with VALID padding folds a zero Pad too (Keras' ResNet50 and DenseNet121 pad
//! their stem's output by one pixel before a 3x3 pool), marked with `pool::ZERO_PADDING`: its
//! padding holds zeros, which each window covering it pools with its input elements (a max
//! pool's own padding holds nothing). Average pooling after a zero Pad stays: it would divide
//! by the zeros too.

use std::collections::{HashMap, HashSet};

use crate::engine::attrs::Attrs;
use crate::engine::graph::Src;
use crate::engine::ir::Ir;
use crate::engine::value::Value;
use crate::kernels::nn::ZERO_PADDING;
use crate::kernels::util::int_values;
use crate::protos::attr_value::{ListValue, Value as A};
use crate::protos::AttrValue;

/// Convolutions that accept EXPLICIT padding.
const CONVOLUTIONS: [&str; 2] = ["Conv2D", "DepthwiseConv2dNative"];

/// The pooling a zero Pad folds into (given `ZERO_PADDING`).
const MAX_POOL: &str = "MaxPool";

/// Rewrites every convolution and max pool of `ir` that reads a foldable zero Pad to read the
/// Pad's input, then drops the Pads no longer read. Runs after constants are folded (paddings and fill
/// values must be known) and before fusion (which keeps the padding attrs).
pub fn fold_pads(ir: &mut Ir) {
    // The mark is this pass's alone: a graph may carry any attr, and one that came with it
    // would make a max pool count its own padding as zeros.
    for node in &mut ir.nodes {
        node.attrs.remove(ZERO_PADDING);
    }
    let readers = readers(ir);
    let pinned = pinned(ir);
    let mut folded = false;
    for i in 0..ir.nodes.len() {
        // A chain of Pads folds one at a time: the read of each Pad's input moves to the
        // convolution, so the next Pad still has exactly one reader.
        while let Some(fold) = match_pad(ir, i, &readers, &pinned) {
            apply(ir, i, fold);
            folded = true;
        }
    }
    if folded {
        ir.prune();
    }
}

/// How many data inputs read each node (any output).
fn readers(ir: &Ir) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for node in &ir.nodes {
        for src in &node.inputs {
            if let Src::Node(n, _) = src {
                *counts.entry(n.clone()).or_default() += 1;
            }
        }
    }
    counts
}

/// Nodes that must stay: roots, targets of control edges, producers of plan outputs.
fn pinned(ir: &Ir) -> HashSet<String> {
    let mut pinned: HashSet<String> = ir.roots.iter().cloned().collect();
    for node in &ir.nodes {
        pinned.extend(node.control.iter().cloned());
    }
    for src in &ir.outputs {
        if let Src::Node(n, _) = src {
            pinned.insert(n.clone());
        }
    }
    pinned
}

/// What folding one Pad into a convolution changes.
#[derive(Debug)]
struct Fold {
    /// The Pad's input, which the convolution reads instead.
    input: Src,
    /// The convolution's new explicit_paddings.
    explicit: Vec<i64>,
    /// The Pad's control inputs, which the convolution inherits.
    control: Vec<String>,
    /// Whether the reader is a max pool (whose padding must then hold zeros).
    pool: bool,
}

/// The fold of the Pad read by convolution `i`, if there is one.
fn match_pad(
    ir: &Ir,
    i: usize,
    readers: &HashMap<String, usize>,
    pinned: &HashSet<String>,
) -> Option<Fold> {
    let conv = &ir.nodes[i];
    let pool = conv.op == MAX_POOL;
    let arity = if pool { 1 } else { 2 };
    if !(pool || CONVOLUTIONS.contains(&conv.op.as_str()))
        || conv.value.is_some()
        || conv.inputs.len() != arity
    {
        return None;
    }
    let Src::Node(pad_name, 0) = &conv.inputs[0] else {
        return None;
    };
    let pad = &ir.nodes[*ir.index.get(pad_name)?];
    let arity = match pad.op.as_str() {
        "Pad" => 2,
        "PadV2" => 3,
        _ => return None,
    };
    if pad.value.is_some()
        || pad.inputs.len() != arity
        || readers.get(pad_name) != Some(&1)
        || pinned.contains(pad_name)
    {
        return None;
    }
    let (conv_attrs, pad_attrs) = (Attrs::new(&conv.attrs), Attrs::new(&pad.attrs));
    let dtype = conv_attrs.dtype("T").ok()?;
    if pad_attrs.dtype("T").ok()? != dtype {
        return None;
    }
    if arity == 3 && !is_zero(ir.known(&pad.inputs[2])?, dtype) {
        return None;
    }
    let Value::Tensor(paddings) = ir.known(&pad.inputs[1])? else {
        return None;
    };
    if paddings.shape() != [4, 2] {
        return None;
    }
    let added = int_values(&paddings, "paddings").ok()?;
    if pool && !spatial_valid_pool(&conv_attrs) {
        return None;
    }
    let explicit = combined(&conv_attrs, &added)?;
    Some(Fold {
        input: pad.inputs[0].clone(),
        explicit,
        control: pad.control.clone(),
        pool,
    })
}

/// Whether a fill value is a scalar +0 of `dtype` (all bytes zero: the padding a
/// convolution's window assumes).
fn is_zero(value: Value, dtype: crate::DType) -> bool {
    let Value::Tensor(t) = value else {
        return false;
    };
    let bytes = t.storage().to_le_bytes();
    t.dtype() == dtype && t.len() == 1 && !bytes.is_empty() && bytes.iter().all(|&b| b == 0)
}

/// Whether a max pool's padding is VALID (its own padding, which holds nothing, cannot join a
/// Pad's zeros) and its window spatial (a window across channels pools no padding).
fn spatial_valid_pool(attrs: &Attrs) -> bool {
    let Some(channels) = channel_axis(attrs) else {
        return false;
    };
    let ksize = attrs.ints("ksize").unwrap_or_default();
    attrs.string("padding") == Ok("VALID")
        && attrs
            .ints_or("explicit_paddings", &[])
            .is_ok_and(|e| e.is_empty())
        && ksize.len() == 4
        && ksize[0] == 1
        && ksize[channels] == 1
}

/// The channel axis of a 4-D node's data_format (NHWC when absent); None for any other format.
fn channel_axis(attrs: &Attrs) -> Option<usize> {
    match attrs.string_or("data_format", "NHWC").ok()? {
        "NHWC" => Some(3),
        "NCHW" => Some(1),
        _ => None,
    }
}

/// The convolution's explicit_paddings after adding a Pad's `added` (8 ints in data_format
/// order), if the convolution's padding is VALID or EXPLICIT and the Pad pads only the spatial
/// dimensions, by non-negative amounts.
fn combined(attrs: &Attrs, added: &[i64]) -> Option<Vec<i64>> {
    let channels = channel_axis(attrs)?;
    let existing = match attrs.string("padding").ok()? {
        "VALID" if attrs.ints_or("explicit_paddings", &[]).ok()?.is_empty() => vec![0; 8],
        "EXPLICIT" => attrs.ints("explicit_paddings").ok()?,
        _ => return None,
    };
    if existing.len() != 8 || added.len() != 8 || added.iter().any(|&p| p < 0) {
        return None;
    }
    let pads_dim = |d: usize| added[2 * d] != 0 || added[2 * d + 1] != 0;
    if pads_dim(0) || pads_dim(channels) {
        return None;
    }
    existing
        .iter()
        .zip(added)
        .map(|(a, b)| a.checked_add(*b))
        .collect()
}

/// Points convolution `i` at the Pad's input with the combined explicit padding.
fn apply(ir: &mut Ir, i: usize, fold: Fold) {
    let conv = &mut ir.nodes[i];
    conv.inputs[0] = fold.input;
    conv.attrs.insert(
        "padding".into(),
        AttrValue {
            value: Some(A::S(b"EXPLICIT".to_vec())),
        },
    );
    conv.attrs.insert(
        "explicit_paddings".into(),
        AttrValue {
            value: Some(A::List(Box::new(ListValue {
                i: fold.explicit,
                ..Default::default()
            }))),
        },
    );
    if fold.pool {
        conv.attrs.insert(
            ZERO_PADDING.into(),
            AttrValue {
                value: Some(A::B(true)),
            },
        );
    }
    for c in fold.control {
        if !conv.control.contains(&c) {
            conv.control.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::ir::IrNode;
    use crate::tensor::Tensor;
    use crate::DType;

    fn attr(value: A) -> AttrValue {
        AttrValue { value: Some(value) }
    }

    fn node(name: &str, op: &str, inputs: &[&str], attrs: &[(&str, A)]) -> IrNode {
        IrNode {
            name: name.into(),
            op: op.into(),
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), attr(v.clone())))
                .collect(),
            inputs: inputs.iter().map(|s| Src::Node(s.to_string(), 0)).collect(),
            control: Vec::new(),
            value: None,
            chain: Vec::new(),
        }
    }

    fn constant(name: &str, t: Tensor) -> IrNode {
        IrNode {
            value: Some(vec![Value::Tensor(Arc::new(t))]),
            ..node(name, "Const", &[], &[])
        }
    }

    fn float() -> (&'static str, A) {
        ("T", A::Type(DType::Float32.to_proto()))
    }

    fn conv(op: &str, input: &str, padding: &str, format: &str, explicit: &[i64]) -> IrNode {
        let mut attrs = vec![
            float(),
            ("padding", A::S(padding.as_bytes().to_vec())),
            ("data_format", A::S(format.as_bytes().to_vec())),
            (
                "strides",
                A::List(Box::new(ListValue {
                    i: vec![1, 2, 2, 1],
                    ..Default::default()
                })),
            ),
        ];
        if !explicit.is_empty() {
            attrs.push((
                "explicit_paddings",
                A::List(Box::new(ListValue {
                    i: explicit.to_vec(),
                    ..Default::default()
                })),
            ));
        }
        node("conv", op, &[input, "w"], &attrs)
    }

    /// x -> Pad(paddings) -> `consumer` (reading "pad") -> output; `extra` nodes appended.
    fn graph(pad: IrNode, paddings: [[i32; 2]; 4], consumer: IrNode, extra: Vec<IrNode>) -> Ir {
        let flat: Vec<i32> = paddings.iter().flatten().copied().collect();
        let mut nodes = vec![
            node("x", "Placeholder", &[], &[float()]),
            constant("paddings", Tensor::from_vec(vec![4, 2], flat)),
            constant("w", Tensor::from_vec(vec![3, 3, 2, 2], vec![0.5f32; 36])),
            constant("zero", Tensor::scalar(0f32)),
            constant("minus_zero", Tensor::scalar(-0f32)),
            constant("one", Tensor::scalar(1f32)),
            pad,
            consumer,
        ];
        nodes.extend(extra);
        let index = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        Ir {
            nodes,
            index,
            outputs: vec![Src::Node("conv".into(), 0)],
            roots: Vec::new(),
            place: "the graph".into(),
        }
    }

    fn pad() -> IrNode {
        node("pad", "Pad", &["x", "paddings"], &[float()])
    }

    fn pad_v2(value: &str) -> IrNode {
        node("pad", "PadV2", &["x", "paddings", value], &[float()])
    }

    const SPATIAL: [[i32; 2]; 4] = [[0, 0], [0, 1], [2, 1], [0, 0]];

    /// The convolution's input and explicit_paddings after the pass (None if not EXPLICIT).
    fn folded(mut ir: Ir) -> (Src, Option<Vec<i64>>, bool) {
        fold_pads(&mut ir);
        let conv = &ir.nodes[ir.index["conv"]];
        let attrs = Attrs::new(&conv.attrs);
        let explicit = (attrs.string("padding") == Ok("EXPLICIT"))
            .then(|| attrs.ints("explicit_paddings").unwrap());
        (
            conv.inputs[0].clone(),
            explicit,
            ir.index.contains_key("pad"),
        )
    }

    fn x() -> Src {
        Src::Node("x".into(), 0)
    }

    #[test]
    fn a_zero_pad_before_a_valid_convolution_folds() {
        for op in CONVOLUTIONS {
            let ir = graph(
                pad(),
                SPATIAL,
                conv(op, "pad", "VALID", "NHWC", &[]),
                vec![],
            );
            let (input, explicit, pad_left) = folded(ir);
            assert_eq!(input, x(), "{op}");
            assert_eq!(explicit, Some(vec![0, 0, 0, 1, 2, 1, 0, 0]));
            assert!(!pad_left, "the Pad is pruned");
        }
    }

    #[test]
    fn explicit_paddings_add_up_and_nchw_pads_its_own_spatial_axes() {
        let existing = [0, 0, 1, 0, 0, 3, 0, 0];
        let c = conv("Conv2D", "pad", "EXPLICIT", "NHWC", &existing);
        let (_, explicit, _) = folded(graph(pad(), SPATIAL, c, vec![]));
        assert_eq!(explicit, Some(vec![0, 0, 1, 1, 2, 4, 0, 0]));
        let nchw = [[0, 0], [0, 0], [1, 2], [3, 0]];
        let c = conv("Conv2D", "pad", "VALID", "NCHW", &[]);
        let (input, explicit, _) = folded(graph(pad(), nchw, c, vec![]));
        assert_eq!((input, explicit), (x(), Some(vec![0, 0, 0, 0, 1, 2, 3, 0])));
        // NHWC's spatial padding is NCHW's channel padding.
        let c = conv("Conv2D", "pad", "VALID", "NCHW", &[]);
        let (input, _, _) = folded(graph(pad(), SPATIAL, c, vec![]));
        assert_ne!(input, x());
    }

    #[test]
    fn pad_v2_folds_only_with_a_positive_zero() {
        let fold = |value: &str| {
            let c = conv("Conv2D", "pad", "VALID", "NHWC", &[]);
            folded(graph(pad_v2(value), SPATIAL, c, vec![])).0 == x()
        };
        assert!(fold("zero"));
        assert!(!fold("one"));
        assert!(!fold("minus_zero"));
    }

    #[test]
    fn batch_or_channel_padding_stays() {
        for paddings in [
            [[1, 0], [0, 1], [0, 1], [0, 0]],
            [[0, 0], [0, 1], [0, 1], [0, 2]],
        ] {
            let c = conv("DepthwiseConv2dNative", "pad", "VALID", "NHWC", &[]);
            let (input, explicit, pad_left) = folded(graph(pad(), paddings, c, vec![]));
            assert_eq!(
                (input, explicit, pad_left),
                (Src::Node("pad".into(), 0), None, true)
            );
        }
    }

    #[test]
    fn same_padding_pooling_and_shared_pads_stay() {
        let c = conv("Conv2D", "pad", "SAME", "NHWC", &[]);
        assert_ne!(folded(graph(pad(), SPATIAL, c, vec![])).0, x());
        let pool = node("conv", "AvgPool", &["pad"], &[float()]);
        assert_ne!(folded(graph(pad(), SPATIAL, pool, vec![])).0, x());
        let other = node("other", "Relu", &["pad"], &[float()]);
        let c = conv("Conv2D", "pad", "VALID", "NHWC", &[]);
        let mut ir = graph(pad(), SPATIAL, c, vec![other]);
        ir.roots.push("other".into());
        assert_ne!(folded(ir).0, x());
        // A plan output or a control edge on the Pad keeps it too.
        let c = conv("Conv2D", "pad", "VALID", "NHWC", &[]);
        let mut ir = graph(pad(), SPATIAL, c, vec![]);
        ir.outputs.push(Src::Node("pad".into(), 0));
        assert_ne!(folded(ir).0, x());
        let mut c = conv("Conv2D", "pad", "VALID", "NHWC", &[]);
        c.control.push("pad".into());
        assert_ne!(folded(graph(pad(), SPATIAL, c, vec![])).0, x());
    }

    fn max_pool(padding: &str, format: &str, ksize: [i64; 4]) -> IrNode {
        let list = |i: Vec<i64>| {
            A::List(Box::new(ListValue {
                i,
                ..Default::default()
            }))
        };
        let attrs = [
            float(),
            ("padding", A::S(padding.as_bytes().to_vec())),
            ("data_format", A::S(format.as_bytes().to_vec())),
            ("ksize", list(ksize.to_vec())),
            ("strides", list(vec![1, 2, 2, 1])),
        ];
        let mut pool = node("conv", "MaxPool", &["pad"], &attrs);
        // TensorFlow's MaxPool nodes carry the attr's default, an empty list.
        pool.attrs
            .insert("explicit_paddings".into(), attr(list(Vec::new())));
        pool
    }

    #[test]
    fn a_zero_pad_before_a_valid_max_pool_folds_as_zero_padding() {
        let mut ir = graph(
            pad(),
            SPATIAL,
            max_pool("VALID", "NHWC", [1, 3, 3, 1]),
            vec![],
        );
        fold_pads(&mut ir);
        let pool = Attrs::new(&ir.nodes[ir.index["conv"]].attrs);
        assert_eq!(ir.nodes[ir.index["conv"]].inputs[0], x());
        assert_eq!(pool.string("padding"), Ok("EXPLICIT"));
        assert_eq!(
            pool.ints("explicit_paddings"),
            Ok(vec![0, 0, 0, 1, 2, 1, 0, 0])
        );
        assert_eq!(pool.bool(ZERO_PADDING), Ok(true));
        assert!(!ir.index.contains_key("pad"));
        // Convolutions are not marked: their padding holds zeros already.
        let c = conv("Conv2D", "pad", "VALID", "NHWC", &[]);
        let mut ir = graph(pad(), SPATIAL, c, vec![]);
        fold_pads(&mut ir);
        assert!(!Attrs::new(&ir.nodes[ir.index["conv"]].attrs).has(ZERO_PADDING));
    }

    #[test]
    fn a_mark_the_graph_carries_is_dropped() {
        let mut pool = max_pool("SAME", "NHWC", [1, 3, 3, 1]);
        pool.attrs.insert(ZERO_PADDING.into(), attr(A::B(true)));
        let mut ir = graph(pad(), SPATIAL, pool, vec![]);
        fold_pads(&mut ir);
        let pool = &ir.nodes[ir.index["conv"]];
        assert_eq!(pool.inputs[0], Src::Node("pad".into(), 0));
        assert!(!pool.attrs.contains_key(ZERO_PADDING));
    }

    #[test]
    fn max_pools_with_their_own_padding_or_a_channel_window_keep_the_pad() {
        for pool in [
            max_pool("SAME", "NHWC", [1, 3, 3, 1]),
            max_pool("VALID", "NHWC", [1, 1, 1, 2]),
            max_pool("VALID", "NCHW", [1, 2, 1, 1]),
        ] {
            let (input, explicit, pad_left) = folded(graph(pad(), SPATIAL, pool, vec![]));
            assert_eq!(
                (input, explicit, pad_left),
                (Src::Node("pad".into(), 0), None, true)
            );
        }
    }

    #[test]
    fn a_chain_of_pads_folds_whole() {
        let inner = node("pad0", "Pad", &["x", "paddings"], &[float()]);
        let outer = node("pad", "Pad", &["pad0", "paddings"], &[float()]);
        let c = conv("Conv2D", "pad", "VALID", "NHWC", &[]);
        let (input, explicit, _) = folded(graph(outer, SPATIAL, c, vec![inner]));
        assert_eq!((input, explicit), (x(), Some(vec![0, 0, 0, 2, 4, 2, 0, 0])));
    }
}
