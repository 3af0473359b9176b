.PHONY: run test test-all
# README command 1: set up and run the app (SQLite, filesystem broker, demo data).
run:
	scripts/run.sh
# README command 2: the whole test suite (SQLite unless DATABASE_URL says otherwise).
test:
	scripts/test.sh
