//! harel's metrics, published in CloudWatch's embedded metric format (EMF: [`EmfError`]). One
//! invocation aggregates what it measured and prints one document for the function and one
//! per machine (and per remote action, and per pinned machine version) it touched: EMF takes a
//! dimension's value from the document's root, so two machines cannot share a document. Timings
//! are sent as value arrays (CloudWatch computes the percentiles); a timing with more samples
//! than a document holds spills into further documents instead of losing samples.
//!
//! Its parts: `catalog` (the namespace, dimensions and metrics), `invocation` (one
//! invocation's measurements and their documents), `functions` (each function's metrics from
//! its invocation's report).

mod catalog;
mod functions;
mod invocation;

pub use crate::emf::EmfError;
pub use catalog::*;
pub use functions::*;
pub use invocation::*;

#[cfg(test)]
mod tests;
