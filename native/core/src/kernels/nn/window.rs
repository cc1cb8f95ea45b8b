//! Sliding-window geometry shared by convolutions and pooling: the attrs (strides, dilations,
//! padding, data_format) checked once per node, and each spatial axis's padding and output
//! size computed as TensorFlow's GetWindowedOutputSize does.

use crate::engine::attrs::Attrs;
use crate::engine::kernel::{fail, KResult};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    Same,
    Valid,
    Explicit,
}

/// A window sliding along one spatial axis.
#[derive(Clone, Copy, Debug)]
pub struct Axis {
    pub window: usize,
    pub stride: usize,
    pub dilation: usize,
    /// Padding before the first input element.
    pub before: usize,
    pub out: usize,
}

impl Axis {
    /// The input index that tap `t` of output `o` reads, None where it falls in the padding.
    #[inline]
    pub fn source(&self, o: usize, t: usize, size: usize) -> Option<usize> {
        (o * self.stride + t * self.dilation)
            .checked_sub(self.before)
            .filter(|&i| i < size)
    }
}

impl Axis {
    /// The taps of output `o` that read an input element (not padding): a range, since the
    /// source index grows with the tap index.
    pub fn taps(&self, o: usize, size: usize) -> std::ops::Range<usize> {
        let start = o * self.stride;
        // Tap t reads start + t·dilation - before, which must lie in 0..size.
        let lo = self.before.saturating_sub(start).div_ceil(self.dilation);
        let hi = (size + self.before)
            .checked_sub(start + 1)
            .map_or(0, |last| last / self.dilation + 1)
            .min(self.window);
        lo.min(hi)..hi
    }

    /// For each tap, the outputs whose tap reads an input element (not padding) and the input
    /// element the first of them reads: the same on every line of a pooling or convolution,
    /// so worked out once per call (the divisions in them cost as much as pooling a short
    /// line).
    pub fn spans(&self, size: usize) -> Vec<(std::ops::Range<usize>, usize)> {
        (0..self.window)
            .map(|t| {
                let valid = self.valid(t, size);
                let first =
                    (valid.start * self.stride + t * self.dilation).saturating_sub(self.before);
                (valid, first)
            })
            .collect()
    }

    /// The outputs whose tap `t` reads an input element (not padding): a range, since the
    /// source index grows with the output index.
    pub fn valid(&self, t: usize, size: usize) -> std::ops::Range<usize> {
        let offset = t * self.dilation;
        // Output o reads o·stride + offset - before, which must lie in 0..size.
        let lo = self.before.saturating_sub(offset).div_ceil(self.stride);
        let hi = (size + self.before)
            .checked_sub(offset + 1)
            .map_or(0, |last| last / self.stride + 1)
            .min(self.out);
        lo.min(hi)..hi
    }
}

/// The validated attrs of a 2-D windowed op, in NHWC order.
#[derive(Clone, Debug)]
pub struct Spec {
    pub channels_first: bool,
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    pub padding: Padding,
    /// (before, after) per spatial axis, for EXPLICIT padding.
    pub explicit: [[usize; 2]; 2],
}

/// C++ division (toward zero), which TensorFlow's output sizes use: a VALID window larger
/// than the input by less than a stride gives size 0, not -1.
fn trunc_div(a: i64, b: i64) -> i64 {
    a / b
}

impl Spec {
    /// Both spatial axes for an input of `height` × `width` and a `window`.
    pub fn axes(&self, height: usize, width: usize, window: [usize; 2]) -> KResult<[Axis; 2]> {
        Ok([
            self.axis(0, height, window[0])?,
            self.axis(1, width, window[1])?,
        ])
    }

    fn axis(&self, d: usize, size: usize, window: usize) -> KResult<Axis> {
        let geometry = Window {
            size,
            window,
            stride: self.strides[d],
            dilation: self.dilations[d],
        };
        geometry.axis(self.padding, self.explicit[d])
    }
}

/// One spatial axis of a windowed op before padding is resolved: the input size, the window
/// and its stride and dilation.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub size: usize,
    pub window: usize,
    pub stride: usize,
    pub dilation: usize,
}

impl Window {
    /// The axis under `padding` (`explicit` is (before, after), used unless SAME), with
    /// TensorFlow's output size and its error for a window that does not fit.
    pub fn axis(self, padding: Padding, explicit: [usize; 2]) -> KResult<Axis> {
        let Window {
            size,
            window,
            stride,
            dilation,
        } = self;
        let big = |x: usize| i64::try_from(x).map_err(|_| fail(format!("size {x} is too large")));
        let (size_i, stride_i) = (big(size)?, big(stride)?);
        let extent = (big(window)? - 1)
            .checked_mul(big(dilation)?)
            .and_then(|e| e.checked_add(1))
            .ok_or_else(|| {
                fail(format!(
                    "window {window} dilated by {dilation} is too large"
                ))
            })?;
        let (before, out) = match padding {
            Padding::Same => {
                let out = trunc_div(size_i.saturating_add(stride_i - 1), stride_i);
                let needed = ((out - 1).saturating_mul(stride_i) + extent - size_i).max(0);
                (needed / 2, out)
            }
            Padding::Valid | Padding::Explicit => {
                let [before, after] = explicit;
                let padded = size_i
                    .saturating_add(big(before)?)
                    .saturating_add(big(after)?);
                let span = (padded - extent).saturating_add(stride_i);
                (big(before)?, trunc_div(span, stride_i))
            }
        };
        let out = usize::try_from(out).map_err(|_| {
            fail(format!(
                "Computed output size would be negative: {out} [input_size: {size}, \
                 effective_filter_size: {extent}, stride: {stride}]"
            ))
        })?;
        Ok(Axis {
            window,
            stride,
            dilation,
            before: before as usize,
            out,
        })
    }
}

/// A 4-element attr in data_format order as (batch, height, width, channels).
pub fn split(values: &[i64], channels_first: bool, what: &str) -> Result<[i64; 4], String> {
    match *values {
        [n, a, b, c] if channels_first => Ok([n, b, c, a]),
        [n, a, b, c] => Ok([n, a, b, c]),
        _ => Err(format!("{what} must specify 4 dimensions, got {values:?}")),
    }
}

/// Whether the node's data_format puts channels first (NCHW) rather than last (NHWC).
pub fn channels_first(attrs: &Attrs) -> Result<bool, String> {
    match attrs.string_or("data_format", "NHWC")? {
        "NHWC" => Ok(false),
        "NCHW" => Ok(true),
        other => Err(format!("unsupported data_format {other:?}")),
    }
}

/// The padding attr and the explicit paddings (NHWC order) it allows.
pub fn padding(attrs: &Attrs, channels_first: bool) -> Result<(Padding, [[usize; 2]; 2]), String> {
    let padding = match attrs.string("padding")? {
        "SAME" => Padding::Same,
        "VALID" => Padding::Valid,
        "EXPLICIT" => Padding::Explicit,
        other => return Err(format!("unknown padding {other:?}")),
    };
    let explicit = attrs.ints_or("explicit_paddings", &[])?;
    if padding != Padding::Explicit {
        if !explicit.is_empty() {
            return Err("explicit_paddings must be empty unless padding is EXPLICIT".into());
        }
        return Ok((padding, [[0, 0]; 2]));
    }
    if explicit.len() != 8 {
        return Err(format!(
            "explicit_paddings must have 8 elements, got {}",
            explicit.len()
        ));
    }
    let pairs: Vec<[usize; 2]> = explicit
        .chunks_exact(2)
        .map(|p| match (usize::try_from(p[0]), usize::try_from(p[1])) {
            (Ok(a), Ok(b)) => Ok([a, b]),
            _ => Err("All elements of explicit_paddings must be nonnegative".to_string()),
        })
        .collect::<Result<_, _>>()?;
    let order = if channels_first {
        [0, 2, 3, 1]
    } else {
        [0, 1, 2, 3]
    };
    let [n, h, w, c] = order.map(|i| pairs[i]);
    if n != [0, 0] || c != [0, 0] {
        return Err(
            "Nonzero explicit padding in the batch or depth dimensions is not supported".into(),
        );
    }
    Ok((padding, [h, w]))
}

/// The validated attrs of a convolution.
pub fn conv_spec(attrs: &Attrs) -> Result<Spec, String> {
    let channels_first = channels_first(attrs)?;
    let strides = split(&attrs.ints("strides")?, channels_first, "strides")?;
    let dilations = split(
        &attrs.ints_or("dilations", &[1, 1, 1, 1])?,
        channels_first,
        "dilations",
    )?;
    if strides[0] != 1 || strides[3] != 1 {
        return Err(
            "Current implementation does not yet support strides in the batch and \
                    depth dimensions."
                .into(),
        );
    }
    if dilations[0] != 1 || dilations[3] != 1 {
        return Err(
            "Current implementation does not yet support dilations in the batch and \
                    depth dimensions."
                .into(),
        );
    }
    let positive = |v: i64, what: &str| {
        usize::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| format!("{what} must be positive, got {v}"))
    };
    let (padding, explicit) = padding(attrs, channels_first)?;
    Ok(Spec {
        channels_first,
        strides: [
            positive(strides[1], "strides")?,
            positive(strides[2], "strides")?,
        ],
        dilations: [
            positive(dilations[1], "dilations")?,
            positive(dilations[2], "dilations")?,
        ],
        padding,
        explicit,
    })
}

/// The shape of a rank-4 input as [usize; 4], or an error naming it.
pub fn rank4(shape: &[usize], what: &str) -> KResult<[usize; 4]> {
    <[usize; 4]>::try_from(shape)
        .map_err(|_| fail(format!("{what} must be 4-dimensional, got shape {shape:?}")))
}

/// An NCHW shape in NHWC order (unchanged for NHWC).
pub fn nhwc(shape: [usize; 4], channels_first: bool) -> [usize; 4] {
    let [n, a, b, c] = shape;
    if channels_first {
        [n, b, c, a]
    } else {
        shape
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(padding: Padding, stride: usize, dilation: usize) -> Spec {
        Spec {
            channels_first: false,
            strides: [stride; 2],
            dilations: [dilation; 2],
            padding,
            explicit: [[0, 0]; 2],
        }
    }

    #[test]
    fn output_sizes_follow_tensorflow() {
        let [a, _] = spec(Padding::Same, 2, 1).axes(7, 7, [4, 4]).unwrap();
        assert_eq!((a.out, a.before), (4, 1));
        let [a, _] = spec(Padding::Valid, 2, 1).axes(5, 5, [6, 1]).unwrap();
        assert_eq!(a.out, 0);
        assert!(spec(Padding::Valid, 1, 1).axes(5, 5, [7, 1]).is_err());
        let [a, _] = spec(Padding::Same, 1, 2).axes(7, 7, [3, 3]).unwrap();
        assert_eq!((a.out, a.before), (7, 2));
        assert_eq!(a.source(0, 0, 7), None);
        assert_eq!(a.source(0, 1, 7), Some(0));
        for t in 0..3 {
            let valid: Vec<usize> = (0..a.out)
                .filter(|&o| a.source(o, t, 7).is_some())
                .collect();
            assert_eq!(a.valid(t, 7).collect::<Vec<_>>(), valid);
        }
        let [b, _] = spec(Padding::Valid, 3, 1).axes(8, 8, [2, 2]).unwrap();
        for t in 0..2 {
            let valid: Vec<usize> = (0..b.out)
                .filter(|&o| b.source(o, t, 8).is_some())
                .collect();
            assert_eq!(b.valid(t, 8).collect::<Vec<_>>(), valid);
        }
        for o in 0..a.out {
            let taps: Vec<usize> = (0..3).filter(|&t| a.source(o, t, 7).is_some()).collect();
            assert_eq!(a.taps(o, 7).collect::<Vec<_>>(), taps);
        }
    }
}
