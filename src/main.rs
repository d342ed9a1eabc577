//! The `tfrs` binary: see [`tfrs_gitops::cli`].
use std::process::ExitCode;

// NB: a render allocates and frees millions of small strings and maps from two threads;
// glibc's allocator spent a third of a re-render in malloc/free (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tfrs_gitops::cli::run().into()
}
