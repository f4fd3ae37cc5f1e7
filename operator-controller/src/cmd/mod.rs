//! The modes of the `operator-controller` binary, one module each: its arguments (`Args`) and its
//! `run`.

pub mod crd_upgrade_check;
pub mod explain;
pub mod preview;
pub mod render;
pub mod resolve;
pub mod run;
