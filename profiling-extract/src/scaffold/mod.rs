//! The target around the copy: which record field feeds which parameter
//! (where the types make it clear), the struct that holds one call's
//! arguments, and the `#[profile_target]` impl whose `run` calls the copy.
//! What the types do not make clear becomes an error `prepare` returns,
//! never a panic.

mod call_site;
mod emit;
mod layout;
mod plan;
mod target;
mod type_text;
mod types;

pub(crate) use call_site::find_call_site;
pub(crate) use plan::{pascal_case, plan};
pub(crate) use target::{Output, Pass, Target, ValueSource};
