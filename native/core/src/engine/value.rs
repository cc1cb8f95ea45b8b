//! What flows along a graph's edges: tensors, handles to state (variables, lookup tables),
//! TensorLists, and variant tensors of encoded ragged tensors (see [`super::variant`]). Values
//! are cheap to clone (reference counted), since one output may feed many consumers and a
//! function call passes its inputs on as they are.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use super::variant::{VariantList, VariantTensor};
use crate::dtype::DType;
use crate::tensor::Tensor;

/// One output of a node.
#[derive(Clone)]
pub enum Value {
    Tensor(Arc<Tensor>),
    /// A resource handle (`DT_RESOURCE`).
    Resource(Resource),
    /// A TensorFlow 1 reference variable's output (`VariableV2`): consumers that want a tensor
    /// read its current value; Assign and friends change it.
    Ref(Resource),
    /// A TensorList (`DT_VARIANT`), value semantics: ops that change it return a new list.
    List(Arc<TensorList>),
    /// A `DT_VARIANT` tensor of encoded ragged tensors (RaggedTensorToVariant).
    Variant(Arc<VariantTensor>),
    /// A TensorList whose elements are such variant tensors (tf.map_fn over a ragged tensor).
    VariantList(Arc<VariantList>),
}

impl Value {
    pub fn tensor(t: Tensor) -> Self {
        Self::Tensor(Arc::new(t))
    }

    /// A short description for errors ("float32 tensor of shape [2, 3]", "resource").
    pub fn describe(&self) -> String {
        match self {
            Self::Tensor(t) => format!("{} tensor of shape {:?}", t.dtype(), t.shape()),
            Self::Resource(r) => format!("resource {}", r.name()),
            Self::Ref(r) => format!("reference variable {}", r.name()),
            Self::List(_) => "TensorList".into(),
            Self::Variant(v) => format!("variant tensor of shape {:?}", v.shape()),
            Self::VariantList(_) => "TensorList of variant tensors".into(),
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Shared state that handles point at. Two handles are the same resource when they share the
/// `Arc`, which is how signatures and functions share variables.
#[derive(Clone)]
pub struct Resource(pub Arc<ResourceState>);

pub struct ResourceState {
    /// `container/shared_name`, for errors and for listing variables.
    pub name: String,
    pub kind: ResourceKind,
}

pub enum ResourceKind {
    Variable(Variable),
    /// Any other state a kernel family keeps (lookup tables); the family downcasts it.
    Other(Mutex<Box<dyn Any + Send>>),
}

impl Resource {
    pub fn variable(name: String, dtype: Option<DType>) -> Self {
        Self(Arc::new(ResourceState {
            name,
            kind: ResourceKind::Variable(Variable {
                dtype,
                value: RwLock::new(Slot::Empty),
            }),
        }))
    }

    pub fn other(name: String, state: Box<dyn Any + Send>) -> Self {
        Self(Arc::new(ResourceState {
            name,
            kind: ResourceKind::Other(Mutex::new(state)),
        }))
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    pub fn as_variable(&self) -> Option<&Variable> {
        match &self.0.kind {
            ResourceKind::Variable(v) => Some(v),
            ResourceKind::Other(_) => None,
        }
    }

    pub fn same(&self, other: &Resource) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A variable: its declared dtype (None when the op that made it did not say) and current value.
pub struct Variable {
    pub dtype: Option<DType>,
    value: RwLock<Slot>,
}

enum Slot {
    Empty,
    Held(Arc<Tensor>),
    /// Restored from a checkpoint and not assigned since: the checkpoint holds the value, read
    /// again when asked for. Plans keep what they use (often weights scaled by batch norm, not
    /// these), so a loaded model does not hold its raw weights twice; `in_use` shares the copy
    /// read last while anything still holds it.
    Stored {
        source: Arc<dyn Stored>,
        in_use: Weak<Tensor>,
    },
}

/// Where a restored variable's value can be read again.
pub trait Stored: Send + Sync {
    fn load(&self) -> crate::error::Result<Tensor>;
}

impl Variable {
    /// The current value, None before the first assignment; an error only when a restored
    /// value cannot be read again from its checkpoint. A value read again is kept from then on:
    /// a kernel reads it at run time (a loop body reading weights through a handle), and will
    /// again.
    pub fn read(&self) -> crate::error::Result<Option<Arc<Tensor>>> {
        self.get(true)
    }

    /// The current value, like [`Self::read`], without keeping a value read again from the
    /// checkpoint: listing a model's variables should not double its memory.
    pub fn peek(&self) -> crate::error::Result<Option<Arc<Tensor>>> {
        self.get(false)
    }

    fn get(&self, keep: bool) -> crate::error::Result<Option<Arc<Tensor>>> {
        let source = match &*self.value.read().unwrap_or_else(PoisonError::into_inner) {
            Slot::Empty => return Ok(None),
            Slot::Held(value) => return Ok(Some(Arc::clone(value))),
            Slot::Stored { source, in_use } => match in_use.upgrade() {
                Some(value) => return Ok(Some(value)),
                None => Arc::clone(source),
            },
        };
        let value = Arc::new(source.load()?);
        let mut slot = self.value.write().unwrap_or_else(PoisonError::into_inner);
        match &mut *slot {
            Slot::Stored { source: s, in_use } if Arc::ptr_eq(s, &source) => {
                if keep {
                    *slot = Slot::Held(Arc::clone(&value));
                } else {
                    *in_use = Arc::downgrade(&value);
                }
                Ok(Some(value))
            }
            // Assigned meanwhile: the assignment wins.
            Slot::Held(current) => Ok(Some(Arc::clone(current))),
            _ => Ok(Some(value)),
        }
    }

    /// Restores the value `value` read from `source`, which can read it again once nothing
    /// holds `value` any more.
    pub fn restore(&self, value: &Arc<Tensor>, source: Arc<dyn Stored>) {
        *self.value.write().unwrap_or_else(PoisonError::into_inner) = Slot::Stored {
            source,
            in_use: Arc::downgrade(value),
        };
    }

    pub fn assign(&self, value: Arc<Tensor>) {
        *self.value.write().unwrap_or_else(PoisonError::into_inner) = Slot::Held(value);
    }

    /// Replaces the value with `f(current)` under the write lock, so concurrent updates
    /// (assign_add from two threads) do not lose one another.
    pub fn update(
        &self,
        f: impl FnOnce(Option<&Arc<Tensor>>) -> crate::error::Result<Arc<Tensor>>,
    ) -> crate::error::Result<Arc<Tensor>> {
        let mut slot = self.value.write().unwrap_or_else(PoisonError::into_inner);
        let current = match &*slot {
            Slot::Empty => None,
            Slot::Held(value) => Some(Arc::clone(value)),
            Slot::Stored { source, in_use } => match in_use.upgrade() {
                Some(value) => Some(value),
                None => Some(Arc::new(source.load()?)),
            },
        };
        let new = f(current.as_ref())?;
        *slot = Slot::Held(Arc::clone(&new));
        Ok(new)
    }
}

/// A list of tensors with an element dtype and (partial) element shape; unset items are None.
#[derive(Clone, Debug)]
pub struct TensorList {
    pub element_dtype: DType,
    /// -1 for an unknown dimension; None for an unknown rank.
    pub element_shape: Option<Vec<i64>>,
    pub items: Vec<Option<Arc<Tensor>>>,
}
