package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/cmd/cairn/internal/progress"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench"
)

func init() {
	register("gc", "delete what no root, hold, pin or recent head reaches", runGC)
}

// runGC sweeps the shard of one agent, or of every Workbench agent:
//
//	cairn gc [--bucket URL] [--agent ID [--revisions=false] | --all-agents]
//	         [--grace D] [--dry-run] [--json] [--concurrency N]
//
// It commits an empty change (so that the head's store time is now),
// marks everything the head, its holds, the heads since the horizon and
// the pins reach, and deletes the shard's other objects that the store
// stamped before the horizon, a grace period before the head's store
// time (package gcsweep, docs/operations.md). It prints a report per
// shard: a table, or with --json one JSON object per line. --dry-run
// writes nothing and reports what it would delete (counting the horizon
// from this machine's clock: probing the store's would write). A
// progress bar is drawn on standard error when it is a terminal.
//
// On a local-file bucket it then removes the temporary files that writes
// of processes that died left behind, once older than the grace (a write
// keeps one only while it runs), and prints how many (with --json, one
// more line, {"temporary_files_removed":N,"dry_run":B}).
//
// With --agent, the sweep is followed by the collection of the agent's
// replaced artifact revisions that no root the sweep kept may still read
// (workbench.CollectRevisions): their blocks are deleted and they are
// marked Deleted, in batches, until none is due. --revisions=false skips
// it; --all-agents, which knows shards and not agents, does not collect.
// With --dry-run it only counts them.
//
// The grace period is the deployment root's own setting, which its
// writers read too (an hour unless recorded): --grace D records D first
// (any value from head.MinGrace to head.MaxGrace is safe; with --dry-run
// it is only reported as if). --all-agents sweeps every shard under
// shards/ whose head carries the Workbench's schema marker and skips, with
// a note, any other.
//
// Exit status (see exit.go): 0 when every sweep ran and every delete
// succeeded, 1 when a sweep stopped (a lost head, a bad pin, a missing
// object the head reaches) or a delete failed, 2 for a usage error, 3 for
// a bucket that cannot be used.
func runGC(ctx context.Context, e *env, args []string) int {
	cfg, code, done := parseGC(e, args)
	if done {
		return code
	}
	b, url, code, err := openBucket(ctx, cfg.bucketURL)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn gc: %v\n", err)
		return code
	}
	defer b.Close()
	targets := cfg.targets
	if cfg.all {
		if targets, err = workbenchShards(ctx, b); err != nil {
			fmt.Fprintf(e.stderr, "cairn gc: list shards of %s: %v\n", url, err)
			return exitStore
		}
		if len(targets) == 0 {
			fmt.Fprintf(e.stderr, "cairn gc: no shard in %s\n", url)
		}
	}
	exit := exitOK
	tempGrace := head.DefaultGrace
	for _, tg := range targets {
		grace, code := cfg.sweep(ctx, e, b, tg)
		tempGrace = max(tempGrace, grace)
		if code != exitOK {
			exit = code
		}
	}
	// Temporary files belong to no shard: they wait the grace given, or
	// else the longest of an hour and the graces of the shards swept.
	grace := cfg.grace
	if !cfg.graceSet {
		grace = tempGrace
	}
	if code := removeTemps(ctx, e, b, grace, cfg.dryRun, cfg.asJSON); code != exitOK {
		exit = code
	}
	return exit
}

// gcConfig is what the flags of `cairn gc` asked for.
type gcConfig struct {
	bucketURL     string
	targets       []gcTarget // with --agent; --all-agents lists them
	all           bool
	grace         time.Duration
	graceSet      bool
	idemRetention time.Duration
	dryRun        bool
	asJSON        bool
	concurrency   int
	collect       bool // collect revisions after each sweep
}

// parseGC reads the flags of `cairn gc`. done ends the command with
// code: after --help (exitOK), or a usage error, already printed.
func parseGC(e *env, args []string) (cfg gcConfig, code int, done bool) {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.StringVar(&cfg.bucketURL, "bucket", "", "bucket URL (default: file://$PWD/"+defaultDataDir+", created if missing)")
	agent := fs.String("agent", workbench.DefaultAgentID, "agent id: sweep the shard serving /agents/ID/wb")
	fs.BoolVar(&cfg.all, "all-agents", false, "sweep every Workbench shard in the bucket")
	fs.DurationVar(&cfg.grace, "grace", 0, "record this as the deployment root's grace period first (default: keep the recorded one, an hour unless set)")
	fs.DurationVar(&cfg.idemRetention, "idempotency-retention", gcsweep.DefaultIdempotencyRetention, "delete the HTTP server's idempotency records older than this (negative: keep them)")
	fs.BoolVar(&cfg.dryRun, "dry-run", false, "delete nothing; report what would be deleted")
	fs.BoolVar(&cfg.asJSON, "json", false, "print each report as one line of JSON")
	fs.IntVar(&cfg.concurrency, "concurrency", gcsweep.DefaultConcurrency, "requests in flight")
	revisions := fs.Bool("revisions", true, "after the sweep, collect the replaced artifact revisions no reader can read any more (with --agent; =false skips it)")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: cairn gc [--bucket URL] [--agent ID [--revisions=false] | --all-agents] [--grace D] [--dry-run] [--json]")
		fs.PrintDefaults()
	}
	set, code, done := parseFlags(e, fs, args)
	if done {
		return cfg, code, true
	}
	usageErr := func(format string, a ...any) (gcConfig, int, bool) {
		fmt.Fprintf(e.stderr, "cairn gc: "+format+"\n", a...)
		fs.Usage()
		return cfg, exitUsage, true
	}
	agentSet, revisionsSet := false, false
	fs.Visit(func(f *flag.Flag) {
		cfg.graceSet = cfg.graceSet || f.Name == "grace"
		agentSet = agentSet || f.Name == "agent"
		revisionsSet = revisionsSet || f.Name == "revisions"
	})
	switch {
	case fs.NArg() != 0:
		return usageErr("unexpected argument %q", fs.Arg(0))
	case cfg.graceSet && head.CheckGrace(cfg.grace) != nil:
		return usageErr("--grace %v: must be between %v and %v", cfg.grace, head.MinGrace, head.MaxGrace)
	case cfg.concurrency <= 0:
		return usageErr("--concurrency must be positive")
	// An agent or --revisions from the environment or the config file
	// gives way to --all-agents on the command line.
	case cfg.all && agentSet && set.from("agent") >= set.from("all-agents"):
		return usageErr("--agent and --all-agents exclude each other")
	case cfg.all && revisionsSet && *revisions && set.from("revisions") >= set.from("all-agents"):
		return usageErr("--revisions needs --agent: a revision is collected through its agent's Workbench")
	}
	cfg.collect = *revisions && !cfg.all
	if err := nonEmptyFlags(fs, "agent", "bucket"); err != nil {
		return usageErr("%v", err)
	}
	if !cfg.all {
		layout, err := workbench.Layout(*agent)
		if err != nil {
			var werr *workbench.Error
			if errors.As(err, &werr) {
				return usageErr("--agent: %s", werr.Message)
			}
			return usageErr("--agent: %v", err)
		}
		cfg.targets = []gcTarget{{agent: *agent, layout: layout}}
	}
	return cfg, exitOK, false
}

// sweep sweeps one shard, then collects its agent's revisions if asked,
// and prints the reports. It returns the shard's grace (zero if the sweep
// did not read it) and the exit status it earned.
func (cfg gcConfig) sweep(ctx context.Context, e *env, b bucket.Bucket, tg gcTarget) (time.Duration, int) {
	opts := workbench.SweepOptions()
	opts.Grace, opts.SetGrace = cfg.grace, cfg.graceSet
	opts.DryRun, opts.Concurrency = cfg.dryRun, cfg.concurrency
	opts.IdempotencyRetention = cfg.idemRetention
	if cfg.dryRun {
		// A dry run writes nothing, so it does not probe the store's
		// clock (an object written and deleted): it judges ages by
		// this machine's clock, and the real run by the store's.
		opts.Now = time.Now
	}
	bar := &gcProgress{w: e.stderr, terminal: progress.IsTerminal(e.stderr)}
	opts.Progress = bar.report
	rep, err := gcsweep.Sweep(ctx, b, tg.layout, opts)
	bar.stop()
	if cfg.all && errors.Is(err, gcsweep.ErrMarker) {
		fmt.Fprintf(e.stderr, "cairn gc: shard %s: not a Workbench shard, skipped\n", tg.layout.ID())
		return 0, exitOK
	}
	exit := exitOK
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn gc: shard %s: %v\n", tg.layout.ID(), err)
		exit = exitFailed
	}
	if rep == nil {
		return 0, exit
	}
	grace := time.Duration(rep.Grace)
	if err != nil && rep.HeadTime.IsZero() {
		return grace, exit // stopped before it read a head: a report would be empty
	}
	var collected *workbench.CollectReport
	if cfg.collect && err == nil && rep.HeadSequence > 0 { // a shard never written has nothing to collect
		c, cerr := workbench.CollectRevisions(ctx, b, workbench.CollectOptions{
			AgentID: tg.agent, Kept: rep.Kept, Concurrency: cfg.concurrency, DryRun: cfg.dryRun,
		})
		if cerr != nil {
			fmt.Fprintf(e.stderr, "cairn gc: collect revisions of agent %s: %v\n", tg.agent, cerr)
			exit = exitFailed
		}
		collected = &c
	}
	if !cfg.asJSON {
		printGCReport(e.stdout, tg, rep)
		printCollectReport(e.stdout, collected, cfg.dryRun)
		return grace, exit
	}
	line, err := json.Marshal(struct {
		Agent string `json:"agent,omitempty"`
		Shard string `json:"shard"`
		*gcsweep.Report
		Revisions *workbench.CollectReport `json:"revisions,omitempty"`
	}{tg.agent, tg.layout.ID().String(), rep, collected})
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn gc: %v\n", err)
		return grace, exitFailed
	}
	fmt.Fprintf(e.stdout, "%s\n", line)
	return grace, exit
}

// printCollectReport prints the line of a revision collection, if one ran.
func printCollectReport(w io.Writer, c *workbench.CollectReport, dryRun bool) {
	if c == nil {
		return
	}
	verb := "collected"
	if dryRun {
		verb = "would collect"
	}
	fmt.Fprintf(w, "revisions: %d candidates, %s %d (%d blocks, %s) in %d engine commands, %v; %d waiting for a root that may read them, %d stale, %d quarantined, %d failed\n",
		c.Candidates, verb, c.Collected, c.BlocksDeleted, progress.Bytes(c.BytesDeleted), c.Commands, c.Elapsed.Round(time.Millisecond), c.Waiting, c.Stale, c.Quarantined, c.Failed)
}

// removeTemps removes the temporary files of interrupted writes that a
// local-file bucket keeps (bucket.TempRemover) once older than the
// grace, and prints how many: a write keeps one only while it runs, so
// one that old was left by a process that died mid-write. A bucket
// without such files prints nothing.
func removeTemps(ctx context.Context, e *env, b bucket.Bucket, grace time.Duration, dryRun, asJSON bool) int {
	tr, ok := b.(bucket.TempRemover)
	if !ok {
		return exitOK
	}
	n, err := tr.RemoveTemps(ctx, grace, dryRun)
	if asJSON {
		fmt.Fprintf(e.stdout, "{\"temporary_files_removed\":%d,\"dry_run\":%t}\n", n, dryRun)
	} else {
		verb := "removed"
		if dryRun {
			verb = "would remove"
		}
		fmt.Fprintf(e.stdout, "temporary files of interrupted writes older than %v: %s %d\n", grace, verb, n)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn gc: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// gcTarget is one shard to sweep; agent is "" when only the shard id is
// known (--all-agents).
type gcTarget struct {
	agent  string
	layout shards.Layout
}

// workbenchShards lists the logical shards of b: every "shards/{lsid}/"
// prefix. Which of them are the Workbench's is learned from their heads,
// by the sweep (gcsweep.ErrMarker).
func workbenchShards(ctx context.Context, b bucket.Bucket) ([]gcTarget, error) {
	_, prefixes, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: shards.ShardsPrefix, Delimiter: "/"})
	if err != nil {
		return nil, err
	}
	var out []gcTarget
	for _, p := range prefixes {
		id, err := shards.ParseShardPrefix(p)
		if err != nil {
			continue // not a shard of cairn's
		}
		out = append(out, gcTarget{layout: workbench.ShardLayout(id)})
	}
	return out, nil
}

// gcProgress draws one progress bar per phase of a sweep, on a terminal
// only.
type gcProgress struct {
	w        io.Writer
	terminal bool
	meter    *progress.Meter
}

func (g *gcProgress) report(p gcsweep.Progress) {
	if !g.terminal {
		return
	}
	if p.Start {
		g.stop()
		g.meter = progress.Start(g.w, progress.Options{Label: "gc " + string(p.Phase), Total: p.Total, Terminal: true})
		return
	}
	if g.meter != nil {
		g.meter.Add(p.Objects, p.Bytes)
	}
}

func (g *gcProgress) stop() {
	if g.meter != nil {
		g.meter.Stop()
		g.meter = nil
	}
}

// printGCReport writes the report as a few lines and a table by class.
func printGCReport(w io.Writer, tg gcTarget, r *gcsweep.Report) {
	who := "shard " + tg.layout.ID().String()
	if tg.agent != "" {
		who = fmt.Sprintf("agent %s (%s)", tg.agent, who)
	}
	verb := "deleted"
	if r.DryRun {
		verb = "would delete"
	}
	fmt.Fprintf(w, "%s: head sequence %d, root %s\n", who, r.HeadSequence, r.HeadRoot)
	touched := ""
	switch {
	case r.Touched:
		touched = ", written by this run"
	case r.DryRun && r.HeadTime.Equal(r.StoreNow):
		touched = ", as if this run had written it"
	}
	fmt.Fprintf(w, "horizon %s: the head's store time %s%s, less the grace %v (the store's clock now %s, %v from this machine's)\n",
		r.Horizon.UTC().Format(time.RFC3339), r.HeadTime.UTC().Format(time.RFC3339), touched, time.Duration(r.Grace),
		r.StoreNow.UTC().Format(time.RFC3339), time.Duration(r.ClockSkew).Round(time.Millisecond))
	fmt.Fprintf(w, "marked: the head, %d heads since the horizon, %d held roots, %d pins, %d keeps, %d later heads: %d objects, %s\n",
		r.RootsInGrace, r.Holds, r.Pins, r.Keeps, r.HeadMoves, r.Live.Objects, progress.Bytes(r.Live.Bytes))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "class\tscanned\tbytes\tkept\tbytes\t%s\tbytes\t\n", verb)
	cell := func(t gcsweep.Tally) string { return fmt.Sprintf("%d\t%s", t.Objects, progress.Bytes(t.Bytes)) }
	var kept gcsweep.Tally
	for _, row := range r.ByClass {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", row.Class, cell(row.Scanned), cell(row.Kept), cell(row.Deleted))
		kept.Objects += row.Kept.Objects
		kept.Bytes += row.Kept.Bytes
	}
	fmt.Fprintf(tw, "total\t%s\t%s\t%s\t\n", cell(r.Scanned), cell(kept), cell(r.Deleted))
	tw.Flush()
	fmt.Fprintf(w, "kept: %d reachable, %d since the horizon, %d of unknown age, %d unknown keys; %d unreachable roots read, none newer than the head\n",
		r.Reachable.Objects, r.Young.Objects, r.UnknownAge.Objects, r.Unknown.Objects, r.RootsChecked)
	if r.Failed.Objects > 0 || r.Changed.Objects > 0 {
		fmt.Fprintf(w, "not deleted: %d failed, %d changed or gone since the listing\n", r.Failed.Objects, r.Changed.Objects)
	}
	if r.Rewritable.Objects > 0 {
		fmt.Fprintf(w, "kept: %d idempotency records past their retention: the store deletes nothing conditionally, and they are rewritten in place\n", r.Rewritable.Objects)
	}
	fmt.Fprintf(w, "%d requests in %v\n", r.Requests, time.Duration(r.Duration).Round(time.Millisecond))
}
