# Toucan-MPI top-level Makefile (GNU make).
#
#   make / make all          system deps (scripts/ensure-deps.sh), cargo build --release, the
#                            Fortran bindings (fortran/build.sh), wrappers
#   make demo                examples/hello_ring.c under plain MPICH and under Toucan-MPI, compared
#   make test                cargo test, clippy, rustfmt check, the fuzz targets (FUZZ_SECONDS
#                            each, default 20), then the compat tests
#   make fuzz                only the fuzz targets
#   make bench               bench/run-pingpong.sh and bench/run-collectives.sh (BENCH_ARGS)
#   make bench-overlap       bench/run-overlap.py $(OVERLAP_ARGS): jacobi3d, cannon2d, overlap tables
#   make install PREFIX=dir  bin/ lib/ include/ lib/pkgconfig/toucanmpi.pc under dir (DESTDIR too)
#   make uninstall PREFIX=dir
#   make clean
#
# Variables you may set: CARGO, MPICC, MPIRUN, DEMO_NP, DEMO_V, DEMO_TIMEOUT, BENCH_ARGS, PREFIX,
# DESTDIR.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := all
.DELETE_ON_ERROR:

ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

CARGO ?= cargo
# A fresh login shell may not have rustup's bin directory on PATH yet.
ifeq ($(shell command -v $(CARGO) 2>/dev/null),)
  ifneq ($(wildcard $(HOME)/.cargo/bin/cargo),)
    export PATH := $(HOME)/.cargo/bin:$(PATH)
  endif
endif

# The reference MPI is MPICH (the library loads libmpich underneath). Prefer the explicitly
# named MPICH tools, in case the Debian alternatives point mpicc/mpirun at another MPI.
MPICC  ?= $(or $(shell command -v mpicc.mpich 2>/dev/null),mpicc)
MPIRUN ?= $(or $(shell command -v mpirun.mpich 2>/dev/null),mpirun)

RELEASE_DIR := target/release
LIB_SO      := $(RELEASE_DIR)/libtoucanmpi.so
LIB_A       := $(RELEASE_DIR)/libtoucanmpi.a
HEADERS     := headers/mpi.h headers/toucan.h
WRAPPERS    := wrappers/toucancc wrappers/toucancxx wrappers/toucanfort wrappers/toucanrun wrappers/toucan-globals
# Fortran bindings (docs/fortran.md), built by fortran/build.sh beside the library.
FORT_LIB    := $(RELEASE_DIR)/libtoucanfort.a
FORT_INC    := $(RELEASE_DIR)/fortran/include
FORT_SRCS   := fortran/gen.py fortran/bindings.txt fortran/build.sh headers/mpi.h
VERSION      = $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' libtoucanmpi/Cargo.toml 2>/dev/null | head -n1)

# ------------------------------------------------------------------------------------ build
.PHONY: all deps build wrappers fortran
all: deps build fortran wrappers

deps:
	@bash scripts/ensure-deps.sh

build: deps
	$(CARGO) build --release

wrappers:
	@chmod +x $(WRAPPERS) scripts/ensure-deps.sh fortran/build.sh

# Regenerated when the table, the generator, mpi.h or the library (its exports) change; order-
# only on build (the library does not exist yet in a fresh clone, when make reads this).
fortran: $(FORT_LIB)
$(FORT_LIB): $(FORT_SRCS) $(wildcard $(LIB_SO)) | build
	bash fortran/build.sh $(RELEASE_DIR)

# ------------------------------------------------------------------------------------ demo
DEMO_DIR     := build/demo
DEMO_NP      ?= 2
DEMO_V       ?= 4
DEMO_REF_NP   = $(shell echo $$(( $(DEMO_NP) * $(DEMO_V) )))
DEMO_TIMEOUT ?= 120
DEMO_CFLAGS  ?= -O2 -Wall

.PHONY: demo
demo: all $(DEMO_DIR)/hello_ring.mpich $(DEMO_DIR)/hello_ring.toucan
	@mpich_rc=0; toucan_rc=0; \
	echo "=== plain MPICH: $(MPIRUN) -np $(DEMO_REF_NP) $(DEMO_DIR)/hello_ring.mpich"; \
	timeout -k 10 $(DEMO_TIMEOUT) $(MPIRUN) -np $(DEMO_REF_NP) $(DEMO_DIR)/hello_ring.mpich \
	    > $(DEMO_DIR)/mpich.out 2> $(DEMO_DIR)/mpich.err || mpich_rc=$$?; \
	cat $(DEMO_DIR)/mpich.out; \
	if [ -s $(DEMO_DIR)/mpich.err ]; then echo "--- stderr:"; cat $(DEMO_DIR)/mpich.err; fi; \
	echo "--- exit status $$mpich_rc"; echo; \
	echo "=== Toucan-MPI: TOUCAN_V=$(DEMO_V) $(MPIRUN) -np $(DEMO_NP) $(DEMO_DIR)/hello_ring.toucan"; \
	TOUCAN_V=$(DEMO_V) timeout -k 10 $(DEMO_TIMEOUT) $(MPIRUN) -np $(DEMO_NP) $(DEMO_DIR)/hello_ring.toucan \
	    > $(DEMO_DIR)/toucan.out 2> $(DEMO_DIR)/toucan.err || toucan_rc=$$?; \
	cat $(DEMO_DIR)/toucan.out; \
	if [ -s $(DEMO_DIR)/toucan.err ]; then echo "--- stderr:"; cat $(DEMO_DIR)/toucan.err; fi; \
	echo "--- exit status $$toucan_rc"; echo; \
	for rc in $$mpich_rc $$toucan_rc; do \
	    if [ "$$rc" = 124 ] || [ "$$rc" = 137 ]; then echo "(a run timed out after $(DEMO_TIMEOUT) s)"; fi; \
	done; \
	if [ $$mpich_rc = 0 ] && [ $$toucan_rc = 0 ] && [ -s $(DEMO_DIR)/mpich.out ] && \
	   cmp -s $(DEMO_DIR)/mpich.out $(DEMO_DIR)/toucan.out; then \
	    echo "=== RESULT: outputs are IDENTICAL ($(DEMO_REF_NP) MPICH processes vs $(DEMO_NP) processes x $(DEMO_V) subranks)"; \
	else \
	    echo "=== RESULT: outputs DIFFER or a run failed (MPICH exit $$mpich_rc, Toucan exit $$toucan_rc)"; \
	    diff -u --label mpich --label toucan $(DEMO_DIR)/mpich.out $(DEMO_DIR)/toucan.out || true; \
	    exit 1; \
	fi

$(DEMO_DIR):
	@mkdir -p $@

$(DEMO_DIR)/hello_ring.mpich: examples/hello_ring.c | $(DEMO_DIR) deps
	$(MPICC) $(DEMO_CFLAGS) -o $@ $<

# Order-only on build (so make -j builds the library first); on the library and headers
# files too, so a rebuilt library relinks the demo.
$(DEMO_DIR)/hello_ring.toucan: examples/hello_ring.c $(wildcard $(HEADERS) $(LIB_SO)) | $(DEMO_DIR) build wrappers
	wrappers/toucancc $(DEMO_CFLAGS) -o $@ $<

# ------------------------------------------------------------------------------------ test
# The compat tests get these in their environment.
COMPAT_ENV = TOUCAN_ROOT='$(ROOT)' TOUCANCC='$(ROOT)/wrappers/toucancc' \
	TOUCANCXX='$(ROOT)/wrappers/toucancxx' TOUCANFC='$(ROOT)/wrappers/toucanfort' \
	TOUCANRUN='$(ROOT)/wrappers/toucanrun' \
	TOUCAN_LIB='$(ROOT)/$(LIB_SO)' MPICC='$(MPICC)' MPIRUN='$(MPIRUN)'

.PHONY: test unit-test lint compat-test fuzz

# Fuzz targets (fuzz/README.md): each runs FUZZ_SECONDS; the first build takes a few minutes.
FUZZ_SECONDS ?= 20
fuzz:
	fuzz/run.sh $(FUZZ_SECONDS)
test: all
	$(MAKE) --no-print-directory unit-test
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory compat-test

unit-test:
	$(CARGO) test --release

lint:
	$(CARGO) clippy --release --all-targets -- -D warnings
	$(CARGO) fmt --all --check

# The program-library privatization test builds shared libraries beside its program, so it
# has its own runner (about 6 s); it runs after the others, whatever their result.
# Point-to-point compat tests run again with point-to-point passed through to the real MPI
# (TOUCAN_P2P_DIRECT=on, V=1; off by default, see docs/design-decisions.md).
# issue 16 (p2p7): p2p_wait_mixed (waits over direct and other requests, Sendrecv > 256 B).
# Session 18 (tidy9): comm_steps (communicators made and freed per step; pools off here).
# Session 19: coll_persist_steps (persistent collectives made and freed per step; no pool here).
# Session 19 (p2p11): p2p_ring_match, and p2p_waitall_late (small sends there now return the
# built-in complete send too). Session 19 (coll11): coll_p2p_mix.
# Session 20 (p2p12): p2p_stack_eager (eager payloads of 257 B to 4 KiB sent from a stack buffer).
# Session 21: the blocking collectives' request-free steps run under the pass-through too:
# coll_alltoall, coll_gather, coll_redscat, coll_err_route, bcast, barrier, reduce_arith,
# deadlock_coll_small. Session 22 (root15): coll_rooted_known. Session 23 (v1coll16): coll_pair.
# Session 24 (nbcpair16): nbc_pair. Session 25 (lead): coll_pairv (the v-forms on the pair paths); (nbcred16) nbc_pair_red.
# Session 26 (lead): nbc_pair_late (the peer's message taken at the start), nbc_pair_rs (Ireduce_scatter(_block) on the pair path).
# Session 27 (lead): nbc_pair_scan (Iscan and Iexscan on the pair path).
# Session 27 (nbrecv27): nbc_rec_v, nbc_rec_rs (the v-forms and Ireduce_scatter on the two-level records).
# Session 27 (nbrecv27): with TOUCAN_NBC_REC_V=all (Igatherv and Iscatterv on the records as well).
# Session 28 (vrec28): Igatherv is on the records by default (nbc_rec_gv: root layouts that do and
# do not let it land in place; in the DIRECT and SOLO sets too); the step below adds Iscatterv.
# Session 29 (vscat29): Iscatterv is on the records by default too (nbc_rec_sv); the step below
# now runs them with TOUCAN_NBC_REC_V=off (every v-form in helper tasks, no longer the default).
# Session 30 (gath30): nbc_rec_gf (Igatherv as flat real messages: send and receive types that
# differ, chunks above 1 MiB, uneven members per process); in the DIRECT, SOLO and NODES sets too.
REC_V_TESTS = ^(nbc_rec_v|nbc_rec_gv|nbc_rec_gf|nbc_rec_sv|nbc_rootstart|nbc_rooted|coll_pairv|nbc_iallgather|coll_nbteam)$$
# Session 23 (rate16): p2p_wait_window (windows of many requests, every wait and test call).
# Session 23 (sr16): p2p_sendrecv_mix (Sendrecv beside Isend, probes, wildcards, late partners).
# Session 24 (shmq16): p2p_shmq_flood (the node queue's full path, collective steps through it).
# Session 28 (lead): p2p_unexq_lanes (messages taken off the real MPI into the per-sender queue).
DIRECT_TESTS = ^(anysource|cancel|comm_basic|coll_comms|coll_p2p_mix|nbc_mixed|nbc_p2p_apart|deadlock_(ring|large|coll|wait)|get_count|halo|isendrecv|large_pairs|mprobe|nb_test|nb_wait|order|p2p_large_count|persistent|probe|proc_null|request_free|request_status|ring|send_modes|sendrecv|stress|threads_multiple|topo_cart|truncate|zero_size|p2p_wait_mixed|p2p_lean|p2p_lean_wait|p2p_wait_window|comm_steps|coll_persist_steps|p2p_ring_match|p2p_waitall_late|p2p_stack_eager|p2p_sendrecv_mix|coll_(alltoall|gather|redscat|err_route|rooted_known|pair|pairv)|bcast|barrier|reduce_arith|deadlock_coll_small|p2p_shmq_flood|nbc_pair|nbc_pair_red|nbc_mixed_types|nbc_pair_late|nbc_pair_rs|nbc_pair_scan|nbc_rec_v|nbc_rec_gv|nbc_rec_gf|nbc_rec_sv|nbc_rec_rs|p2p_unexq_lanes)$$

# Session 21: as if every process ran on a node of its own (MPICH's MPIR_CVAR_NOLOCAL=1: the
# real MPI's network path, and transport::node::same_node false for every peer), so the sends
# that must not assume the shared-memory eager limit take their between-nodes path.
# Session 24 (shmq16): p2p_shmq_flood, through the ring (no node queue between nodes).
# Session 26 (lead): nbc_pair_late (a pair collective taking its message from the real ring at the start).
# Session 28 (lead): p2p_unexq_lanes (the unexpected queue per sender; messages between nodes), nbc_rootstart
# (rooted nonblocking calls with rendezvous blocks between nodes).
# Session 30 (red30): nbc_red_tree, nbc_gather_flat (the small Reduce's tree and Gather's flat
# messages through MPICH between nodes, not the node queue).
NODES_TESTS = ^(p2p_stack_eager|p2p_ring_match|coll_p2p_mix|halo|stress|large_pairs|send_modes|p2p_shmq_flood|nbc_pair_late|p2p_unexq_lanes|nbc_rootstart|nbc_qnames|nbc_rec_sv|nbc_rec_gf|nbc_red_tree|nbc_gather_flat)$$

# Blocking collectives at V=1 as the real MPI's own (core/coll/solo.rs): on when the real MPI runs
# at MPI_THREAD_MULTIPLE; these compat tests run again in that mode (docs/collectives.md).
# Session 18 (tidy9): comm_steps. Session 19: coll_persist_steps; (coll11) coll_p2p_mix,
# deadlock_coll_small. Session 22 (root15): coll_rooted_known. Session 23 (v1coll16): coll_pair.
# Session 24 (nbcpair16): nbc_pair. Session 25 (lead): coll_pairv (the v-forms on the pair paths); (nbcred16) nbc_pair_red;
# (faults16) nbc_mixed_types, and at 3x1 and 3x3 too (NBC_ERR_TESTS: a truncating real
# I-collective beyond the two-process pair path).
SOLO_TESTS = ^(barrier|bcast|coll_(alltoall|alltoallv_c|comm_order|gather|hier|large_count|nbreal|p2p_mix|pair|persist_steps|persistent|pplan|redscat|reduce_early|rooted_known|solo|team)|deadlock_(coll|coll_small|rma|rma_lock)|info_comm|io_(basic|collread|nbcoll)|reduce_(arith|minmax)|threads_(multiple|openmp)|topo_cart|comm_steps|nbc_pair|coll_pairv|nbc_pair_red|nbc_mixed_types|nbc_pair_late|nbc_pair_rs|nbc_pair_scan|nbc_rec_v|nbc_rec_gv|nbc_rec_gf|nbc_rec_sv|nbc_rec_rs)$$
NBC_ERR_TESTS = ^(nbc_mixed_types)$$

# Session 26 (np3rec16): odd world sizes (docs/compat-wide.md). The collective-heavy tests at
# 3x1 (three processes: trees, recursive doubling and the two-level scheme with a remainder
# between processes), 1x3 and 1x9 (odd subrank counts in one process); 3x3 is a default layout.
# Adds 44-61 s (measured loaded); the whole suite passes at 3x1 and 1x3 too (too slow for here).
WIDE_TESTS = ^(barrier|bcast|coll_(alltoall|alltoallv_c|alltoallw|gather|redscat|hier|hier_allgather|reduce_fold|reduce_early|persistent|large_count|nbreal|rooted_known|team)|nbc|nbc_(reduce|rooted|iallgather|alltoall|early|rec_v|rec_rs)|reduce_(arith|bitwise|logical|minmax))$$

compat-test:
	@compat-tests/badinput-coverage.sh || echo "WARNING: exported functions missing from compat-tests/src/badinput.c (above)"
	$(COMPAT_ENV) compat-tests/resources.sh
	@if [ -x compat-tests/run-all.sh ]; then \
	    echo "== compat-tests/run-all.sh"; \
	    rc=0; $(COMPAT_ENV) compat-tests/run-all.sh || rc=$$?; \
	    echo "== point-to-point passed through (TOUCAN_P2P_DIRECT=on, 2x1)"; \
	    TOUCAN_P2P_DIRECT=on TOUCAN_COMPAT_CONFIGS=2x1 COMPAT_SMP=0 TOUCAN_COMPAT_FILTER='$(DIRECT_TESTS)' \
	        $(COMPAT_ENV) compat-tests/run-all.sh || rc=$$?; \
	    echo "== processes as on separate nodes (MPIR_CVAR_NOLOCAL=1, 2x1 2x2)"; \
	    MPIR_CVAR_NOLOCAL=1 TOUCAN_COMPAT_CONFIGS="2x1 2x2" COMPAT_SMP=0 TOUCAN_COMPAT_FILTER='$(NODES_TESTS)' \
	        $(COMPAT_ENV) compat-tests/run-all.sh || rc=$$?; \
	    echo "== two emulated nodes of two processes each (compat-tests/twonodes.sh, 4x1 4x2)"; \
	    TOUCAN_COMPAT_LAUNCHER=$(ROOT)/compat-tests/twonodes.sh TOUCAN_COMPAT_CONFIGS="4x1 4x2" COMPAT_SMP=0 \
	        TOUCAN_COMPAT_FILTER='$(NODES_TESTS)' $(COMPAT_ENV) compat-tests/run-all.sh || rc=$$?; \
	    echo "== blocking collectives through the real MPI (TOUCAN_REAL_THREAD=multiple, 2x1)"; \
	    TOUCAN_REAL_THREAD=multiple TOUCAN_COMPAT_CONFIGS=2x1 COMPAT_SMP=0 TOUCAN_COMPAT_FILTER='$(SOLO_TESTS)' \
	        $(COMPAT_ENV) compat-tests/run-all.sh || rc=$$?; \
	    echo "== real I-collectives' errors from the progress thread (TOUCAN_REAL_THREAD=multiple, 3x1 3x3)"; \
	    TOUCAN_REAL_THREAD=multiple TOUCAN_COMPAT_CONFIGS="3x1 3x3" COMPAT_SMP=0 TOUCAN_COMPAT_FILTER='$(NBC_ERR_TESTS)' \
	        $(COMPAT_ENV) compat-tests/run-all.sh || rc=$$?; \
	    echo "== the v-forms in helper tasks (TOUCAN_NBC_REC_V=off, 2x2 2x4 3x3 1x2x4)"; \
	    TOUCAN_NBC_REC_V=off TOUCAN_COMPAT_CONFIGS="2x2 2x4 3x3 1x2x4" COMPAT_SMP=0 TOUCAN_COMPAT_FILTER='$(REC_V_TESTS)' \
	        $(COMPAT_ENV) compat-tests/run-all.sh || rc=$$?; \
	    echo "== odd world sizes (docs/compat-wide.md: 3x1 1x3 1x9)"; \
	    TOUCAN_COMPAT_CONFIGS="3x1 1x3 1x9" COMPAT_SMP=0 TOUCAN_COMPAT_FILTER='$(WIDE_TESTS)' \
	        $(COMPAT_ENV) compat-tests/run-all.sh || rc=$$?; \
	    echo "== compat-tests/privatize-libs/run.sh"; \
	    $(COMPAT_ENV) compat-tests/privatize-libs/run.sh || rc=1; \
	    exit $$rc; \
	elif [ -f compat-tests/run-all.sh ]; then \
	    echo "== compat-tests/run-all.sh (WARNING: not executable; running it with bash)"; \
	    $(COMPAT_ENV) bash compat-tests/run-all.sh; \
	elif [ -f compat-tests/Makefile ]; then \
	    echo "== $(MAKE) -C compat-tests test"; \
	    $(COMPAT_ENV) $(MAKE) --no-print-directory -C compat-tests test; \
	else \
	    echo "== compat-tests: none yet (no executable compat-tests/run-all.sh, no compat-tests/Makefile)"; \
	fi

# ------------------------------------------------------------------------------------ install
PREFIX  ?= /usr/local
DESTDIR ?=
prefix_abs := $(abspath $(PREFIX))
bindir     := $(prefix_abs)/bin
libdir     := $(prefix_abs)/lib
includedir := $(prefix_abs)/include
pcdir      := $(libdir)/pkgconfig

.PHONY: install uninstall
install: all
	@for f in $(LIB_SO) $(LIB_A) $(FORT_LIB) $(FORT_INC)/mpif.h $(FORT_INC)/mpi.mod $(FORT_INC)/mpi_f08.mod $(HEADERS) $(WRAPPERS) toucanmpi.pc.in; do \
	    [ -e "$$f" ] || { echo "make install: $$f is missing" >&2; exit 1; }; \
	done
	install -d "$(DESTDIR)$(bindir)" "$(DESTDIR)$(libdir)" "$(DESTDIR)$(includedir)" "$(DESTDIR)$(pcdir)"
	install -m 755 $(WRAPPERS) "$(DESTDIR)$(bindir)/"
	install -m 755 $(LIB_SO) "$(DESTDIR)$(libdir)/"
	install -m 644 $(LIB_A) "$(DESTDIR)$(libdir)/"
	install -m 644 $(HEADERS) "$(DESTDIR)$(includedir)/"
	install -m 644 $(FORT_LIB) "$(DESTDIR)$(libdir)/"
	install -m 644 $(FORT_INC)/mpif.h $(FORT_INC)/mpi.mod $(FORT_INC)/mpi_f08.mod "$(DESTDIR)$(includedir)/"
	ln -sf toucanfort "$(DESTDIR)$(bindir)/toucanf90"
	ln -sf toucanfort "$(DESTDIR)$(bindir)/toucanf77"
	sed -e 's|@PREFIX@|$(prefix_abs)|g' -e 's|@VERSION@|$(VERSION)|g' toucanmpi.pc.in \
	    > "$(DESTDIR)$(pcdir)/toucanmpi.pc"
	chmod 644 "$(DESTDIR)$(pcdir)/toucanmpi.pc"
	@echo "installed Toucan-MPI $(VERSION) in $(DESTDIR)$(prefix_abs)"

uninstall:
	rm -f $(foreach w,$(notdir $(WRAPPERS)) toucanf90 toucanf77,"$(DESTDIR)$(bindir)/$(w)") \
	      "$(DESTDIR)$(libdir)/libtoucanmpi.so" "$(DESTDIR)$(libdir)/libtoucanmpi.a" \
	      "$(DESTDIR)$(libdir)/libtoucanfort.a" \
	      "$(DESTDIR)$(includedir)/mpif.h" "$(DESTDIR)$(includedir)/mpi.mod" \
	      "$(DESTDIR)$(includedir)/mpi_f08.mod" \
	      $(foreach h,$(notdir $(HEADERS)),"$(DESTDIR)$(includedir)/$(h)") \
	      "$(DESTDIR)$(pcdir)/toucanmpi.pc"

# ------------------------------------------------------------------------------------ clean
.PHONY: clean
clean:
	$(CARGO) clean 2>/dev/null || rm -rf target
	rm -rf build compat-tests/out bench/out

# Both benchmarks, MPICH and Toucan-MPI side by side (bench/README.md); e.g.
# make bench BENCH_ARGS="-q -r 3", or BENCH_ARGS="--wait-quiet 900 --update-results".
.PHONY: bench bench-pingpong bench-collectives bench-overlap
bench: bench-pingpong bench-collectives
bench-pingpong: all
	bench/run-pingpong.sh $(BENCH_ARGS)
bench-collectives: all
	bench/run-collectives.sh $(BENCH_ARGS)

# jacobi3d and cannon2d, every variant, MPICH / Toucan V=1,2,4,8 / AMPI, on emulated
# interconnects (needs root for the network namespace; OVERLAP_ARGS=--rates none without).
bench-overlap: all
	@bash scripts/ensure-deps.sh --bench
	python3 bench/run-overlap.py $(OVERLAP_ARGS)
