//! Test environment: a real control plane and OCI registry on loopback, shared by a test run.
