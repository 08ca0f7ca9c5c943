// Package conformance holds the bucket suite every Bucket adapter must
// pass. Sub-packages hold the store suite (storesuite) and the fake-GCS
// harness (fakegcs).
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
// The suite imports no adapter.
package conformance
