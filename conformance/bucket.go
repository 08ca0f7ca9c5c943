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
	KnownGaps map[string]string
}

// BucketCheck is one behaviour of the Bucket port.
type BucketCheck struct {
	Name string
	Run  func(ctx context.Context, b bucket.Bucket) error
}

// Result is how a check ended.
type Result string

const (
	Pass     Result = "pass"
	Fail     Result = "fail"
	KnownGap Result = "known gap"
)

// Outcome is the result of one check.
type Outcome struct {
	Name   string
	Result Result
	Detail string // the failure, or the declared reason of a known gap
}

// BucketChecks returns the bucket suite's checks in a fixed order.
func BucketChecks() []BucketCheck {
	return []BucketCheck{
		{"round-trip", checkRoundTrip},
		{"empty-object", checkEmptyObject},
		{"missing-keys", checkMissingKeys},
		{"overwrite", checkOverwrite},
		{"create-only-twice", checkCreateOnlyTwice},
		{"replace-if-version", checkReplaceIfVersion},
		{"delete-recreate", checkDeleteRecreate},
		{"conditional-delete", checkConditionalDelete},
		{"versions-consistent", checkVersionsConsistent},
		{"list-order", checkListOrder},
		{"key-and-prefix-coexist", checkKeyAndPrefixCoexist},
		{"list-prefix", checkListPrefix},
		{"list-delimiter", checkListDelimiter},
		{"list-start-after", checkListStartAfter},
		{"list-paging", checkListPaging},
		{"read-after-write", checkReadAfterWrite},
		{"list-after-write", checkListAfterWrite},
		{"concurrent-create", checkConcurrentCreate},
		{"concurrent-replace", checkConcurrentReplace},
		{"invalid-keys", checkInvalidKeys},
		{"long-key", checkLongKey},
		{"cancelled-context", checkCancelledContext},
		{"big-object", checkBigObject},
		{"zero-values", checkZeroValues},
	}
}

// RunCheck runs one check on a fresh bucket from newBucket and classifies
// the result: a failure is a known gap when opts.KnownGaps or the bucket's
// Capabilities.KnownGaps declare one for the check.
func RunCheck(ctx context.Context, c BucketCheck, newBucket NewBucketFunc, opts BucketOptions) Outcome {
	b, err := newBucket(ctx)
	if err != nil {
		return Outcome{c.Name, Fail, "new bucket: " + err.Error()}
	}
	defer b.Close()
	err = c.Run(ctx, b)
	if err == nil {
		return Outcome{c.Name, Pass, ""}
	}
	reason, declared := opts.KnownGaps[c.Name]
	if !declared {
		reason, declared = b.Capabilities().KnownGaps[c.Name]
	}
	if declared {
		return Outcome{c.Name, KnownGap, fmt.Sprintf("%s (observed: %v)", reason, err)}
	}
	return Outcome{c.Name, Fail, err.Error()}
}

// RunBucket runs every check, reporting each outcome as it ends, and
// returns the number of failures.
func RunBucket(ctx context.Context, newBucket NewBucketFunc, opts BucketOptions, report func(Outcome)) int {
	failed := 0
	for _, c := range BucketChecks() {
		o := RunCheck(ctx, c, newBucket, opts)
		if o.Result == Fail {
			failed++
		}
		report(o)
	}
	return failed
}
