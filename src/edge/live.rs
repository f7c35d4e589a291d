//! The live configuration in this isolate: the version of the live layer it last read, compiled.

use std::cell::RefCell;
use std::sync::Arc;

use crate::catalog::Catalog;

thread_local! {
    static CURRENT: RefCell<Option<Arc<Catalog>>> = const { RefCell::new(None) };
}

/// The live catalog this isolate read last; `None` when it serves the bundled file.
pub(super) fn current() -> Option<Arc<Catalog>> {
    CURRENT.with(|c| c.borrow().clone())
}
