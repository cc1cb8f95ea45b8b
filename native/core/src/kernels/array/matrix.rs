//! stub

use crate::engine::Registry;

pub fn register(_r: &mut Registry) {}
