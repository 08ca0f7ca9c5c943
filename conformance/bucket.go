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
	// Why says where cairn relies on the behaviour, or why it never does.
	Why string
	Run func(ctx context.Context, b bucket.Bucket) error
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
// cairn relies on was read off the engine: every key it writes comes from
// shards.Layout; it writes with Put (unconditional, IfAbsent, and IfVersion
// on the head), reads with Get and Stat, deletes only unconditionally
// (staging ledgers and the blocks of an abandoned publish), and lists only
// once, one object under a shard's prefix, to tell a shard never written
// from one whose head is lost.
func BucketChecks() []BucketCheck {
	return []BucketCheck{
		{Name: "round-trip", ReliedOn: true, Run: checkRoundTrip,
			Why: "every engine object is written once and read back byte for byte"},
		{Name: "empty-object", ReliedOn: false, Run: checkEmptyObject,
			Why: "cairn never writes an empty object: engine objects start with a header, and empty and small bodies are kept inline in their manifest row"},
		{Name: "missing-keys", ReliedOn: true, Run: checkMissingKeys,
			Why: "a missing head (ErrNotExist) is how a reader meets a shard never written, and IfVersion on a missing head must fail"},
		{Name: "overwrite", ReliedOn: true, Run: checkOverwrite,
			Why: "every commit overwrites the shard's head, and the new version is what the next commit conditions on"},
		{Name: "create-only-twice", ReliedOn: true, Run: checkCreateOnlyTwice,
			Why: "the first head and every body object are written create-only (IfAbsent)"},
		{Name: "replace-if-version", ReliedOn: true, Run: checkReplaceIfVersion,
			Why: "a commit replaces the head only if it is the version the commit read (IfVersion): it is cairn's compare-and-swap"},
		{Name: "delete-recreate", ReliedOn: true, Run: checkDeleteRecreate,
			Why: "a deleted key must be gone, and a stale version must not match what replaced it, or a compare-and-swap could land on the wrong object"},
		{Name: "conditional-delete", ReliedOn: false, Run: checkConditionalDelete,
			Why: "cairn deletes only unconditionally: staging ledgers and the blocks of an abandoned publish, whose keys no one else writes"},
		{Name: "versions-consistent", ReliedOn: true, Run: checkVersionsConsistent,
			Why: "the version a read returns is the one the next conditional write names"},
		{Name: "list-order", ReliedOn: false, Run: checkListOrder,
			Why: "cairn's one listing asks only whether a shard's prefix holds any object, never in what order"},
		{Name: "key-and-prefix-coexist", ReliedOn: false, Run: checkKeyAndPrefixCoexist,
			Why: "cairn never writes a key ending in / nor a key that is also the directory of another: each kind of engine key has a fixed depth under its own literal segment (shards/ID/head, shards/ID/roots/HASH, artifacts/ID/ROOT/REV/blocks/N, ...)"},
		{Name: "list-prefix", ReliedOn: true, Run: checkListPrefix,
			Why: "a reader that finds no head lists the shard's prefix to tell a shard never written from one whose head is lost"},
		{Name: "list-delimiter", ReliedOn: false, Run: checkListDelimiter,
			Why: "cairn never lists with a delimiter"},
		{Name: "list-start-after", ReliedOn: false, Run: checkListStartAfter,
			Why: "cairn never lists from a start key"},
		{Name: "list-paging", ReliedOn: false, Run: checkListPaging,
			Why: "cairn reads only the first page of its one listing, and only whether it is empty"},
		{Name: "read-after-write", ReliedOn: true, Run: checkReadAfterWrite,
			Why: "a commit reads the head another process just wrote, and a reader must see the latest commit"},
		{Name: "list-after-write", ReliedOn: true, Run: checkListAfterWrite,
			Why: "a listing that missed written objects would take a shard whose head is lost for one never written"},
		{Name: "concurrent-create", ReliedOn: true, Run: checkConcurrentCreate,
			Why: "writers racing to create a shard's first head must have exactly one winner"},
		{Name: "concurrent-replace", ReliedOn: true, Run: checkConcurrentReplace,
			Why: "writers racing to commit on one head must have exactly one winner: it is what makes commits serializable"},
		{Name: "invalid-keys", ReliedOn: false, Run: checkInvalidKeys,
			Why: "cairn writes only its layout's keys: ASCII, no empty or dot segments, far below the length limit"},
		{Name: "long-key", ReliedOn: false, Run: checkLongKey,
			Why: "cairn's keys are under 200 bytes (plus the bucket URL's prefix); the check writes 900"},
		{Name: "cancelled-context", ReliedOn: true, Run: checkCancelledContext,
			Why: "a tool call or import that is interrupted stops its requests; a store that ignores cancellation keeps it running"},
		{Name: "big-object", ReliedOn: true, Run: checkBigObject,
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
	if c.ReliedOn {
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
