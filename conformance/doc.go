// Package conformance holds the bucket suite every Bucket adapter must
// pass. Sub-packages hold the store suite (storesuite) and the fake-GCS
// harness (fakegcs).
//
// # The bucket suite
//
// BucketChecks lists one check per behaviour of the Bucket port. Each check
// gets a fresh, empty bucket from a NewBucketFunc and returns an error when
// the bucket misbehaves. Each also says whether cairn relies on the
// behaviour, and why (BucketCheck.ReliedOn, Why). RunBucket runs them all,
// reports each Outcome and returns a Summary whose verdict says whether
// cairn can run on the store; the `cairn conformance` command points them
// at a user's bucket under a fresh prefix. RunCheck runs one. Package
// conformancetest runs them as subtests of a Go test.
//
// A failed check of a behaviour cairn relies on is a failure (Fail); of
// one it does not rely on, a portability note (Note). Neither is a pass.
// A backend may declare a known gap (BucketOptions.KnownGaps, or the
// adapter's Capabilities.KnownGaps); its reason travels with the outcome
// and does not change the grade. conformancetest is stricter than the
// command: there a note must be declared, and a gap may not be declared
// for a behaviour cairn relies on.
//
// The package imports no adapter and not package testing, so a program
// that runs the suite links neither.
package conformance
