# OLM v1 in Rust. `make run` starts everything locally; `make test` runs every check CI runs.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

OLM_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/olm-rs
export OLM_CACHE_DIR
# The cargo target dir lives outside the clone so a fresh clone reuses earlier builds.
export CARGO_TARGET_DIR ?= $(OLM_CACHE_DIR)/target
TOOLS_ENV := $(OLM_CACHE_DIR)/tools.env
BIN_DIR := $(CARGO_TARGET_DIR)/debug
# Which control plane `make run` starts and `make tools` builds: full (kube-controller-manager,
# kube-scheduler and kwok too; the tests need it) or apiserver (etcd and kube-apiserver only).
TIER ?= full

.PHONY: all build test test-netns test-real lint fmt fmt-check clippy manifests manifests-check unit e2e tools run bench bench-extensions bench-upstream clean help fuzz fuzz-build images release-manifest deploy

all: build

help:
	@echo "make run        start a local control plane, registry, sample catalog, catalogd and operator-controller"
	@echo "                (TIER=apiserver: etcd and kube-apiserver only, quicker to build the first time)"
	@echo "make test       formatting, lints, CRD drift, unit, conformance and end-to-end tests"
	@echo "make e2e        only the end-to-end tests (real control plane and registry on loopback)"
	@echo "make test-real  only the real tier: the product images as Pods on a real kubelet (root)"
	@echo "make test-netns make test, failing unless tests run in a network namespace with only loopback"
	@echo "make manifests  regenerate config/crd and config/openshift from the Rust types"
	@echo "make bench      benchmarks (see docs/PERFORMANCE.md)"
	@echo "make bench-upstream  ours side by side with upstream OLM v1 (UPSTREAM_BIN_DIR; docs/PERFORMANCE.md)"
	@echo "make fuzz       run every fuzz target for FUZZ_SECONDS each (nightly + cargo-fuzz; docs/FUZZING.md)"
	@echo "make images IMAGE_REGISTRY=host/path   build both container images and push them"
	@echo "make release-manifest                  the install manifests for those images, in RELEASE_DIR"
	@echo "make deploy                            install them on the cluster kubectl talks to"

build:
	cargo build --workspace --bins

fmt:
	cargo fmt --all
	cd fuzz && cargo fmt

fmt-check:
	cargo fmt --all -- --check
	cd fuzz && cargo fmt -- --check

clippy:
	cargo clippy --workspace --all-targets -- -D warnings

lint: fmt-check clippy

manifests:
	cargo run -q -p olm-api --bin crdgen -- --openshift-dir config/openshift config/crd

manifests-check:
	cargo run -q -p olm-api --bin crdgen -- --check --openshift-dir config/openshift config/crd

tools:
	hack/ensure-tools.sh --tier $(TIER) $(TOOLS_ENV)

# Everything CI checks. End-to-end tests find the control plane and registry through tools.env and
# the product binaries in $(BIN_DIR). Tests are compiled first, then run offline inside a network
# namespace with only loopback when the machine allows it (root, as in CI): see hack/netns-run.sh.
# OLM_NETNS=off runs them unisolated; OLM_NETNS=require fails when isolation is impossible.
# OLM_REQUIRE_ALL=1 makes every would-be skip (no kubectl, not root, apiserver tier) a failure, so a
# green run means every test ran in full; `make test OLM_REQUIRE_ALL=0` on a partial machine.
test: export OLM_REQUIRE_ALL ?= 1
test: lint manifests-check tools build fuzz-build
	cargo test --workspace --no-run --quiet
	source $(TOOLS_ENV) && OLM_BIN_DIR=$(BIN_DIR) hack/netns-run.sh cargo test --workspace --no-fail-fast --offline

test-netns:
	OLM_NETNS=require $(MAKE) test

# One test binary holds every end-to-end test, so the shared environment starts once.
e2e: tools build
	cargo test -p olm-e2e --test e2e --no-run --quiet
	source $(TOOLS_ENV) && OLM_BIN_DIR=$(BIN_DIR) hack/netns-run.sh cargo test -p olm-e2e --test e2e --offline

# The `real` tier alone (root): the product images as Pods on a real kubelet (docs/TESTING.md).
test-real: tools build
	cargo test -p olm-e2e --test e2e --no-run --quiet
	source $(TOOLS_ENV) && OLM_BIN_DIR=$(BIN_DIR) OLM_REQUIRE_ALL=1 hack/netns-run.sh cargo test -p olm-e2e --test e2e --offline -- real_ --nocapture

unit:
	cargo test --workspace --lib --bins

# The binary `build` made, run as it is: `cargo run -p olm-e2e` would build it again with the
# features of that one package instead of the workspace's (and overwrite the workspace build).
# `make run` runs no test: the real tier's node binaries are not built for it.
run: export OLM_NODE_TOOLS ?= 0
run: tools build
	source $(TOOLS_ENV) && OLM_BIN_DIR=$(BIN_DIR) $(BIN_DIR)/olm-dev-env run --tier $(TIER)

bench:
	cargo bench --workspace

# 1,000 ClusterExtensions on the full tier (docs/PERFORMANCE.md). BENCH_PROFILE=dev for a debug
# build; BENCH_ARGS="NAMESPACES PACKAGES" for another size (default 100 10).
BENCH_PROFILE ?= release
bench-extensions: tools
	cargo build --profile $(BENCH_PROFILE) -p operator-controller -p catalogd --bins
	source $(TOOLS_ENV) && OLM_BIN_DIR=$(CARGO_TARGET_DIR)/$(if $(filter dev,$(BENCH_PROFILE)),debug,$(BENCH_PROFILE)) cargo run --profile $(BENCH_PROFILE) -q -p olm-e2e --example extensions_1000 -- $(BENCH_ARGS)

# Side by side with upstream OLM v1 (docs/PERFORMANCE.md): UPSTREAM_BIN_DIR names upstream's
# catalogd and operator-controller, built outside this repository; without it only our side runs.
# ROUNDS (3), P6_NAMESPACES (100 = 1,000 extensions), OUT, BENCH_ARGS: see hack/bench-upstream.sh.
bench-upstream: tools
	cargo build --profile $(BENCH_PROFILE) -p operator-controller -p catalogd --bins
	cargo build -p olm-e2e --example bench_upstream
	source $(TOOLS_ENV) && OLM_BIN_DIR=$(CARGO_TARGET_DIR)/$(if $(filter dev,$(BENCH_PROFILE)),debug,$(BENCH_PROFILE)) BENCH_BIN=$(CARGO_TARGET_DIR)/debug/examples/bench_upstream hack/bench-upstream.sh

# Fuzzing (docs/FUZZING.md). The fuzz crate is a workspace of its own under fuzz/.
FUZZ_TARGETS := fbc_json fbc_yaml version_masterminds version_blang http_range http_conditional image_layer catalog_pack bundle_registry_v1 crd_upgrade
FUZZ_SECONDS ?= 60
# New inputs found while fuzzing go here, outside the clone; fuzz/corpus holds the committed seeds.
FUZZ_CORPUS_DIR ?= $(OLM_CACHE_DIR)/fuzz-corpus

# Compiles the fuzz targets on the stable toolchain, without sanitizers and without fuzzing, so
# CI keeps them compiling on a machine without nightly. libFuzzer itself is built from source by
# libfuzzer-sys (a C++ compiler is needed, as for aws-lc-sys).
fuzz-build:
	cd fuzz && cargo build --bins --quiet

# Runs each target for FUZZ_SECONDS with the sanitizer build of cargo-fuzz (nightly only).
fuzz:
	@cargo +nightly --version >/dev/null 2>&1 || { echo "make fuzz needs a nightly toolchain (rustup toolchain install nightly)" >&2; exit 1; }
	@command -v cargo-fuzz >/dev/null || { echo "make fuzz needs cargo-fuzz (cargo install cargo-fuzz)" >&2; exit 1; }
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p "$(FUZZ_CORPUS_DIR)/$$t"; \
	  (cd fuzz && CARGO_TARGET_DIR="$(CARGO_TARGET_DIR)-fuzz" cargo +nightly fuzz run "$$t" "$(FUZZ_CORPUS_DIR)/$$t" "corpus/$$t" -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096) || exit 1; \
	done

# Release (README, "Install on a cluster"). `make images` builds both binaries (IMAGE_PROFILE,
# release by default), makes a minimal image of each with our own OCI code (no Docker, no base
# image) and pushes it to $(IMAGE_REGISTRY)/catalogd and $(IMAGE_REGISTRY)/operator-controller;
# IMAGE_INSECURE=1 speaks plain HTTP to a local registry. The pushed digests go to
# $(RELEASE_DIR)/images.json, which `make release-manifest` pins into one manifest per TLS variant.
IMAGE_REGISTRY ?=
IMAGE_TAG ?=
IMAGE_INSECURE ?=
IMAGE_PROFILE ?= release
IMAGE_SOURCE ?= $(shell git config --get remote.origin.url 2>/dev/null || echo unknown)
IMAGE_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
RELEASE_DIR ?= _release
IMAGE_BIN_DIR := $(CARGO_TARGET_DIR)/$(if $(filter dev,$(IMAGE_PROFILE)),debug,$(IMAGE_PROFILE))

images:
	@test -n "$(IMAGE_REGISTRY)" || { echo "make images needs IMAGE_REGISTRY=host[:port]/path" >&2; exit 1; }
	cargo build --profile $(IMAGE_PROFILE) -p catalogd -p operator-controller --bins
	mkdir -p $(RELEASE_DIR)
	cargo run -q -p olm-e2e --bin olm-release -- images --bin-dir $(IMAGE_BIN_DIR) \
	  --registry $(IMAGE_REGISTRY) $(if $(IMAGE_TAG),--tag $(IMAGE_TAG)) $(if $(IMAGE_INSECURE),--insecure) \
	  --revision $(IMAGE_REVISION) --source $(IMAGE_SOURCE) --out $(RELEASE_DIR)/images.json

release-manifest:
	cargo run -q -p olm-e2e --bin olm-release -- manifest --images $(RELEASE_DIR)/images.json \
	  --variant standalone --out $(RELEASE_DIR)/olmv1.yaml
	cargo run -q -p olm-e2e --bin olm-release -- manifest --images $(RELEASE_DIR)/images.json \
	  --variant cert-manager --out $(RELEASE_DIR)/olmv1-cert-manager.yaml

# Installs $(MANIFEST) (default: the standalone manifest) and waits until OLM is ready.
MANIFEST ?= $(RELEASE_DIR)/olmv1.yaml
deploy:
	hack/install.sh $(MANIFEST)

clean:
	cargo clean
