// Package conformance holds the suites every cairn implementation must
// pass, and (in sub-package fakegcs) the fake-GCS harness.
//
// # The bucket suite
//
// BucketChecks lists one check per behaviour of the Bucket port. Each check
// gets a fresh, empty bucket from a NewBucketFunc and returns an error when
// the bucket misbehaves. TestBucket runs them as subtests of a Go test;
// RunBucket runs them outside tests, for the `cairn conformance` command,
// which points them at a user's bucket under a fresh prefix.
//
// A behaviour a backend is known not to honour (declared in
// BucketOptions.KnownGaps or in the adapter's Capabilities.KnownGaps) is
// still run. If it fails it is reported as a known gap, never as a pass;
// if it passes, it passes.
//
// # The store suite
//
// TestStore (and RunStore, outside tests) runs cairn's engine as at least
// three replicas with separate caches over one shared bucket, each behind
// its own fault injector, with concurrent clients appending unique ids to
// a few keys and reading them. Every scenario of StoreScenarios (no
// faults, lost CAS responses, a 412 after an own landed write,
// throttling, transient 5xx, corrupt reads, late-landing writes, crashes
// between staging and CAS and after it, and all mixed) is checked for
// linearizability with porcupine, and for lost acknowledged appends,
// duplicates, and exactly one conditional head write per commit. The seed
// is logged; CAIRN_STORE_SEED replays a run.
//
// The suites import no adapter.
package conformance
