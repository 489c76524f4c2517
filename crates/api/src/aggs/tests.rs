//! Tests: small in-RAM indices built through the engine code path.
