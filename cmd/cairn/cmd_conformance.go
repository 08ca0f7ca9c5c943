package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/conformance"
)

func init() {
	register("conformance", "check that a bucket honours the Bucket port (non-destructive)", runConformance)
}

// runConformance runs the bucket suite against a user's bucket. Everything
// it writes goes under one fresh prefix, which it refuses to use if it
// already holds objects, and removes when it is done.
//
// It grades the store by what cairn relies on: a failed check of a
// behaviour cairn never uses is a portability note. The verdict line says
// whether cairn can run on the store; the exit status is 0 when it can
// (and the cleanup worked), 1 when it cannot, 2 for a usage error and 3
// for a bucket that does not exist, cannot be reached or refuses the
// credentials.
func runConformance(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	prefix := fs.String("prefix", "", "prefix to work under (default: a fresh random cairn-conformance-…/ prefix)")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: cairn conformance [--prefix P/] URL")
		fs.PrintDefaults()
	}
	if _, code, done := parseFlags(e, fs, args); done {
		return code
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		fs.Usage()
		return exitUsage
	}
	if err := nonEmptyFlags(fs, "prefix"); err != nil {
		fmt.Fprintf(e.stderr, "cairn conformance: %v\n", err)
		return exitUsage
	}
	url := fs.Arg(0)
	if *prefix == "" {
		var r [8]byte
		rand.Read(r[:])
		*prefix = "cairn-conformance-" + hex.EncodeToString(r[:]) + "/"
	}
	b, _, code, err := openBucket(ctx, url)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn conformance: %v\n", err)
		return code
	}
	defer b.Close()
	page, err := b.List(ctx, bucket.ListOptions{Prefix: *prefix, PageSize: 1})
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn conformance: list %q: %v\n", *prefix, err)
		return exitStore
	}
	if len(page.Objects) > 0 {
		fmt.Fprintf(e.stderr, "cairn conformance: refusing prefix %q: it already holds objects (first: %q)\n", *prefix, page.Objects[0].Key)
		return exitUsage
	}

	fmt.Fprintf(e.stdout, "conformance of %s under %s\n", url, *prefix)
	n := 0
	var cleanupErr error
	newBucket := func(ctx context.Context) (bucket.Bucket, error) {
		n++
		return bucket.WithPrefix(b, fmt.Sprintf("%s%02d/", *prefix, n))
	}
	var condDelete conformance.Outcome
	sum := conformance.RunBucket(ctx, newBucket, conformance.BucketOptions{}, func(o conformance.Outcome) {
		if o.Name == "conditional-delete" {
			condDelete = o
		}
		line := fmt.Sprintf("%-9s %s", o.Result, o.Name)
		if o.Detail != "" {
			line += ": " + o.Detail
		}
		if o.Gap != "" {
			line += "; known gap: " + o.Gap
		}
		fmt.Fprintln(e.stdout, line)
		// Remove what the check wrote before the next one starts.
		if err := bucket.DeleteAll(ctx, b, fmt.Sprintf("%s%02d/", *prefix, n)); err != nil && cleanupErr == nil {
			cleanupErr = err
		}
	})
	left, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: *prefix})
	cleaned := false
	switch {
	case cleanupErr != nil:
		fmt.Fprintf(e.stdout, "cleanup failed: %v\n", cleanupErr)
	case err != nil:
		fmt.Fprintf(e.stdout, "cleanup check failed: %v\n", err)
	case len(left) > 0:
		fmt.Fprintf(e.stdout, "cleanup left %d objects under %s\n", len(left), *prefix)
	default:
		cleaned = true
	}
	fmt.Fprintln(e.stdout, conditionalDeleteLine(b.Capabilities().ConditionalDelete, condDelete.Result))
	fmt.Fprintln(e.stdout, sum)
	fmt.Fprintln(e.stdout, sum.Verdict())
	if !sum.CanRun() || !cleaned {
		return exitFailed
	}
	return exitOK
}

// conditionalDeleteLine says what the run learned of conditional deletes:
// whether the URL declares them and, if so, whether the store honours
// them (the conditional-delete check).
func conditionalDeleteLine(declared bool, r conformance.Result) string {
	switch {
	case !declared:
		return "conditional delete: not declared for this store: gc deletes unconditionally, and keeps what is rewritten in place (idempotency records)"
	case r == conformance.Pass:
		return "conditional delete: declared and honoured: gc deletes an object only if it is still the version it listed"
	default:
		return "conditional delete: declared but NOT honoured: the store deletes whatever is there; declare it without (s3: conditional_delete=false) so that gc deletes nothing that can be rewritten in place"
	}
}
