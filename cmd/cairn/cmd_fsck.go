package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cairnstore/cairn/cmd/cairn/internal/progress"
	"github.com/cairnstore/cairn/workbench"
)

func init() {
	register("fsck", "check a deployment root's objects and records against each other", runFsck)
}

// runFsck checks one agent's deployment root:
//
//	cairn fsck [--bucket URL] [--agent ID] [--bodies] [--json] [--max-findings N]
//
// It runs workbench.Fsck: the engine's strict check of every object the
// head's root and every held root reach, every block the manifests name
// fetched and checked against its digest, and the Workbench records
// checked against each other (reference counts, GC candidates, manifests,
// paths, directories, index rows, commit seals, snapshot holds; see
// docs/operations.md, "What fsck checks"). --bodies also reads every
// body whole and checks its digest. It writes nothing.
//
// Each finding is printed on standard output, one line each, then a
// summary; with --json, one JSON object (the report) instead. With
// --bodies, progress goes to standard error while bodies are read, as a
// bar on a terminal.
//
// Exit status (see exit.go): 0 when nothing was found, 1 on any finding
// (or a check that could not finish), 2 for a usage error, 3 for a bucket
// that does not exist, cannot be reached or refuses the credentials.
func runFsck(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("fsck", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	bucketURL := fs.String("bucket", "", "bucket URL (default: file://$PWD/"+defaultDataDir+", created if missing)")
	agent := fs.String("agent", workbench.DefaultAgentID, "agent id: check the deployment root /agents/ID/wb")
	bodies := fs.Bool("bodies", false, "also read every body whole and check it against its digest")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	maxFindings := fs.Int("max-findings", 1000, "stop collecting findings after this many")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: cairn fsck [--bucket URL] [--agent ID] [--bodies] [--json] [--max-findings N]")
		fs.PrintDefaults()
	}
	if _, code, done := parseFlags(e, fs, args); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "cairn fsck: "+format+"\n", a...)
		fs.Usage()
		return exitUsage
	}
	if fs.NArg() != 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if err := nonEmptyFlags(fs, "agent", "bucket"); err != nil {
		return usageErr("%v", err)
	}
	if *maxFindings <= 0 {
		return usageErr("--max-findings must be positive")
	}
	if _, werr := workbench.AgentRoot(*agent); werr != nil {
		return usageErr("--agent: %s", werr.Message)
	}

	b, url, code, err := openBucket(ctx, *bucketURL)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn fsck: %v\n", err)
		return code
	}
	defer b.Close()
	opts := workbench.FsckOptions{AgentID: *agent, Bodies: *bodies, MaxFindings: *maxFindings}
	var meter *progress.Meter
	if *bodies {
		// One meter per root: each root counts the bodies it reads first.
		opts.Progress = func(done, total int) {
			if done == 1 {
				if meter != nil {
					meter.Stop()
				}
				meter = progress.Start(e.stderr, progress.Options{Label: "fsck bodies", Total: int64(total), Terminal: progress.IsTerminal(e.stderr)})
			}
			meter.Add(1, 0)
		}
	}
	rep, err := workbench.Fsck(ctx, b, opts)
	if meter != nil {
		meter.Stop()
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn fsck: %s: %v\n", url, err)
		return exitFailed
	}
	if *asJSON {
		if rep.Findings == nil {
			rep.Findings = []workbench.FsckFinding{}
		}
		out, err := json.Marshal(rep)
		if err != nil {
			fmt.Fprintf(e.stderr, "cairn fsck: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(e.stdout, "%s\n", out)
	} else {
		printFsck(e.stdout, url, rep)
	}
	if !rep.Clean() {
		return exitFailed
	}
	return exitOK
}

// printFsck prints the findings, one a line, then the summary.
func printFsck(w io.Writer, url string, rep *workbench.FsckReport) {
	for _, f := range rep.Findings {
		fmt.Fprintln(w, f.String())
	}
	if rep.Truncated {
		fmt.Fprintf(w, "(more findings not collected past %d)\n", len(rep.Findings))
	}
	fmt.Fprintf(w, "bucket:    %s\n", url)
	fmt.Fprintf(w, "agent:     %s (shard %s)\n", rep.AgentID, rep.Shard)
	if rep.Empty {
		fmt.Fprintf(w, "head:      no commit (no head, or a genesis head): nothing to check\n")
		return
	}
	fmt.Fprintf(w, "head:      %s (sequence %d)\n", rep.Head, rep.Sequence)
	fmt.Fprintf(w, "roots:     %d checked: the head's, %d pinned, and the roots their holds name\n", rep.Roots, rep.Pins)
	fams := make([]string, 0, len(rep.Records))
	total := 0
	for f, n := range rep.Records {
		fams = append(fams, fmt.Sprintf("%s %d", f, n))
		total += n
	}
	slices.Sort(fams)
	fmt.Fprintf(w, "records:   %d checked, summed over the roots: %s\n", total, strings.Join(fams, ", "))
	fmt.Fprintf(w, "objects:   %d verified, %s (%d blocks, %s)\n", rep.Objects, progress.Bytes(rep.Bytes), rep.Blocks, progress.Bytes(rep.BlockBytes))
	if rep.Bodies > 0 {
		fmt.Fprintf(w, "bodies:    %d read whole, %s\n", rep.Bodies, progress.Bytes(rep.BodyBytes))
	}
	fmt.Fprintf(w, "time:      %s\n", rep.Elapsed.Round(time.Millisecond))
	if rep.Clean() {
		fmt.Fprintln(w, "result:    clean")
	} else {
		fmt.Fprintf(w, "result:    %d findings\n", len(rep.Findings))
	}
}
