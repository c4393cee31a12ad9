//! Planted bugs.
