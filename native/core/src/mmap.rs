//! The one place that memory-maps files (the only `unsafe` of the crate).
//!
//! Why a map is sound here: the file is opened read-only by [`crate::file::open_regular`] (so it
//! is a regular file, never a FIFO or device), the map is private and read-only, and the bytes
//! are only lent out as `&[u8]` borrowing the [`Mapped`] value, so no reference outlives the
//! map. The remaining caveat is the one every reader of mapped files shares: if another process
//! truncates the file while it is mapped, touching the lost pages raises SIGBUS. Shards are
//! written once under a temporary name and renamed into place, so a checkpoint being read is not
//! rewritten in place.
//!
//! [`Mapped::release`] gives pages back (`MADV_DONTNEED`). Why that is sound: the map is private
//! and never written, so its pages are clean copies of the file; dropping them loses nothing,
//! and the next access reads the same bytes from the file again. Slices borrowed from the map
//! stay valid and keep their contents.

use std::path::Path;

use memmap2::{Mmap, UncheckedAdvice};

use crate::error::Result;
use crate::file::{io_error, open_regular};

/// The bytes of one file, mapped or read into memory.
pub struct Mapped {
    bytes: Bytes,
}

enum Bytes {
    Map(Mmap),
    Owned(Vec<u8>),
}

impl Mapped {
    /// Maps the regular file at `path`; an empty file (which cannot be mapped) is read.
    pub fn map(path: &Path) -> Result<Self> {
        let file = open_regular(path)?;
        let len = file.metadata().map_err(|err| io_error(path, err))?.len();
        if len == 0 {
            return Ok(Self::owned(Vec::new()));
        }
        // SAFETY: see the module documentation: a read-only private map of a regular file,
        // borrowed only through `bytes()`, so it lives as long as every slice taken from it.
        let map = unsafe { Mmap::map(&file) }.map_err(|err| io_error(path, err))?;
        Ok(Self {
            bytes: Bytes::Map(map),
        })
    }

    fn owned(data: Vec<u8>) -> Self {
        Self {
            bytes: Bytes::Owned(data),
        }
    }

    /// Drops the resident pages of `range` once their bytes have been copied out (a model's
    /// weights are decoded into tensors of their own), so that loading does not hold a second
    /// copy of every shard in memory. Advice only: failure changes nothing but memory use.
    pub fn release(&self, range: std::ops::Range<usize>) {
        if let Bytes::Map(map) = &self.bytes {
            let len = range.end.min(map.len()).saturating_sub(range.start);
            if len > 0 {
                // SAFETY: see the module documentation: the private map is never written, so
                // discarding its pages only makes the kernel read the file again on access.
                let _ = unsafe {
                    map.unchecked_advise_range(UncheckedAdvice::DontNeed, range.start, len)
                };
            }
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Map(map) => map,
            Bytes::Owned(data) => data,
        }
    }
}
