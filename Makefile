# OLM v1 in Rust. `make run` starts everything locally; `make test` runs every check CI runs.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

OLM_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/olm-rs
export OLM_CACHE_DIR
# The cargo target dir lives outside the clone so a fresh clone reuses earlier builds.
export CARGO_TARGET_DIR ?= $(OLM_CACHE_DIR)/target
TOOLS_ENV := $(OLM_CACHE_DIR)/tools.env
BIN_DIR := $(CARGO_TARGET_DIR)/debug

.PHONY: all build test test-netns lint fmt fmt-check clippy manifests manifests-check unit e2e tools run bench clean help

all: build

help:
	@echo "make run        start a local control plane, registry, sample catalog, catalogd and operator-controller"
	@echo "make test       formatting, lints, CRD drift, unit, conformance and end-to-end tests"
	@echo "make e2e        only the end-to-end tests (real control plane and registry on loopback)"
	@echo "make test-netns make test, failing unless tests run in a network namespace with only loopback"
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
# the product binaries in $(BIN_DIR). Tests are compiled first, then run offline inside a network
# namespace with only loopback when the machine allows it (root, as in CI): see hack/netns-run.sh.
# OLM_NETNS=off runs them unisolated; OLM_NETNS=require fails when isolation is impossible.
test: lint manifests-check tools build
	cargo test --workspace --no-run --quiet
	source $(TOOLS_ENV) && OLM_BIN_DIR=$(BIN_DIR) hack/netns-run.sh cargo test --workspace --no-fail-fast --offline

test-netns:
	OLM_NETNS=require $(MAKE) test

# One test binary holds every end-to-end test, so the shared environment starts once.
e2e: tools build
	cargo test -p olm-e2e --test e2e --no-run --quiet
	source $(TOOLS_ENV) && OLM_BIN_DIR=$(BIN_DIR) hack/netns-run.sh cargo test -p olm-e2e --test e2e --offline

unit:
	cargo test --workspace --lib --bins

run: tools build
	source $(TOOLS_ENV) && OLM_BIN_DIR=$(BIN_DIR) cargo run -q -p olm-e2e --bin olm-dev-env -- run

bench:
	cargo bench --workspace

clean:
	cargo clean
