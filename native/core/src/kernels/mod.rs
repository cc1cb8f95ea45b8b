//! The native kernels, one family per module; each module's `register` adds its ops to the one
//! registry, which is built once per process.

use std::sync::{Arc, OnceLock};

use crate::engine::Registry;

pub mod array;
pub mod bottleneck;
pub mod codecs;
pub mod control;
pub mod control_v1;
pub mod fused;
mod fused_scale;
pub mod gelu;
pub mod image;
pub mod linalg;
pub mod math;
pub mod nn;
pub mod parsing;
pub mod random;
pub mod rnn;
mod rnn_gates;
pub mod rnn_loop;
pub mod signal;
pub mod special;
pub mod state;
pub mod strings;
#[cfg(test)]
mod test_util;
pub mod util;

/// Every kernel of the native engine.
pub fn registry() -> Arc<Registry> {
    static REGISTRY: OnceLock<Arc<Registry>> = OnceLock::new();
    REGISTRY
        .get_or_init(|| {
            let mut r = Registry::default();
            control::register(&mut r);
            control_v1::register(&mut r);
            state::register(&mut r);
            math::register(&mut r);
            nn::register(&mut r);
            random::register(&mut r);
            array::register(&mut r);
            strings::register(&mut r);
            image::register(&mut r);
            codecs::register(&mut r);
            parsing::register(&mut r);
            special::register(&mut r);
            linalg::register(&mut r);
            signal::register(&mut r);
            // Last: the fused ops exist for the base ops registered above.
            fused::register(&mut r);
            bottleneck::register(&mut r);
            gelu::register(&mut r);
            rnn::register(&mut r);
            rnn_loop::register(&mut r);
            Arc::new(r)
        })
        .clone()
}
