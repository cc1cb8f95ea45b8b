//! Float32 scratch buffers kept per thread between calls. A kernel that needs a few hundred
//! KB of working memory a call (a fused block's bands, a Winograd convolution's transformed
//! tiles and filter) would otherwise allocate and zero it every call: about 6 MB a call for
//! MobileNetV2 at batch 1, and memset was 8% of a 14x14 Winograd layer's time.

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};

use crate::engine::kernel::{fail, KResult};

/// The most buffers a thread keeps; a kernel holds at most a handful at once.
const KEPT: usize = 8;

thread_local! {
    static POOL: RefCell<Vec<Vec<f32>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of a requested length borrowed from the thread's pool, given back when dropped.
/// Its contents are whatever an earlier user left (zeros when new): only for a kernel that
/// writes every element it later reads.
pub struct Kept {
    /// Every value initialized (its length only grows), so a buffer reused for a larger
    /// request zeroes only what it had never held.
    buffer: Vec<f32>,
    len: usize,
}

impl Kept {
    /// A buffer of `len` values: the smallest kept one that holds them, else the largest
    /// grown (growing zeroes only the new part), else a new one.
    pub fn new(len: usize) -> KResult<Kept> {
        let mut buffer = POOL
            .try_with(|pool| {
                let mut pool = pool.borrow_mut();
                let fits = (0..pool.len())
                    .filter(|&i| pool[i].len() >= len)
                    .min_by_key(|&i| pool[i].len());
                let pick = fits.or_else(|| (0..pool.len()).max_by_key(|&i| pool[i].len()));
                pick.map(|i| pool.swap_remove(i))
            })
            .ok()
            .flatten()
            .unwrap_or_default();
        if buffer.len() < len {
            buffer
                .try_reserve_exact(len - buffer.len())
                .map_err(|_| fail(format!("cannot allocate a scratch buffer of {len} values")))?;
            buffer.resize(len, 0.0);
        }
        Ok(Kept { buffer, len })
    }
}

impl Deref for Kept {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        &self.buffer[..self.len]
    }
}

impl DerefMut for Kept {
    fn deref_mut(&mut self) -> &mut [f32] {
        &mut self.buffer[..self.len]
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let buffer = std::mem::take(&mut self.buffer);
        // A thread that is exiting keeps nothing; the error is that.
        let _ = POOL.try_with(|pool| {
            let mut pool = pool.borrow_mut();
            if pool.len() < KEPT {
                pool.push(buffer);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::Kept;

    #[test]
    fn a_buffer_comes_back_with_the_length_asked_for() {
        let first = Kept::new(1000).unwrap();
        let address = first.as_ptr();
        drop(first);
        let again = Kept::new(500).unwrap();
        assert_eq!(again.len(), 500);
        assert_eq!(again.as_ptr(), address, "the kept buffer is reused");
        let other = Kept::new(2000).unwrap();
        assert_eq!(other.len(), 2000);
        assert!(other.iter().all(|&v| v == 0.0), "a new buffer is zeros");
    }
}
