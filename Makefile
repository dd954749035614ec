# The two commands of the README. Each installs what is missing (scripts/bootstrap.sh) and,
# when DATABASE_URL is not set, starts a throwaway PostgreSQL of its own.

.PHONY: demo test build docs clean example example-test bench

demo:
	@scripts/bootstrap.sh
	swift build -c release --product postgres-data
	swift run -c release postgres-data-demo

test:
	@scripts/bootstrap.sh --tests
	swift build --build-tests
	scripts/test.sh
	$(MAKE) example-test

# The example server (Examples/TodoServer, Hummingbird 2): its own package, so that users of
# the library never build it. `make example` runs it on :8080 (DATABASE_URL, or a throwaway
# PostgreSQL); `make example-test` runs its HTTP tests (part of `make test`).
example:
	@scripts/bootstrap.sh
	cd Examples/TodoServer && swift run todo-server

example-test:
	@scripts/bootstrap.sh --tests
	cd Examples/TodoServer && swift build --build-tests && ../../scripts/test.sh --skip-build

build:
	@scripts/bootstrap.sh
	swift build

# Checks the DocC catalogue's links against the symbols (docc from the toolchain; a separate
# build directory, since symbol graphs change the compiler flags).
# The benchmark (PostgresData against raw libpq), compared with the last run recorded under
# benchmarks/ on this machine (else the last of all, with a note);
# `make bench BENCH_ARGS="--record benchmarks"` records this one.
bench:
	@scripts/bootstrap.sh
	swift build -c release --product postgres-data-bench
	.build/release/postgres-data-bench --commit "$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		--json .build/bench-latest.json --compare benchmarks $(BENCH_ARGS)

docs:
	swift build --scratch-path .build-docs --target PostgresMigrations \
		-Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc .build-docs/symbol-graphs
	for module in PostgresData PostgresMigrations; do \
		rm -rf .build-docs/graphs-$$module && mkdir -p .build-docs/graphs-$$module && \
		cp .build-docs/symbol-graphs/$$module.symbols.json .build-docs/graphs-$$module/ && \
		{ cp .build-docs/symbol-graphs/$$module@*.json .build-docs/graphs-$$module/ 2>/dev/null || true; } && \
		docc convert Sources/$$module/Documentation.docc --additional-symbol-graph-dir .build-docs/graphs-$$module \
			--fallback-display-name $$module --fallback-bundle-identifier $$module \
			--output-path .build-docs/$$module.doccarchive --analyze --warnings-as-errors || exit 1; \
	done

clean:
	rm -rf .build .build-*
