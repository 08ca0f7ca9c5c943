// Package conformance holds the bucket suite every Bucket adapter must
// pass. Sub-packages hold the store suite (storesuite) and the fake-GCS
// harness (fakegcs).
//
// # The bucket suite
//
// BucketChecks lists one check per behaviour of the Bucket port. Each check
// gets a fresh, empty bucket from a NewBucketFunc and returns an error when
// the bucket misbehaves. RunBucket runs them all and reports each
// Outcome (pass, fail or known gap); the `cairn conformance` command
// points them at a user's bucket under a fresh prefix. RunCheck runs one.
// Package conformancetest runs them as subtests of a Go test.
//
// A behaviour a backend is known not to honour (declared in
// BucketOptions.KnownGaps or in the adapter's Capabilities.KnownGaps) is
// still run. If it fails it is reported as a known gap, never as a pass;
// if it passes, it passes.
//
// The package imports no adapter and not package testing, so a program
// that runs the suite links neither.
package conformance
