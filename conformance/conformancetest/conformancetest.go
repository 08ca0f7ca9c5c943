// Package conformancetest runs cairn's suites as Go tests, one subtest per
// bucket check or store scenario. It is the suites' only link to package
// testing: _test files import it, programs use the plain APIs of
// conformance and conformance/storesuite.
package conformancetest

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/conformance"
	"github.com/cairnstore/cairn/conformance/storesuite"
)

// RunBucketSuite runs the bucket suite as subtests of t, one per check,
// each on a fresh bucket from newBucket. An adapter's test is stricter
// than `cairn conformance`: a check cairn relies on must pass, and one it
// does not rely on must pass too unless the backend declares a known gap
// for it (a declared gap is reported with t.Skip and its reason). A known
// gap declared for a check that does not exist, or for one cairn relies
// on, fails t.
func RunBucketSuite(t *testing.T, newBucket conformance.NewBucketFunc, opts conformance.BucketOptions) {
	t.Helper()
	checks := conformance.BucketChecks()
	for name := range opts.KnownGaps {
		i := slices.IndexFunc(checks, func(c conformance.BucketCheck) bool { return c.Name == name })
		switch {
		case i < 0:
			t.Fatalf("known gap declared for unknown check %q", name)
		case checks[i].ReliedOn:
			t.Fatalf("known gap declared for check %q, which cairn relies on (%s)", name, checks[i].Why)
		}
	}
	for _, c := range checks {
		t.Run(c.Name, func(t *testing.T) {
			o := conformance.RunCheck(t.Context(), c, newBucket, opts)
			switch {
			case o.Result == conformance.Fail:
				t.Fatal(o.Detail)
			case o.Result == conformance.Note && o.Gap == "":
				t.Fatalf("%s; no known gap is declared for it", o.Detail)
			case o.Result == conformance.Note:
				t.Skipf("known gap: %s (observed: %s)", o.Gap, o.Detail)
			}
		})
	}
}

// RunStoreSuite runs the store suite's scenarios as subtests of t.
// newBucket returns a fresh, empty bucket for each scenario; every replica
// reaches it through its own fault injector. Each subtest logs its summary
// line and fails on any of the report's Problems.
func RunStoreSuite(t *testing.T, newBucket func(t *testing.T) bucket.Bucket, opts storesuite.Options) {
	t.Helper()
	names := storesuite.Scenarios()
	for _, n := range opts.Scenarios {
		if !slices.Contains(names, n) {
			t.Fatalf("conformancetest: unknown store scenario %q (have %v)", n, names)
		}
	}
	for n := range opts.Skip {
		if !slices.Contains(names, n) {
			t.Fatalf("conformancetest: skip of unknown store scenario %q (have %v)", n, names)
		}
	}
	seed, err := storesuite.Seed(opts.Seed)
	if err != nil {
		t.Fatal(err)
	}
	opts.Seed = seed
	t.Logf("store suite seed %d (%s=%d repeats it)", seed, storesuite.SeedEnv, seed)
	for _, name := range names {
		if opts.Scenarios != nil && !slices.Contains(opts.Scenarios, name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			if reason, ok := opts.Skip[name]; ok {
				t.Skip(reason)
			}
			b := newBucket(t)
			rep, err := storesuite.Run(t.Context(), b, name, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(rep.String())
			for _, class := range slices.Sorted(maps.Keys(rep.ErrorSamples)) {
				t.Logf("first %s error: %s", class, rep.ErrorSamples[class])
			}
			for _, d := range rep.Details {
				t.Log(d)
			}
			if p := rep.Problems(); len(p) > 0 {
				t.Errorf("store %s failed (seed %d; %s=%d repeats it):\n  %s",
					name, rep.Seed, storesuite.SeedEnv, rep.Seed, strings.Join(p, "\n  "))
			}
		})
	}
}
