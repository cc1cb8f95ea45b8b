//! EnsureShape: passes its input through after checking it against the `shape` attr (a
//! partial shape: -1 dims and an unknown rank match anything).

use crate::engine::kernel::{boxed, fail, tensor_input, Kernel, NodeSpec};
use crate::engine::value::Value;

pub fn ensure_shape(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let expected = node.attrs.partial_shape("shape")?;
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        if let Some(dims) = &expected {
            if !compatible(x.shape(), dims) {
                return Err(fail(format!(
                    "Shape of tensor {:?} is not compatible with expected shape {dims:?}.",
                    x.shape()
                )));
            }
        }
        Ok(vec![Value::Tensor(x)])
    }))
}

fn compatible(shape: &[usize], dims: &[i64]) -> bool {
    shape.len() == dims.len()
        && shape
            .iter()
            .zip(dims)
            .all(|(&s, &d)| d < 0 || usize::try_from(d).is_ok_and(|d| d == s))
}

#[cfg(test)]
mod tests {
    use super::compatible;

    #[test]
    fn partial_shapes_match_known_dims_only() {
        assert!(compatible(&[2, 3], &[-1, 3]));
        assert!(!compatible(&[2, 3], &[2, 4]));
        assert!(!compatible(&[2, 3], &[2, 3, 1]));
        assert!(compatible(&[], &[]));
    }
}
