//! In-process HTTP tests (filled in below).
