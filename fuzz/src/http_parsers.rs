//! catalogd's pure HTTP request parsers, compiled here from their source files so that fuzzing
//! them does not build catalogd's Kubernetes and server dependencies. The modules depend only on
//! `std`, the `http` crate and each other (catalogd/src/http/mod.rs keeps them so).

#[path = "../../catalogd/src/http/gotime.rs"]
pub mod gotime;

#[path = "../../catalogd/src/http/conditional.rs"]
pub mod conditional;

#[path = "../../catalogd/src/http/range.rs"]
pub mod range;

#[path = "../../catalogd/src/http/path.rs"]
pub mod path;

#[path = "../../catalogd/src/http/negotiate.rs"]
pub mod negotiate;
