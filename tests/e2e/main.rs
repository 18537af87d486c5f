//! End-to-end tests: the real `breeze` binary against real files and git repositories.
//! One test binary for the whole project; each area is a module.

mod support;
mod validate;
