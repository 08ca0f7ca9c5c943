package conformance

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/bucket"
)

// NewBucketFunc returns a fresh, empty bucket for one check.
type NewBucketFunc func(ctx context.Context) (bucket.Bucket, error)

// BucketOptions adjust the bucket suite to a backend.
type BucketOptions struct {
	// KnownGaps maps a check's name to why this backend cannot honour it.
	// Only a check cairn does not rely on can have one.
	KnownGaps map[string]string
}

// BucketCheck is one behaviour of the Bucket port.
type BucketCheck struct {
	Name string
	// ReliedOn says whether cairn needs the behaviour to run correctly on
	// a store. A failure of a behaviour it never uses is a portability
	// note, not a failure: other programs using the port may need it,
	// cairn does not.
	ReliedOn bool
	// ReliedOnIf, if set, decides instead of ReliedOn from the capabilities
	// of the bucket under test: cairn relies on conditional deletes only
	// where the store declares them.
	ReliedOnIf func(bucket.Capabilities) bool
	// Uses names the kinds of request (bucket/counting's Kind) whose use
	// by cairn means it relies on the behaviour: ReliedOn is true exactly
	// when cairn's commands make one of them (a test runs them over a
	// counting bucket and checks). "key-and-prefix" is a key written
	// beside other keys under it as a directory. Empty for a behaviour no
	// request shows (zero-values), which cairn does not rely on.
	Uses []string
	// Why says where cairn relies on the behaviour, or why it never does.
	Why string
	Run func(ctx context.Context, b bucket.Bucket) error
}

// Relied reports whether cairn relies on c's behaviour on a store with
// the capabilities caps.
func (c BucketCheck) Relied(caps bucket.Capabilities) bool {
	if c.ReliedOnIf != nil {
		return c.ReliedOnIf(caps)
	}
	return c.ReliedOn
}

// Result is how a check ended.
type Result string

const (
	Pass Result = "pass"
	// Fail: a behaviour cairn relies on does not hold; cairn cannot run on
	// the store.
	Fail Result = "fail"
	// Note: a behaviour cairn does not rely on does not hold. It is a
	// portability note, never a pass.
	Note Result = "portability note"
)

// Outcome is the result of one check.
type Outcome struct {
	Name   string
	Result Result
	// Detail is what went wrong, for a failure or a note; a note also says
	// why cairn does not need the behaviour.
	Detail string
	// Gap is the reason a backend declared for not honouring the check
	// (BucketOptions.KnownGaps or Capabilities.KnownGaps), if the check
	// failed and one was declared.
	Gap string
}

// BucketChecks returns the bucket suite's checks in a fixed order. What
// cairn relies on is what its commands ask of the store: a test in
// cmd/cairn runs the Workbench tools, several replicas with intents, the
// HTTP server's idempotency records, pins (create, list, verify, copy,
// restore, delete), gc (the sweep and the collection of revisions), fsck
// and the change feed over a counting bucket that pages its listings
// small, and checks that each check whose Uses it saw is ReliedOn and no
// other is. Every key cairn writes comes from shards.Layout.
func BucketChecks() []BucketCheck {
	return []BucketCheck{
		{Name: "round-trip", ReliedOn: true, Run: checkRoundTrip, Uses: []string{"get"},
			Why: "every engine object is written once and read back byte for byte"},
		{Name: "empty-object", ReliedOn: true, Run: checkEmptyObject, Uses: []string{"put-empty"},
			Why: "gc reads the store's clock from the time of an empty probe object it creates and deletes"},
		{Name: "missing-keys", ReliedOn: true, Run: checkMissingKeys, Uses: []string{"get-missing", "stat-missing"},
			Why: "a missing head (ErrNotExist) is how a reader meets a shard never written, and IfVersion on a missing head must fail"},
		{Name: "overwrite", ReliedOn: true, Run: checkOverwrite, Uses: []string{"put-if-version"},
			Why: "every commit overwrites the shard's head, and the new version is what the next commit conditions on"},
		{Name: "create-only-twice", ReliedOn: true, Run: checkCreateOnlyTwice, Uses: []string{"put-if-absent"},
			Why: "the first head, pins, intents, staging ledgers and idempotency records are written create-only (IfAbsent)"},
		{Name: "replace-if-version", ReliedOn: true, Run: checkReplaceIfVersion, Uses: []string{"put-if-version"},
			Why: "a commit replaces the head only if it is the version the commit read (IfVersion): it is cairn's compare-and-swap; the HTTP server's idempotency records change state the same way"},
		{Name: "delete-recreate", ReliedOn: true, Run: checkDeleteRecreate, Uses: []string{"delete", "delete-if-version"},
			Why: "gc deletes what no root reaches, settled intents and landed ledgers are deleted, pins are deleted and may be created again under their name: a deleted key must be gone, and a stale version must not match what replaced it"},
		{Name: "conditional-delete", ReliedOnIf: func(c bucket.Capabilities) bool { return c.ConditionalDelete }, Run: checkConditionalDelete, Uses: []string{"delete-if-version"},
			Why: "where the store declares conditional deletes, gc deletes each object only if it is still the version it listed; a store declared without them (s3 conditional_delete=false, fake-gcs-server) gets unconditional deletes, and nothing that can be rewritten in place is deleted there"},
		{Name: "versions-consistent", ReliedOn: true, Run: checkVersionsConsistent, Uses: []string{"put-if-version"},
			Why: "the version a read returns is the one the next conditional write names"},
		{Name: "list-order", ReliedOn: false, Run: checkListOrder, Uses: []string{"list-start-after"},
			Why: "cairn never resumes a listing from a key: it follows page tokens, and sorts what it needs in order (intents) itself"},
		{Name: "key-and-prefix-coexist", ReliedOn: false, Run: checkKeyAndPrefixCoexist, Uses: []string{"key-and-prefix"},
			Why: "cairn never writes a key ending in / nor a key that is also the directory of another: each kind of engine key has a fixed depth under its own literal segment (shards/ID/head, shards/ID/roots/HASH, artifacts/ID/ROOT/REV/blocks/N, ...)"},
		{Name: "list-prefix", ReliedOn: true, Run: checkListPrefix, Uses: []string{"list"},
			Why: "gc, pins and intents list what lies under a prefix, and a reader that finds no head lists the shard's prefix to tell a shard never written from one whose head is lost"},
		{Name: "list-delimiter", ReliedOn: true, Run: checkListDelimiter, Uses: []string{"list-delimiter"},
			Why: "cairn gc --all-agents finds the agents' shards by listing shards/ with the delimiter /"},
		{Name: "list-start-after", ReliedOn: false, Run: checkListStartAfter, Uses: []string{"list-start-after"},
			Why: "cairn never lists from a start key"},
		{Name: "list-paging", ReliedOn: true, Run: checkListPaging, Uses: []string{"list-next-page"},
			Why: "gc's sweep, the pins' and the intents' listings read every page, following the store's page tokens"},
		{Name: "read-after-write", ReliedOn: true, Run: checkReadAfterWrite, Uses: []string{"get"},
			Why: "a commit reads the head another process just wrote, and a reader must see the latest commit"},
		{Name: "list-after-write", ReliedOn: true, Run: checkListAfterWrite, Uses: []string{"list"},
			Why: "a listing that missed written objects would miss pending intents and pins, or take a shard whose head is lost for one never written"},
		{Name: "concurrent-create", ReliedOn: true, Run: checkConcurrentCreate, Uses: []string{"put-if-absent"},
			Why: "writers racing to create a shard's first head must have exactly one winner"},
		{Name: "concurrent-replace", ReliedOn: true, Run: checkConcurrentReplace, Uses: []string{"put-if-version"},
			Why: "writers racing to commit on one head must have exactly one winner: it is what makes commits serializable"},
		{Name: "invalid-keys", ReliedOn: false, Run: checkInvalidKeys, Uses: []string{"invalid-key"},
			Why: "cairn writes only its layout's keys: ASCII, no empty or dot segments, far below the length limit"},
		{Name: "long-key", ReliedOn: false, Run: checkLongKey, Uses: []string{"long-key"},
			Why: "cairn's keys are under 256 bytes (plus the bucket URL's prefix); the check writes 900"},
		{Name: "cancelled-context", ReliedOn: true, Run: checkCancelledContext, Uses: []string{"context-ended"},
			Why: "a tool call or import that is interrupted stops its requests, and the engine sends no head write once its callers have gone; a store that ignores cancellation keeps them running"},
		{Name: "big-object", ReliedOn: true, Run: checkBigObject, Uses: []string{"put-large"},
			Why: "body blocks are 4 MiB by default and shard objects grow with the data"},
		{Name: "zero-values", ReliedOn: false, Run: checkZeroValues,
			Why: "cairn reads nothing but the error of a failed call"},
	}
}

// RunCheck runs one check on a fresh bucket from newBucket and classifies
// the result. A failure of a check cairn does not rely on is a note; of
// one it relies on, a failure, even if a gap is declared for it. A
// declared gap (opts.KnownGaps, else the bucket's Capabilities.KnownGaps)
// is attached to the outcome; it never turns a failure into a pass.
func RunCheck(ctx context.Context, c BucketCheck, newBucket NewBucketFunc, opts BucketOptions) Outcome {
	b, err := newBucket(ctx)
	if err != nil {
		return Outcome{Name: c.Name, Result: Fail, Detail: "new bucket: " + err.Error()}
	}
	defer b.Close()
	err = c.Run(ctx, b)
	if err == nil {
		return Outcome{Name: c.Name, Result: Pass}
	}
	gap, declared := opts.KnownGaps[c.Name]
	if !declared {
		gap = b.Capabilities().KnownGaps[c.Name]
	}
	if c.Relied(b.Capabilities()) {
		return Outcome{Name: c.Name, Result: Fail, Detail: err.Error(), Gap: gap}
	}
	return Outcome{Name: c.Name, Result: Note, Detail: fmt.Sprintf("%v (cairn does not rely on it: %s)", err, c.Why), Gap: gap}
}

// Summary counts a run's outcomes and gives its verdict.
type Summary struct {
	Passed, Failed, Notes int
}

// Add counts o.
func (s *Summary) Add(o Outcome) {
	switch o.Result {
	case Pass:
		s.Passed++
	case Fail:
		s.Failed++
	case Note:
		s.Notes++
	}
}

// CanRun reports whether cairn can run on the store: every check of a
// behaviour it relies on passed.
func (s Summary) CanRun() bool { return s.Failed == 0 }

// String is the counts: "23 passed, 0 failed, 1 portability notes".
func (s Summary) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d portability notes", s.Passed, s.Failed, s.Notes)
}

// Verdict is one line saying whether cairn can run on the store.
func (s Summary) Verdict() string {
	if s.CanRun() {
		return "verdict: cairn can run on this store"
	}
	return fmt.Sprintf("verdict: cairn cannot run on this store: %d behaviours it relies on failed", s.Failed)
}

// RunBucket runs every check, reporting each outcome as it ends, and
// returns the summary of the run.
func RunBucket(ctx context.Context, newBucket NewBucketFunc, opts BucketOptions, report func(Outcome)) Summary {
	var s Summary
	for _, c := range BucketChecks() {
		o := RunCheck(ctx, c, newBucket, opts)
		s.Add(o)
		report(o)
	}
	return s
}
