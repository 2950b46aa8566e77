//! Goldens of what the model sees: the pieces that turn the requests a scripted model server
//! received into a stable text, `goldens/render.rs` (one readable transcript) and
//! `goldens/normalize.rs` (the volatile parts replaced, nothing else), each with its own test.

mod normalize;
mod render;
