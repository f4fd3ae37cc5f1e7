//! Installed state as Helm release records (being built).
