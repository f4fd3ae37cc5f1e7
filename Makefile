# OLM v1 in Rust. `make run` starts everything locally; `make test` runs every check CI runs.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

OLM_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/olm-rs
export OLM_CACHE_DIR
# The cargo target dir lives outside the clone so a fresh clone reuses earlier builds.
export CARGO_TARGET_DIR ?= $(OLM_CACHE_DIR)/target
TOOLS_ENV := $(OLM_CACHE_DIR)/tools.env
BIN_DIR := $(CARGO_TARGET_DIR)/debug

.PHONY: all build test lint fmt fmt-check clippy manifests manifests-check unit e2e tools run bench clean help

all: build

help:
	@echo "make run        start a local control plane, registry, sample catalog, catalogd and operator-controller"
	@echo "make test       formatting, lints, CRD drift, unit, conformance and end-to-end tests"
	@echo "make manifests  regenerate config/crd and config/openshift from the Rust types"
	@echo "make bench      benchmarks (see docs/PERFORMANCE.md)"

build:
	cargo build --workspace --bins

fmt:
	cargo fmt --all

fmt-check:
	cargo fmt --all -- --check

clippy:
	cargo clippy --workspace --all-targets -- -D warnings

lint: fmt-check clippy

manifests:
	cargo run -q -p olm-api --bin crdgen -- --openshift-dir config/openshift config/crd

manifests-check:
	cargo run -q -p olm-api --bin crdgen -- --check --openshift-dir config/openshift config/crd

tools:
	hack/ensure-tools.sh $(TOOLS_ENV)

# Everything CI checks. End-to-end tests find the control plane and registry through tools.env and
# the product binaries in $(BIN_DIR).
test: lint manifests-check tools build
	source $(TOOLS_ENV) && OLM_BIN_DIR=$(BIN_DIR) cargo test --workspace --no-fail-fast

unit:
	cargo test --workspace --lib --bins

run: tools build
	source $(TOOLS_ENV) && OLM_BIN_DIR=$(BIN_DIR) cargo run -q -p olm-e2e --bin olm-dev-env -- run

bench:
	cargo bench --workspace

clean:
	cargo clean
