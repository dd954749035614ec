# The two commands of the README. Each installs what is missing (scripts/bootstrap.sh) and,
# when DATABASE_URL is not set, starts a throwaway PostgreSQL of its own.

.PHONY: demo test build clean

demo:
	@scripts/bootstrap.sh
	swift run -c release postgres-data-demo

test:
	@scripts/bootstrap.sh
	swift build --build-tests
	swift test

build:
	@scripts/bootstrap.sh
	swift build

clean:
	rm -rf .build .build-*
