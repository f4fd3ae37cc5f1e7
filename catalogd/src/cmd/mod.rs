//! The modes of the `catalogd` binary, one module each: its arguments (`Args`) and its `run`.

pub mod run;
pub mod serve;
pub mod validate;
