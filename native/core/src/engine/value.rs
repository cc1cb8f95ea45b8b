//! What flows along a graph's edges: tensors, handles to state (variables, lookup tables), and
//! TensorLists. Values are cheap to clone (reference counted), since one output may feed many
//! consumers and a function call passes its inputs on as they are.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};

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
                value: RwLock::new(None),
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
    value: RwLock<Option<Arc<Tensor>>>,
}

impl Variable {
    /// The current value, None before the first assignment.
    pub fn read(&self) -> Option<Arc<Tensor>> {
        self.value.read().ok().and_then(|v| v.clone())
    }

    pub fn assign(&self, value: Arc<Tensor>) {
        if let Ok(mut slot) = self.value.write() {
            *slot = Some(value);
        }
    }

    /// Replaces the value with `f(current)` under the write lock, so concurrent updates
    /// (assign_add from two threads) do not lose one another.
    pub fn update<E>(
        &self,
        f: impl FnOnce(Option<&Arc<Tensor>>) -> Result<Arc<Tensor>, E>,
    ) -> Result<Arc<Tensor>, E> {
        let mut slot = match self.value.write() {
            Ok(slot) => slot,
            Err(poisoned) => poisoned.into_inner(),
        };
        let new = f(slot.as_ref())?;
        *slot = Some(new.clone());
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
