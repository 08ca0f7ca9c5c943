package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/semaphore"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/cmd/cairn/internal/progress"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

func init() {
	register("import", "import a directory tree into a workbench's files", runImport)
}

const (
	// importMaxBatch lets one group commit carry every put in flight: the
	// puts of an import are independent, so the fewer head writes the
	// better.
	importMaxBatch = 4096
	// importParallel is the default of --parallel: enough puts in flight
	// that a group commit carries about a thousand of them, so that the
	// folds below come every few tens of thousands of files.
	importParallel = 2048
	// maxImportParallel bounds --parallel: each put in flight holds a
	// worker and a body, and past a few thousand a group commit gains
	// nothing but memory.
	maxImportParallel = 4096
	// importMaxDeltas and importDeltaBytes let an import's commits pile
	// up more delta segments before a fold than the engine's defaults
	// (16 and 1 MiB). A fold rewrites every page its records touch, and a
	// batch of new files touches nearly every page of a family keyed at
	// random (the body digest index) and the page index of every shard
	// it changes, both of which grow with the workbench: the bytes of an
	// import grow with its files times its folds. At a million files of
	// 1,760 bytes, folds every 32 commits of about 1,000 puts (64 MiB
	// of deltas allowed) left 4.8 GB where folds every 32 commits of
	// about 230 (16 MiB allowed) left 7.4 GB (docs/performance.md).
	//
	// Readers meanwhile consult up to twice these bounds of deltas: the
	// import's own, through importDeltaCacheBytes of its cache, and a
	// replica serving the workbench while it imports, which then reads
	// more per cold request. The import folds what is left when it ends
	// (head.Store.Fold), so that readers with the default bounds never
	// read the long list.
	importMaxDeltas  = 32
	importDeltaBytes = 64 << 20
	// importCacheBytes is the import's cache budget in all, of which
	// importDeltaCacheBytes holds delta segments (head.NewCaches gives
	// them 3/32):
	// decoded, with their inline bodies, two bounds of deltas take about
	// three times their encoded bytes. With less, every fold and many
	// lookups read deltas again: at 200,000 files, 7.0 GB read with
	// 64 MiB for them, 25 MB with 192 MiB.
	importCacheBytes      = 512 << 20
	importDeltaCacheBytes = 192 << 20
	// importMergeBytes -1: an import's folds never merge deltas into
	// fewer, larger ones, they fold into the base. A merge copies every
	// record of the deltas it joins, a new file's body included, and an
	// import's segments pass their count (32) long before their bytes
	// (16 MiB), so each body was copied about twice more before its fold:
	// at 20,000 files of 1,760 random bytes, deltas of 60 MB in a store of
	// 108 MB, against 31 MB of 78 MB without merges.
	importMergeBytes = -1
	// importBytesInFlight bounds the file bytes read and not yet
	// committed. A put holds about four copies of its body at its peak
	// (the file, the JSON input, the decoded payload, the staged blocks),
	// so this keeps an import of large files to a few hundred MiB.
	importBytesInFlight = 64 << 20
	// importAttempts is how often a put that failed with a retryable error
	// is tried in all. The engine has already retried its commit by then.
	importAttempts = 3
	// importListedExisting is how many existing paths the summary names.
	importListedExisting = 20
	// importGrace is how long the puts in flight may take to finish after
	// an interrupt before they are cancelled too.
	importGrace = 10 * time.Second
)

// importRetry spaces the tries of a put that failed with a retryable
// error: the store's jittered exponential backoff (bucket.RetryPolicy),
// as every retry in cairn is spaced.
var importRetry = bucket.RetryPolicy{Attempts: importAttempts, Base: 200 * time.Millisecond, Max: 2 * time.Second}

// runImport imports a directory tree into a workbench:
//
//	cairn import [flags] DIR --workbench ID [--section S]
//
// Every regular file under DIR becomes the file of section S (default
// "input") at its path relative to DIR, as workbench_put_file would store
// it: valid UTF-8 as text, anything else as base64. The workbench is
// created if missing. Puts run in parallel through one Service whose group
// commits are large, so concurrent puts share head writes.
//
// A path that exists is skipped and reported, unless --replace, which
// overwrites it. The Workbench's rules decide which names are valid: a
// name the tool refuses is reported with the tool's error. Files over the
// body limit and special files are refused too; symbolic links are
// skipped with a note (never followed).
//
// Exit status (see exit.go): 0 when every file was imported or skipped; 1
// when some file was refused (0 with --keep-going) or the store failed,
// which ends the import; 2 for a usage error; 3 for a bucket that does not
// exist, cannot be reached or refuses the credentials.
func runImport(ctx context.Context, e *env, args []string) int {
	fset := flag.NewFlagSet("import", flag.ContinueOnError)
	fset.SetOutput(e.stderr)
	bucketURL := fset.String("bucket", "", "bucket URL (default: file://$PWD/"+defaultDataDir+", created if missing)")
	agent := fset.String("agent", workbench.DefaultAgentID, "agent id: the tools serve /agents/ID/wb")
	id := fset.String("workbench", "", "workbench id to import into (required; created if missing)")
	section := fset.String("section", workbench.SectionInput, "section the files go to: "+strings.Join(workbench.Sections(), ", "))
	replace := fset.Bool("replace", false, "overwrite paths that exist (default: report and skip them)")
	keepGoing := fset.Bool("keep-going", false, "exit 0 even if some files were refused (they are still reported)")
	parallel := fset.Int("parallel", importParallel, "puts in flight at once")
	interval := fset.Duration("commit-interval", 0, "least time between two head writes (the store's write rate for one object; GCS: 1s; at most 1m)")
	quiet := fset.Bool("quiet", false, "no progress report")
	fset.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: cairn import [flags] DIR --workbench ID [--section S]")
		fset.PrintDefaults()
	}
	// Flags may come before or after DIR.
	var pos []string
	for {
		if code, done := parseArgs(fset, args); done {
			return code
		}
		if fset.NArg() == 0 {
			break
		}
		pos = append(pos, fset.Arg(0))
		args = fset.Args()[1:]
	}
	if _, code, done := applySettings(e, fset); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "cairn import: "+format+"\n", a...)
		fset.Usage()
		return exitUsage
	}
	if err := nonEmptyFlags(fset, "bucket", "agent", "workbench", "section"); err != nil {
		return usageErr("%v", err)
	}
	switch {
	case len(pos) != 1:
		return usageErr("want one DIR, got %d arguments", len(pos))
	case *id == "":
		return usageErr("--workbench is required")
	case !workbench.IsSection(*section):
		return usageErr("--section %q is not one of %s", *section, strings.Join(workbench.Sections(), ", "))
	case *parallel < 1 || *parallel > maxImportParallel:
		return usageErr("--parallel %d: from 1 to %d", *parallel, maxImportParallel)
	case *interval < 0 || *interval > maxCommitInterval:
		return usageErr("--commit-interval %v: from 0 to %v", *interval, maxCommitInterval)
	}
	root, err := importRoot(pos[0])
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn import: %v\n", err)
		return exitUsage
	}

	s, b, code := openImport(ctx, e, *bucketURL, *agent, *interval)
	if code != exitOK {
		return code
	}
	defer b.Close()
	defer s.Close()

	im := &importer{
		s: s, b: b, root: root, id: *id, section: *section,
		replace: *replace, parallel: *parallel, maxBytes: workbench.DefaultMaxBytes,
	}
	start := time.Now()
	before, err := s.Store().PinOrEmpty(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn import: read head: %v\n", err)
		return exitFailed
	}
	if r := im.call(ctx, func(ctx context.Context) error {
		_, err := s.Create(ctx, workbench.CreateInput{ID: *id})
		return err
	}); !r.ok {
		if r.Code == workbench.CodeInvalidArguments {
			fmt.Fprintf(e.stderr, "cairn import: --workbench: %s\n", r.Message)
			return exitUsage
		}
		fmt.Fprintf(e.stderr, "cairn import: create workbench %s: %s: %s\n", *id, r.Code, r.Message)
		return exitFailed
	}

	files := im.walk()
	var meter *progress.Meter
	if !*quiet {
		meter = progress.Start(e.stderr, progress.Options{Label: "import", Total: int64(len(files)), Terminal: progress.IsTerminal(e.stderr)})
	}
	im.run(ctx, files, meter)
	if meter != nil {
		meter.Stop()
	}
	// After an interruption too: fold the import's deltas, so that
	// readers with the default bounds do not pay for its longer list.
	foldCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	if err := s.Store().Fold(foldCtx); err != nil {
		fmt.Fprintf(e.stderr, "cairn import: fold the last commits: %v (the next commit folds them)\n", err)
	}
	cancel()
	wall := time.Since(start)
	// After an interruption too: the commits made are worth printing.
	pinCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	after, err := s.Store().Pin(pinCtx)
	cancel()
	if err != nil {
		after = before
	}
	im.summary(e.stdout, files, before.Sequence(), after.Sequence(), wall)

	switch {
	case im.abort.Load() != nil:
		return exitFailed
	case im.refused.Load() > 0 && !*keepGoing:
		return exitFailed
	}
	return exitOK
}

// openImport opens the bucket (counted) and the agent's Service with the
// import's engine bounds. A code other than exitOK ends the command.
func openImport(ctx context.Context, e *env, bucketURL, agent string, interval time.Duration) (*workbench.Service, *counting.Bucket, int) {
	inner, url, code, err := openBucket(ctx, bucketURL)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn import: %v\n", err)
		return nil, nil, code
	}
	b := counting.New(inner)
	s, err := workbench.Open(ctx, b, workbench.Options{
		AgentID:  agent,
		MaxBytes: workbench.DefaultMaxBytes,
		Engine: head.Options{MaxBatch: importMaxBatch, MinCommitInterval: interval,
			MaxDeltas: importMaxDeltas, MaxDeltaBytes: importDeltaBytes, MergeBytes: importMergeBytes,
			Caches: head.NewCachesWithDeltas(importCacheBytes, importDeltaCacheBytes)},
	})
	if err != nil {
		b.Close()
		var werr *workbench.Error
		if errors.As(err, &werr) && werr.Code == workbench.CodeInvalidArguments {
			fmt.Fprintf(e.stderr, "cairn import: --agent: %s\n", werr.Message)
			return nil, nil, exitUsage
		}
		fmt.Fprintf(e.stderr, "cairn import: open %s: %v\n", url, err)
		return nil, nil, exitFailed
	}
	return s, b, exitOK
}

// importRoot resolves DIR: it must name a directory. A symbolic link named
// on the command line is followed; links inside the tree are not.
func importRoot(dir string) (string, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("DIR: %w", err)
	}
	st, err := os.Stat(root)
	if err != nil {
		return "", fmt.Errorf("DIR: %w", err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("DIR: %s is not a directory", dir)
	}
	return root, nil
}

// outcome is what became of one file.
type outcome int

const (
	pending  outcome = iota // not tried (the import ended early)
	imported                // a new path
	replaced                // an existing path overwritten (--replace)
	existing                // an existing path left as it was
	skipped                 // not a regular file, with a note
	refused                 // the Workbench or the walk refused it
	failed                  // the store failed; this ends the import
)

// importFile is one entry of the tree, in walk order.
type importFile struct {
	rel     string // slash-separated path relative to DIR
	abs     string
	size    int64
	outcome outcome
	note    string // why it was skipped, refused or failed
}

// importer holds one import's settings and counts.
type importer struct {
	s        *workbench.Service
	b        *counting.Bucket
	root     string
	id       string
	section  string
	replace  bool
	parallel int
	maxBytes int64

	refused atomic.Int64
	abort   atomic.Pointer[string] // the store failure that ended the import
}

// walk lists the tree in lexical order (filepath.WalkDir's), deciding
// locally what needs no store: symbolic links and special files, names
// JSON cannot carry, files over the body limit. Bodies are read later, one
// put at a time.
func (im *importer) walk() []*importFile {
	var files []*importFile
	_ = filepath.WalkDir(im.root, func(p string, d fs.DirEntry, err error) error {
		if p == im.root && err == nil {
			return nil
		}
		rel, rerr := filepath.Rel(im.root, p)
		if rerr != nil {
			rel = p
		}
		f := &importFile{rel: filepath.ToSlash(rel), abs: p}
		files = append(files, f)
		switch {
		case err != nil:
			f.outcome, f.note = refused, "unreadable: "+err.Error()
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
		case d.IsDir():
			files = files[:len(files)-1] // directories exist through their files
		case d.Type()&fs.ModeSymlink != 0:
			f.outcome, f.note = skipped, "symbolic link, not followed"
		case !d.Type().IsRegular():
			f.outcome, f.note = refused, "not a regular file but "+specialKind(d.Type())
		case !utf8.ValidString(f.rel):
			f.outcome, f.note = refused, "name is not valid UTF-8, which a tool's JSON input cannot carry"
		default:
			info, err := d.Info()
			if err != nil {
				f.outcome, f.note = refused, "unreadable: "+err.Error()
				break
			}
			f.size = info.Size()
			if f.size > im.maxBytes {
				f.outcome, f.note = refused, fmt.Sprintf("%s: %d bytes, over the %d-byte body limit", workbench.CodePayloadTooLarge, f.size, im.maxBytes)
			}
		}
		return nil
	})
	return files
}

// specialKind names the kind of a file that is neither regular, a
// directory nor a symbolic link.
func specialKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file (" + m.String() + ")"
}

// run puts the files from a pool of im.parallel workers. A store failure
// or the end of ctx (an interrupt) stops the dispatch; the puts in flight
// finish, so that an interrupted import leaves no outcome unknown, unless
// they take longer than importGrace after ctx ended.
func (im *importer) run(ctx context.Context, files []*importFile, meter *progress.Meter) {
	putCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	finished := make(chan struct{})
	defer close(finished)
	defer context.AfterFunc(ctx, func() {
		msg := "interrupted"
		im.abort.CompareAndSwap(nil, &msg)
		select {
		case <-time.After(importGrace):
			cancel()
		case <-finished:
		}
	})()
	budget := semaphore.NewWeighted(importBytesInFlight)
	work := make(chan *importFile)
	var wg sync.WaitGroup
	for range im.parallel {
		wg.Go(func() {
			for f := range work {
				w := min(max(f.size, 1), importBytesInFlight)
				if im.abort.Load() != nil || budget.Acquire(putCtx, w) != nil {
					continue
				}
				n := im.put(putCtx, f)
				budget.Release(w)
				if meter != nil {
					meter.Add(1, n)
				}
			}
		})
	}
dispatch:
	for _, f := range files {
		if f.outcome != pending {
			if f.outcome == refused {
				im.refused.Add(1)
			}
			if meter != nil {
				meter.Add(1, 0)
			}
			continue
		}
		if im.abort.Load() != nil {
			break
		}
		select {
		case work <- f:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(work)
	wg.Wait()
}

// put imports one file and returns the bytes it imported.
func (im *importer) put(ctx context.Context, f *importFile) int64 {
	body, err := readLimited(f.abs, im.maxBytes)
	if err != nil {
		f.outcome, f.note = refused, err.Error()
		im.refused.Add(1)
		return 0
	}
	in := workbench.PutFileInput{ID: im.id, Section: im.section, Path: f.rel}
	if utf8.Valid(body) {
		t := string(body)
		in.Text = &t
	} else {
		b64 := base64.StdEncoding.EncodeToString(body)
		in.Base64 = &b64
	}
	putFile := func(ctx context.Context) error {
		_, err := im.s.PutFile(ctx, in)
		return err
	}
	r := im.call(ctx, putFile)
	if !r.ok && r.Code == workbench.CodeAlreadyExists {
		if !im.replace {
			f.outcome = existing
			return 0
		}
		in.Replace = true
		if r = im.call(ctx, putFile); r.ok {
			f.outcome = replaced
			return int64(len(body))
		}
	}
	switch {
	case r.ok:
		f.outcome = imported
		return int64(len(body))
	case isRefusal(r.Code):
		f.outcome, f.note = refused, r.Code+": "+r.Message
		im.refused.Add(1)
	default:
		f.outcome, f.note = failed, r.Code+": "+r.Message
		msg := f.rel + ": " + f.note
		im.abort.CompareAndSwap(nil, &msg)
	}
	return 0
}

// isRefusal reports whether a put's error code refuses that one file (its
// name, its size, what is at its path) rather than reporting a failure of
// the store, which the next files would meet too.
func isRefusal(code string) bool {
	switch code {
	case workbench.CodeInvalidArguments, workbench.CodePayloadTooLarge, workbench.CodeNotArtifact, workbench.CodeNotFound:
		return true
	}
	return false
}

// readLimited reads a file that must hold at most limit bytes; it may have
// grown since the walk.
func readLimited(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	defer fh.Close()
	var buf bytes.Buffer
	if st, err := fh.Stat(); err == nil && st.Size() <= limit {
		buf.Grow(int(st.Size()) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(fh, limit+1)); err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("%s: over the %d-byte body limit", workbench.CodePayloadTooLarge, limit)
	}
	return buf.Bytes(), nil
}

// toolResult is what the import reads of a tool call's outcome.
type toolResult struct {
	ok        bool
	Code      string
	Message   string
	Retryable bool
}

// call runs one tool call, retrying a retryable error with a jittered
// backoff (the engine has already retried its own commit). A create-only
// put whose first attempt may have landed meets its own file on the retry
// and is reported as existing.
func (im *importer) call(ctx context.Context, run func(context.Context) error) toolResult {
	var r toolResult
	for attempt := range importAttempts {
		err := run(ctx)
		if err == nil {
			return toolResult{ok: true}
		}
		var werr *workbench.Error
		if !errors.As(err, &werr) {
			return toolResult{Code: workbench.CodeInternal, Message: err.Error()}
		}
		r = toolResult{Code: werr.Code, Message: werr.Message, Retryable: werr.Retryable}
		if !r.Retryable || attempt == importAttempts-1 {
			break
		}
		if importRetry.Wait(ctx, attempt, err) != nil {
			return r
		}
	}
	return r
}

// summary prints what became of the files, then the figures.
func (im *importer) summary(w io.Writer, files []*importFile, seqBefore, seqAfter uint64, wall time.Duration) {
	var count [failed + 1]int64
	var bytesIn int64
	var exist []string
	for _, f := range files {
		count[f.outcome]++
		switch f.outcome {
		case imported, replaced:
			bytesIn += f.size
		case existing:
			exist = append(exist, f.rel)
		case skipped:
			fmt.Fprintf(w, "skipped  %s: %s\n", f.rel, f.note)
		case refused:
			fmt.Fprintf(w, "refused  %s: %s\n", f.rel, f.note)
		case failed:
			fmt.Fprintf(w, "failed   %s: %s\n", f.rel, f.note)
		}
	}
	for _, p := range exist[:min(len(exist), importListedExisting)] {
		fmt.Fprintf(w, "exists   %s\n", p)
	}
	if n := len(exist) - importListedExisting; n > 0 {
		fmt.Fprintf(w, "exists   ... and %d more\n", n)
	}
	if len(exist) > 0 {
		fmt.Fprintln(w, "existing paths were left as they are; --replace overwrites them")
	}
	if msg := im.abort.Load(); msg != nil {
		fmt.Fprintf(w, "stopped: %s\n", *msg)
	}

	done := count[imported] + count[replaced]
	st := im.b.Snapshot()
	fmt.Fprintf(w, "workbench: %s section %s\n", workbench.WorkbenchPath(im.s.LogicalRoot(), im.id), im.section)
	fmt.Fprintf(w, "files:     %d imported (%d new, %d replaced), %d existing, %d skipped, %d refused, %d failed, %d not tried; %d in all\n",
		done, count[imported], count[replaced], count[existing], count[skipped], count[refused], count[failed], count[pending], len(files))
	fmt.Fprintf(w, "bytes:     %s imported (%d bytes)\n", progress.Bytes(bytesIn), bytesIn)
	fmt.Fprintf(w, "commits:   %d (head sequence %d -> %d)\n", seqAfter-seqBefore, seqBefore, seqAfter)
	secs := wall.Seconds()
	fmt.Fprintf(w, "time:      %s, %.0f files/s, %s/s\n", wall.Round(time.Millisecond), float64(done)/secs, progress.Bytes(int64(float64(bytesIn)/secs)))
	fmt.Fprintf(w, "bucket:    %s written in %d PUTs, %s read in %d GETs, %d DELETEs, %d requests in all\n",
		progress.Bytes(st.Put.BytesWritten), st.Put.Requests, progress.Bytes(st.Get.BytesRead), st.Get.Requests, st.Delete.Requests, st.Total().Requests)
}
