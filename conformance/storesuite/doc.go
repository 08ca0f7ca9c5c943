// Package storesuite is the store suite: cairn's engine run as at least
// three replicas with separate caches over one shared bucket, each behind
// its own fault injector, with concurrent clients appending unique ids to
// a few keys and reading them.
//
// Every scenario of Scenarios (no faults, lost CAS responses, a 412 after
// an own landed write, throttling, transient 5xx, corrupt reads,
// late-landing writes, crashes between staging and CAS and after it, and
// all mixed) is checked for linearizability with porcupine, and for lost
// acknowledged appends, duplicates, and exactly one conditional head write
// per commit. Run runs one scenario and returns a Report; the seed is
// reported, and CAIRN_STORE_SEED (SeedEnv) replays a run.
//
// The package imports no adapter and no testing: package
// conformance/conformancetest runs the scenarios as subtests. It is kept
// apart from package conformance so that programs running the bucket suite
// (cairn conformance) do not link the checker.
package storesuite
