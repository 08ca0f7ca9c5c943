package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/workbench"
)

func init() {
	register("changes", "print the change feed as JSON lines", runChanges)
}

// runChanges prints the change feed of one deployment root:
//
//	cairn changes [--bucket URL] [--agent ID] [--workbench ID] [--cursor C]
//	              [--after VERSION] [--limit N] [--follow] [--interval D]
//
// Each visible event is one line of JSON with sorted keys (the shape of
// workbench.Change). After the events comes one line
// {"caught_up":…,"next_cursor":"…","read_version":…}: the cursor that
// continues after them (pass it as --cursor). An event line always has a
// "kind" member and the cursor line never has one, so a reader tells them
// apart by it.
//
// Without --follow one page of at most --limit events (default 100) is
// printed. With --follow the command keeps reading: after each page that
// held events it prints that page's cursor line, and when it has caught up
// it waits --interval (default 1s) before reading again, until SIGINT or
// SIGTERM, when it prints the last cursor line and exits 0.
//
// --workbench limits the feed to one workbench; --after starts it after
// every event of that commit version. A cursor is bound to the
// --workbench and --after it was minted with.
//
// Exit status (exit.go): 0 when the page (or the follow) ended normally;
// 1 when the feed answered with an error (its envelope is printed as one
// line: a malformed cursor, one of another scope, an --after newer than
// the store); 2 for a usage error; 3 for a bucket that cannot be used.
func runChanges(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("changes", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	bucketURL := fs.String("bucket", "", "bucket URL (default: file://$PWD/"+defaultDataDir+", created if missing)")
	agent := fs.String("agent", workbench.DefaultAgentID, "agent id: the feed of /agents/ID/wb")
	id := fs.String("workbench", "", "only the events of this workbench")
	cursor := fs.String("cursor", "", "continue after the events a previous run printed")
	after := fs.String("after", "", "start after every event of this commit version")
	limit := fs.Int("limit", workbench.DefaultChangesLimit, fmt.Sprintf("events per page, 1 to %d", workbench.MaxChangesLimit))
	follow := fs.Bool("follow", false, "keep reading new events until interrupted")
	interval := fs.Duration("interval", time.Second, "with --follow, the wait between reads once caught up")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: cairn changes [--bucket URL] [--agent ID] [--workbench ID] [--cursor C] [--after VERSION] [--limit N] [--follow] [--interval D]")
		fs.PrintDefaults()
	}
	if _, code, done := parseFlags(e, fs, args); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "cairn changes: "+format+"\n", a...)
		fs.Usage()
		return exitUsage
	}
	if fs.NArg() != 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if err := nonEmptyFlags(fs, "agent", "bucket", "workbench", "cursor", "after"); err != nil {
		return usageErr("%v", err)
	}
	req := workbench.ChangesRequest{WorkbenchID: *id, Cursor: *cursor, Limit: *limit}
	if *after != "" {
		v, err := strconv.ParseUint(*after, 10, 64)
		if err != nil {
			return usageErr("--after %q is not a commit version (a decimal number)", *after)
		}
		req.AfterCommitVersion = &v
	}
	if *limit < 1 || *limit > workbench.MaxChangesLimit {
		return usageErr("--limit %d is not between 1 and %d", *limit, workbench.MaxChangesLimit)
	}
	if *interval <= 0 {
		return usageErr("--interval must be positive")
	}

	b, url, code, err := openBucket(ctx, *bucketURL)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn changes: %v\n", err)
		return code
	}
	defer b.Close()
	s, err := workbench.Open(ctx, b, workbench.Options{AgentID: *agent})
	if err != nil {
		var werr *workbench.Error
		if errors.As(err, &werr) && werr.Code == workbench.CodeInvalidArguments {
			fmt.Fprintf(e.stderr, "cairn changes: --agent: %s\n", werr.Message)
			return exitUsage
		}
		fmt.Fprintf(e.stderr, "cairn changes: open %s: %v\n", url, err)
		return printEnvelope(e, workbench.FromError(err))
	}
	defer s.Close()

	var last *workbench.ChangesPage
	for {
		page, err := s.ReadChanges(ctx, req)
		if err != nil {
			if *follow && last != nil && ctx.Err() != nil {
				// Interrupted while following: the last cursor stands.
				printCursor(e, last)
				return exitOK
			}
			return printEnvelope(e, workbench.FromError(err))
		}
		for _, ev := range page.Events {
			line, _ := workbench.MarshalResult(ev)
			fmt.Fprintf(e.stdout, "%s\n", line)
		}
		last = &page
		req.Cursor, req.AfterCommitVersion = page.NextCursor, nil
		if !*follow {
			printCursor(e, last)
			return exitOK
		}
		if len(page.Events) > 0 {
			printCursor(e, last)
		}
		if page.CaughtUp {
			if bucket.Sleep(ctx, *interval) != nil {
				printCursor(e, last)
				return exitOK
			}
		}
	}
}

// printCursor prints the line that continues the feed after page.
func printCursor(e *env, page *workbench.ChangesPage) {
	line, _ := workbench.MarshalResult(map[string]any{
		"next_cursor":  page.NextCursor,
		"read_version": page.ReadVersion,
		"caught_up":    page.CaughtUp,
	})
	fmt.Fprintf(e.stdout, "%s\n", line)
}

// printEnvelope prints an error result and returns exitFailed.
func printEnvelope(e *env, werr *workbench.Error) int {
	out, _ := workbench.MarshalResult(werr.Envelope())
	fmt.Fprintf(e.stdout, "%s\n", out)
	return exitFailed
}
