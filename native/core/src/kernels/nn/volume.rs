//! Geometry shared by the volumetric (3-D) convolutions and pools: their five-element attrs in
//! data_format order (NDHWC, or NCDHW, which TensorFlow's GPU kernels accept and graphs
//! exported on such machines carry), checked once per node, each spatial axis's window as the
//! 2-D ops compute it (window.rs), and the transposes that let every kernel work in NDHWC.

use crate::engine::attrs::Attrs;
use crate::engine::kernel::{fail, KResult};
use crate::kernels::nn::layout::permute;
use crate::kernels::nn::window::{Axis, Padding, Window};

/// The validated strides, dilations and padding of a 3-D windowed op, spatial axes in
/// (depth, height, width) order.
#[derive(Clone, Debug)]
pub struct Spec3 {
    pub channels_first: bool,
    pub strides: [usize; 3],
    pub dilations: [usize; 3],
    pub padding: Padding,
}

impl Spec3 {
    /// The three spatial axes for an input of `size` and a `window`.
    pub fn axes(&self, size: [usize; 3], window: [usize; 3]) -> KResult<[Axis; 3]> {
        let axis = |d: usize| {
            Window {
                size: size[d],
                window: window[d],
                stride: self.strides[d],
                dilation: self.dilations[d],
            }
            .axis(self.padding, [0, 0])
        };
        Ok([axis(0)?, axis(1)?, axis(2)?])
    }
}

/// Whether the node's data_format puts channels first (NCDHW) rather than last (NDHWC).
pub fn channels_first(attrs: &Attrs) -> Result<bool, String> {
    match attrs.string_or("data_format", "NDHWC")? {
        "NDHWC" => Ok(false),
        "NCDHW" => Ok(true),
        other => Err(format!("unsupported data_format {other:?}")),
    }
}

/// The padding attr: the 3-D ops have no EXPLICIT padding.
pub fn padding(attrs: &Attrs) -> Result<Padding, String> {
    match attrs.string("padding")? {
        "SAME" => Ok(Padding::Same),
        "VALID" => Ok(Padding::Valid),
        other => Err(format!("unknown padding {other:?}")),
    }
}

/// A 5-element attr (or input) in data_format order as (batch, depth, height, width,
/// channels).
pub fn split(values: &[i64], channels_first: bool, what: &str) -> Result<[i64; 5], String> {
    match *values {
        [n, c, d, h, w] if channels_first => Ok([n, d, h, w, c]),
        [n, d, h, w, c] => Ok([n, d, h, w, c]),
        _ => Err(format!("{what} must specify 5 dimensions, got {values:?}")),
    }
}

/// The spatial entries of an NDHWC-ordered attr, each of which must be positive.
pub fn positive(values: [i64; 5], what: &str) -> Result<[usize; 3], String> {
    let one = |v: i64| {
        usize::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| format!("{what} must be positive, got {values:?}"))
    };
    Ok([one(values[1])?, one(values[2])?, one(values[3])?])
}

/// The validated attrs of Conv3D and its input gradient.
pub fn conv_spec(attrs: &Attrs) -> Result<Spec3, String> {
    let channels_first = channels_first(attrs)?;
    let strides = split(&attrs.ints("strides")?, channels_first, "strides")?;
    let dilations = split(
        &attrs.ints_or("dilations", &[1; 5])?,
        channels_first,
        "dilations",
    )?;
    if strides[0] != 1 || strides[4] != 1 {
        return Err(
            "Current implementation does not yet support strides in the batch and depth \
             dimensions."
                .into(),
        );
    }
    if dilations[0] != 1 || dilations[4] != 1 {
        return Err(
            "Current implementation does not yet support dilations in the batch and depth \
             dimensions."
                .into(),
        );
    }
    Ok(Spec3 {
        channels_first,
        strides: positive(strides, "strides")?,
        dilations: positive(dilations, "dilations")?,
        padding: padding(attrs)?,
    })
}

/// The shape of a rank-5 input, or an error naming it.
pub fn rank5(shape: &[usize], what: &str) -> KResult<[usize; 5]> {
    <[usize; 5]>::try_from(shape)
        .map_err(|_| fail(format!("{what} must be 5-dimensional, got shape {shape:?}")))
}

/// A stored shape in NDHWC order (unchanged for NDHWC).
pub fn ndhwc(shape: [usize; 5], channels_first: bool) -> [usize; 5] {
    let [n, a, b, c, d] = shape;
    if channels_first {
        [n, b, c, d, a]
    } else {
        shape
    }
}

/// An NDHWC shape as stored under the data_format.
pub fn stored(shape: [usize; 5], channels_first: bool) -> Vec<usize> {
    let [n, d, h, w, c] = shape;
    if channels_first {
        vec![n, c, d, h, w]
    } else {
        shape.to_vec()
    }
}

/// An NCDHW buffer of `shape` (NCDHW order) as NDHWC.
pub fn to_last<T: Copy>(data: &[T], shape: [usize; 5]) -> Vec<T> {
    permute(data, &shape, &[0, 2, 3, 4, 1])
}

/// An NDHWC buffer of `shape` (NDHWC order) as NCDHW.
pub fn to_first<T: Copy>(data: &[T], shape: [usize; 5]) -> Vec<T> {
    permute(data, &shape, &[0, 4, 1, 2, 3])
}

/// Output position `p` (counted over batch, depth, height, width) as (image, [od, oh, ow]).
#[inline]
pub fn position(p: usize, outs: [usize; 3]) -> (usize, [usize; 3]) {
    let [od, oh, ow] = outs.map(|o| o.max(1));
    let (rest, x) = (p / ow, p % ow);
    let (rest, y) = (rest / oh, rest % oh);
    (rest / od, [rest % od, y, x])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_split_and_positions_decode() {
        assert_eq!(split(&[1, 2, 3, 4, 5], true, "s").unwrap(), [1, 3, 4, 5, 2]);
        assert!(split(&[1, 2, 3, 4], false, "s").is_err());
        assert!(positive([1, 0, 1, 1, 1], "strides").is_err());
        assert_eq!(position(2 * 12 + 5, [2, 3, 4]), (1, [0, 1, 1]));
        let x: Vec<i32> = (0..120).collect();
        let back = to_first(&to_last(&x, [2, 3, 4, 5, 1]), [2, 4, 5, 1, 3]);
        assert_eq!(back, x);
        assert_eq!(ndhwc([1, 3, 4, 5, 6], true), [1, 4, 5, 6, 3]);
        assert_eq!(stored([1, 4, 5, 6, 3], true), vec![1, 3, 4, 5, 6]);
    }
}
