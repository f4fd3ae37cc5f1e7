//! File-Based Catalogs: the model, a streaming loader, Go-compatible JSON re-encoding and validation.
