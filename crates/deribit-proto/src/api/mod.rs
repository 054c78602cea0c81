//! Typed method params and results (owned by the simulator work; being written).
