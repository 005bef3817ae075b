//! The value parsers of the command line's options: the runtime's one
//! family ([`profiling_core::units`]), in clap's shape.

pub(crate) use profiling_core::units::{
    parse_count, parse_duration, parse_nonzero_count, parse_rate,
};
