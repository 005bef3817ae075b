//! Nothing: the crate only names the corpus as dev-dependencies.
