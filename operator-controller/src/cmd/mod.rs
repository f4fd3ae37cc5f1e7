//! The modes of the `operator-controller` binary that live in their own module.
//!
//! - [`render`]: `operator-controller render`, a bundle rendered offline.

pub mod render;
