package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/conformance/fakegcs"
)

func init() {
	register("fake-gcs", "run a local fake GCS (fake-gcs-server) for development", runFakeGCS)
}

// stringList is a flag that may be given more than once.
type stringList []string

func (l *stringList) String() string     { return fmt.Sprint(*l) }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// runFakeGCS serves fake-gcs-server on a loopback address until the
// process is interrupted, printing one gs:// URL per bucket it created.
func runFakeGCS(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("fake-gcs", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	addr := fs.String("addr", "127.0.0.1:4443", "loopback `host:port` to listen on (port 0 picks a free one)")
	dir := fs.String("dir", "", "keep objects in this `directory` (default: in memory)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this `file`, complete once the server stops")
	var buckets stringList
	fs.Var(&buckets, "bucket", "create this bucket at start (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: cairn fake-gcs [--addr HOST:PORT] [--dir PATH] [--bucket NAME]...")
		fmt.Fprintln(e.stderr, "\nPrints one gs://NAME?endpoint=…&emulator=fake-gcs-server URL per bucket (or")
		fmt.Fprintln(e.stderr, "the server's URL when no bucket is given) and serves until interrupted. The")
		fmt.Fprintln(e.stderr, "emulator parameter tells cairn the server is the fake, which ignores")
		fmt.Fprintln(e.stderr, "preconditions on delete. There is no authentication.")
		fs.PrintDefaults()
	}
	if _, code, done := parseFlags(e, fs, args); done {
		return code
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return exitUsage
	}
	if err := nonEmptyFlags(fs, "addr", "dir"); err != nil || slices.Contains(buckets, "") {
		if err == nil {
			err = errors.New("--bucket is empty")
		}
		fmt.Fprintf(e.stderr, "cairn fake-gcs: %v\n", err)
		return exitUsage
	}
	if len(buckets) == 0 {
		fmt.Fprintln(e.stderr, "cairn fake-gcs: no --bucket: open buckets you create as gs://NAME?endpoint=URL&emulator=fake-gcs-server")
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(e.stderr, "cairn fake-gcs: --cpuprofile: %v\n", err)
			return exitUsage
		}
		defer stop()
	}
	opts := fakegcs.Options{Addr: *addr, Dir: *dir}
	if err := fakegcs.Serve(ctx, opts, buckets, e.stdout); err != nil {
		fmt.Fprintf(e.stderr, "cairn fake-gcs: %v\n", err)
		return exitFailed
	}
	return exitOK
}
