package gcsweep

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// The sweep: mark, then delete what nothing keeps.
//
// # What is kept
//
// Sweep marks, with Walk, everything reachable from
//
//   - the current head's root, and every root its holds name (snapshots,
//     operations in flight), recursively;
//   - every root that was the head within the grace period: walking back
//     the parent chain from the head, a parent is kept while its child
//     root was written less than Grace + MaxAttemptAge ago by the store's
//     clock (the child's commit, which ended the parent's time as head,
//     came at most MaxAttemptAge after the child was written), so a
//     request that pinned an older head less than Grace ago can still
//     read it;
//   - every pinned root (ListPins).
//
// It then deletes each object it listed beforehand under the shard's
// engine prefixes (roots, tables, deltas, shard objects and pages, page
// indexes), its staging ledgers and intents, and its artifact blocks,
// that is not marked and whose store time (bucket.Attrs.ModTime, the
// store's own clock) is older than Grace. The idempotency records of an
// HTTP server are deleted once older than IdempotencyRetention (a day by
// default). It never touches the head, pins or any key it does not
// recognise, and it never deletes an object whose listing carries no
// time.
//
// # Why a commit racing the sweep never loses an object
//
// The engine's writer rule: a new root references only objects reachable
// from its parent root (the pinned head) or written by its own attempt,
// and an attempt whose staging began more than MaxAttemptAge ago is
// abandoned before its head write. Every object the sweep deletes was
// listed before the mark began and is older than Grace > MaxAttemptAge.
// Take any root R that a head names at any time after the mark:
//
//   - if R is the head the sweep marked, or one reachable from its holds
//     or parents within the grace, it is marked with all it reaches;
//   - otherwise R was committed after the mark read the head. Each object
//     R references is reachable from R's parent (by induction a marked
//     root or another such R) or was written by R's attempt, which began
//     at most MaxAttemptAge before a head write that came after the mark
//     began: the object is younger than Grace, so never deleted. A hold
//     in R names R's parent or a root the parent holds: the same
//     argument.
//
// Salting makes the other half: every object an attempt writes embeds the
// attempt's nonce, so an attempt never "finds" an orphan with the bytes it
// needs; it writes a new key, which no listing made before it holds.
//
// Before deleting, the sweep reads the head again, as ADR 0008 asks: if
// it moved, it marks the new head (and its chain back to what it marked)
// and reads again, a few times. The argument above makes this a second
// line of defence, not the first: the deletes themselves may race any
// number of later commits.
//
// The same argument covers artifact blocks when the product keeps the
// rule for them: a publication names only blocks it uploaded in this
// attempt or blocks a record reachable from its parent already names.
// The Workbench's publications do (workbench.BlockRefs, docs/operations.md),
// provided a publication's uploads and its commit together take less than
// Grace − MaxAttemptAge; Grace must therefore leave room for the largest
// upload, which is why its default is an hour.

// Defaults of a sweep.
const (
	// DefaultGrace is the default grace period: an object younger than
	// this is never deleted, and a root that was the head this recently
	// is kept. An hour: six times the engine's MaxAttemptAge, so that
	// body uploads, replicas' clocks and requests that read an old
	// snapshot all fit within it (docs/operations.md).
	DefaultGrace = time.Hour
	// DefaultMaxAttemptAge is head.Options.MaxAttemptAge's default.
	DefaultMaxAttemptAge = 10 * time.Minute
	// DefaultIdempotencyRetention is Options.IdempotencyRetention's
	// default: a day, as long as a client may reasonably retry a request
	// with the same Idempotency-Key.
	DefaultIdempotencyRetention = 24 * time.Hour
	// maxRemarks bounds how often a sweep marks a head that moved.
	maxRemarks = 8
)

// Errors of a sweep.
var (
	// ErrGrace is returned when the grace period does not exceed the
	// writers' MaxAttemptAge: a commit could then reference an object
	// old enough to be deleted.
	ErrGrace = errors.New("gcsweep: grace period must exceed the writers' MaxAttemptAge")
	// ErrNoHead is returned for a shard whose head is missing while
	// objects exist under its prefix: everything would look unreachable,
	// so nothing is deleted.
	ErrNoHead = errors.New("gcsweep: the shard has objects but no head")
	// ErrBadHead is returned for a head that does not decode or names
	// another shard.
	ErrBadHead = errors.New("gcsweep: bad head")
	// ErrMarker is returned for a head whose schema marker is not
	// Options.Marker: the shard belongs to another product or version,
	// whose families the layout would misread.
	ErrMarker = errors.New("gcsweep: the head's schema marker is not the one expected")
)

// Options tune a Sweep.
type Options struct {
	// Grace: an unmarked object is deleted only once it is older than
	// this by the store's clock. Default DefaultGrace. It must exceed
	// MaxAttemptAge (ErrGrace).
	Grace time.Duration
	// MaxAttemptAge is the longest a writer's commit attempt lives
	// (head.Options.MaxAttemptAge of every writer of the shard). Default
	// DefaultMaxAttemptAge.
	MaxAttemptAge time.Duration
	// IdempotencyRetention is how long the idempotency records an HTTP
	// server keeps under the shard's idempotency prefix are honoured: a
	// record older than this by the store's clock (from its last write)
	// is deleted, and a retry with its key then runs as a new request.
	// Default DefaultIdempotencyRetention; negative keeps every record.
	IdempotencyRetention time.Duration
	// DryRun marks and classifies but deletes nothing.
	DryRun bool
	// Concurrency bounds the requests in flight. Default
	// DefaultConcurrency.
	Concurrency int
	// Refs and RefFamilies name the objects outside the engine the
	// product's records keep (see Walk). Without Refs no artifact block
	// is reachable, so blocks are never deleted.
	Refs        Refs
	RefFamilies []shards.Family
	// Marker, if set, is the schema marker the head must carry
	// (ErrMarker otherwise): the product's, so that a shard of another
	// schema is never swept with this one's families.
	Marker *head.Marker
	// Now, if set, is the store's clock. By default the sweep reads it:
	// it writes an empty object under shards.Layout.ClockProbe, takes its
	// ModTime, and deletes it. A dry run does the same.
	Now func() time.Time
	// Progress, if set, is told of work done, from one goroutine at a
	// time.
	Progress func(Progress)
}

// Phase is a step of a sweep.
type Phase string

// The phases, in order.
const (
	PhaseList   Phase = "list"
	PhaseMark   Phase = "mark"
	PhaseDelete Phase = "delete"
)

// Progress is work done since the previous report of the same phase.
// The first report of a phase has Start set and, for PhaseDelete, Total
// and Bytes: the objects the phase will delete and their bytes.
type Progress struct {
	Phase   Phase
	Start   bool
	Total   int64
	Objects int64
	Bytes   int64
}

// Tally counts objects and their bytes.
type Tally struct {
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

func (t *Tally) add(size int64) { t.Objects++; t.Bytes += size }

// Class names what a listed object is, for the report.
type Class string

// Classes of listed objects.
const (
	ClassRoot    Class = "root"
	ClassTable   Class = "table"
	ClassDelta   Class = "delta"
	ClassShard   Class = "shard"
	ClassIndex   Class = "index"
	ClassStaging Class = "staging"
	ClassIntent  Class = "intent"
	ClassBlock   Class = "block"
	// ClassIdempotency is an HTTP server's idempotency record: deleted
	// once older than Options.IdempotencyRetention, never marked.
	ClassIdempotency Class = "idempotency"
	ClassUnknown     Class = "unknown" // a key the sweep does not recognise: kept
)

// Report is what a sweep found and did.
type Report struct {
	DryRun       bool   `json:"dry_run"`
	HeadSequence uint64 `json:"head_sequence"` // the newest head marked
	HeadRoot     string `json:"head_root"`
	HeadMoves    int    `json:"head_moves"` // heads marked after the first
	// OldestSequence is the lowest sequence of the roots marked (the
	// heads, those within the grace, held and pinned roots): no reader
	// may read a state older than it, which is what collecting a
	// revision waits for (workbench.CollectRevisions).
	OldestSequence uint64     `json:"oldest_sequence"`
	RootsInGrace   int        `json:"roots_in_grace"`
	Holds          int        `json:"held_roots"` // distinct roots the holds of marked roots name
	Pins           int        `json:"pins"`
	Grace          Duration   `json:"grace"`
	StoreNow       time.Time  `json:"store_now"`
	ClockSkew      Duration   `json:"clock_skew"` // the store's clock minus this machine's
	Live           Tally      `json:"live"`       // everything marked (what Walk reached), listed or not
	Scanned        Tally      `json:"scanned"`
	Reachable      Tally      `json:"kept_reachable"`
	Young          Tally      `json:"kept_within_grace"`
	UnknownAge     Tally      `json:"kept_unknown_age"`
	Unknown        Tally      `json:"kept_unknown_key"`
	Deleted        Tally      `json:"deleted"` // in a dry run: would be deleted
	Failed         Tally      `json:"delete_failed"`
	Changed        Tally      `json:"delete_skipped"` // the object changed or vanished since the listing
	ByClass        []ClassRow `json:"by_class"`
	Requests       int64      `json:"requests"`
	Duration       Duration   `json:"duration"`

	// Rewritable are idempotency records past their retention, kept
	// because the store cannot delete them conditionally (see sweep).
	Rewritable Tally `json:"kept_rewritable"`
}

// ClassRow is the report of one class of objects.
type ClassRow struct {
	Class   Class `json:"class"`
	Scanned Tally `json:"scanned"`
	Kept    Tally `json:"kept"`
	Deleted Tally `json:"deleted"`
}

// Duration is a time.Duration that reads as text in JSON ("1h0m0s").
type Duration time.Duration

// MarshalText writes the duration as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (s *sweeper) class(c Class) *ClassRow {
	row := s.byClass[c]
	if row == nil {
		row = &ClassRow{Class: c}
		s.byClass[c] = row
	}
	return row
}

// listed is one object of the listing and its class.
type listed struct {
	bucket.Attrs
	class Class
}

// Sweep marks what the shard's head, its holds, the roots within the
// grace period and the pins reach, and deletes every listed object of the
// shard that is unmarked and older than the grace period by the store's
// clock (see the comment at the top of this file for what is kept and
// why a racing commit is safe). It returns what it found and did; an
// error beside a report means the sweep stopped (before deleting
// anything, unless it is the joined errors of failed deletes).
func Sweep(ctx context.Context, b bucket.Bucket, layout shards.Layout, opts Options) (*Report, error) {
	start := time.Now()
	if opts.Grace == 0 {
		opts.Grace = DefaultGrace
	}
	if opts.MaxAttemptAge == 0 {
		opts.MaxAttemptAge = DefaultMaxAttemptAge
	}
	if opts.Grace <= opts.MaxAttemptAge || opts.MaxAttemptAge < 0 {
		return nil, fmt.Errorf("%w: grace %v, max attempt age %v", ErrGrace, opts.Grace, opts.MaxAttemptAge)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.IdempotencyRetention == 0 {
		opts.IdempotencyRetention = DefaultIdempotencyRetention
	}
	cb := counting.New(b)
	s := &sweeper{b: cb, layout: layout, opts: opts, rep: &Report{DryRun: opts.DryRun, Grace: Duration(opts.Grace)}, byClass: map[Class]*ClassRow{}}
	err := s.run(ctx)
	s.rep.Requests = cb.Snapshot().Total().Requests
	s.rep.Duration = Duration(time.Since(start))
	for _, c := range []Class{ClassRoot, ClassTable, ClassDelta, ClassShard, ClassIndex, ClassStaging, ClassIntent, ClassBlock, ClassIdempotency, ClassUnknown} {
		if row := s.byClass[c]; row != nil {
			s.rep.ByClass = append(s.rep.ByClass, *row)
		}
	}
	return s.rep, err
}

type sweeper struct {
	b      bucket.Bucket
	layout shards.Layout
	opts   Options
	rep    *Report

	repMu   sync.Mutex // guards rep and byClass while deletes run
	byClass map[Class]*ClassRow

	now    time.Time
	cutoff time.Time // objects written before it are older than the grace
	objs   []listed
	times  map[string]time.Time // listed key → store time

	w       *walker
	parents map[digest.Hash]digest.Hash // every root the walk decoded → its parent
	held    map[digest.Hash]bool        // every root a hold of a decoded root names
	mu      sync.Mutex
}

func (s *sweeper) progress(p Progress) {
	if s.opts.Progress != nil {
		s.opts.Progress(p)
	}
}

func (s *sweeper) run(ctx context.Context) error {
	hd, version, err := s.readHead(ctx)
	if err != nil {
		return err
	}
	if hd == nil {
		return nil // a shard never written
	}
	if err := s.clock(ctx); err != nil {
		return err
	}
	// List before marking: whatever is written after the listing is
	// never deleted by this sweep.
	if err := s.list(ctx); err != nil {
		return err
	}
	pins, err := ListPins(ctx, s.b, s.layout)
	if err != nil {
		return err
	}
	s.progress(Progress{Phase: PhaseMark, Start: true})
	s.w = newWalker(s.b, s.layout, s.opts.Refs, WalkOptions{RefFamilies: s.opts.RefFamilies, Concurrency: s.opts.Concurrency}, s.live)
	s.parents = map[digest.Hash]digest.Hash{}
	s.held = map[digest.Hash]bool{}
	s.w.onRoot = s.sawRoot
	if err := s.markHead(ctx, hd); err != nil {
		return err
	}
	for _, p := range pins {
		if err := s.w.walk(ctx, []digest.Hash{p.RootHash}); err != nil {
			return fmt.Errorf("gcsweep: pin %s: %w", p.Name, err)
		}
		s.rep.Pins++
	}
	// Read the head again: a head that moved is marked too.
	for range maxRemarks {
		again, v, err := s.readHead(ctx)
		if err != nil {
			return err
		}
		if again == nil {
			return fmt.Errorf("%w: the head vanished during the sweep", ErrNoHead)
		}
		if v == version {
			break
		}
		version = v
		s.rep.HeadMoves++
		if err := s.markHead(ctx, again); err != nil {
			return err
		}
	}
	s.rep.Holds = len(s.held)
	return s.sweep(ctx)
}

// readHead reads and decodes the head; nil, without error, for a shard
// with nothing under its prefix.
func (s *sweeper) readHead(ctx context.Context) (*head.Head, bucket.Version, error) {
	body, attrs, err := s.b.Get(ctx, s.layout.Head())
	if errors.Is(err, bucket.ErrNotExist) {
		page, lerr := s.b.List(ctx, bucket.ListOptions{Prefix: s.layout.Prefix(), PageSize: 1})
		if lerr != nil {
			return nil, "", fmt.Errorf("gcsweep: list %s: %w", s.layout.Prefix(), lerr)
		}
		if len(page.Objects) > 0 {
			return nil, "", fmt.Errorf("%w: %s", ErrNoHead, s.layout.Prefix())
		}
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("gcsweep: read head: %w", err)
	}
	var h head.Head
	if err := manifests.Decode(body, &h); err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrBadHead, err)
	}
	if m := s.opts.Marker; m != nil && h.Marker != *m {
		return nil, "", fmt.Errorf("%w: %+v, want %+v", ErrMarker, h.Marker, *m)
	}
	if h.ShardID != s.layout.ID().String() {
		return nil, "", fmt.Errorf("%w: names shard %q, want %s", ErrBadHead, h.ShardID, s.layout.ID())
	}
	if _, err := digest.Parse(h.Root); err != nil {
		return nil, "", fmt.Errorf("%w: root %q", ErrBadHead, h.Root)
	}
	return &h, attrs.Version, nil
}

// clock reads the store's clock and sets the cutoff.
func (s *sweeper) clock(ctx context.Context) error {
	local := time.Now()
	if s.opts.Now != nil {
		s.now = s.opts.Now()
	} else {
		var token [16]byte
		rand.Read(token[:])
		key := s.layout.ClockProbe(token)
		attrs, err := s.b.Put(ctx, key, nil, bucket.IfAbsent())
		if err != nil {
			return fmt.Errorf("gcsweep: read the store's clock: %w", err)
		}
		if err := s.b.Delete(ctx, key, bucket.Unconditional); err != nil {
			return fmt.Errorf("gcsweep: delete the clock probe %s: %w", key, err)
		}
		s.now = attrs.ModTime
	}
	if !s.now.IsZero() {
		s.cutoff = s.now.Add(-s.opts.Grace)
		s.rep.ClockSkew = Duration(s.now.Sub(local))
	}
	s.rep.StoreNow = s.now
	return nil
}

// list lists the shard's objects under every prefix the engine and the
// product write, except the head.
func (s *sweeper) list(ctx context.Context) error {
	s.progress(Progress{Phase: PhaseList, Start: true})
	s.times = map[string]time.Time{}
	prefixes := []string{s.layout.Prefix(), s.layout.ArtifactsPrefix()}
	if s.opts.IdempotencyRetention >= 0 {
		prefixes = append(prefixes, s.layout.IdempotencyPrefix())
	}
	for _, prefix := range prefixes {
		opts := bucket.ListOptions{Prefix: prefix}
		for {
			page, err := s.b.List(ctx, opts)
			if err != nil {
				return fmt.Errorf("gcsweep: list %s: %w", prefix, err)
			}
			var bytes int64
			for _, a := range page.Objects {
				if a.Key == s.layout.Head() {
					continue
				}
				s.objs = append(s.objs, listed{Attrs: a, class: s.classify(a.Key)})
				s.times[a.Key] = a.ModTime
				bytes += a.Size
			}
			s.progress(Progress{Phase: PhaseList, Objects: int64(len(page.Objects)), Bytes: bytes})
			if page.NextPageToken == "" {
				break
			}
			opts.PageToken = page.NextPageToken
		}
	}
	return nil
}

// classify names what key is. Keys the sweep does not recognise are
// ClassUnknown and kept.
func (s *sweeper) classify(key string) Class {
	switch {
	case strings.HasPrefix(key, s.layout.IdempotencyPrefix()):
		return ClassIdempotency
	case strings.HasPrefix(key, s.layout.StagingPrefix()):
		return ClassStaging
	case strings.HasPrefix(key, s.layout.IntentsPrefix()):
		return ClassIntent
	case strings.HasPrefix(key, s.layout.ArtifactsPrefix()):
		if isBlockKey(strings.TrimPrefix(key, s.layout.ArtifactsPrefix())) {
			return ClassBlock
		}
		return ClassUnknown
	}
	k, err := shards.ParseObjectKey(s.layout.Schema(), key)
	if err != nil || k.Shard != s.layout.ID() {
		return ClassUnknown
	}
	switch k.Kind {
	case shards.KindRoot:
		return ClassRoot
	case shards.KindTable:
		return ClassTable
	case shards.KindDelta:
		return ClassDelta
	case shards.KindShard:
		return ClassShard
	case shards.KindIndex:
		return ClassIndex
	}
	return ClassUnknown
}

// isBlockKey reports whether rest, a key after "artifacts/{lsid}/", is
// "{root_id}/{revision_id}/blocks/{object_index}" as shards.Layout.Block
// writes it.
func isBlockKey(rest string) bool {
	parts := strings.Split(rest, "/")
	return len(parts) == 4 && isLowerHex(parts[0], 32) && isLowerHex(parts[1], 32) && parts[2] == "blocks" && isLowerHex(parts[3], 16)
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// live counts a marked object.
func (s *sweeper) live(o Object) error {
	s.rep.Live.add(o.Size)
	s.progress(Progress{Phase: PhaseMark, Objects: 1, Bytes: o.Size})
	return nil
}

func (s *sweeper) sawRoot(h digest.Hash, r *roots.Root) {
	s.mu.Lock()
	s.parents[h] = r.Parent
	if s.rep.OldestSequence == 0 || r.Sequence < s.rep.OldestSequence {
		s.rep.OldestSequence = r.Sequence
	}
	for _, hold := range r.Holds {
		s.held[hold.Root] = true
	}
	s.mu.Unlock()
}

// markHead marks a head's root, with its holds, and the parents that
// were the head within the grace period.
func (s *sweeper) markHead(ctx context.Context, h *head.Head) error {
	root, _ := digest.Parse(h.Root)
	s.rep.HeadSequence, s.rep.HeadRoot = h.Sequence, h.Root
	if err := s.w.walk(ctx, []digest.Hash{root}); err != nil {
		return fmt.Errorf("gcsweep: head %d: %w", h.Sequence, err)
	}
	for child := root; ; {
		s.mu.Lock()
		parent := s.parents[child]
		s.mu.Unlock()
		if parent.IsZero() || !s.headWithinGrace(child) {
			return nil
		}
		key := s.layout.Root(parent)
		if s.w.marked(key) {
			return nil // marked with its chain already
		}
		if _, ok := s.times[key]; !ok {
			return nil // not in the bucket: an earlier sweep deleted it
		}
		if err := s.w.walk(ctx, []digest.Hash{parent}); err != nil {
			return fmt.Errorf("gcsweep: root %s, parent of %s: %w", parent, child, err)
		}
		s.rep.RootsInGrace++
		child = parent
	}
}

// headWithinGrace reports whether the parent of root child may have been
// the head within the grace period: child's commit, which ended it, came
// at most MaxAttemptAge after child was written. A root not listed was
// written after the listing.
func (s *sweeper) headWithinGrace(child digest.Hash) bool {
	if s.cutoff.IsZero() {
		return false // no clock: nothing is deleted, so no older root need be marked
	}
	t, ok := s.times[s.layout.Root(child)]
	if !ok || t.IsZero() {
		return true
	}
	return t.Add(s.opts.MaxAttemptAge).After(s.cutoff)
}

// sweep classifies every listed object and deletes the doomed.
func (s *sweeper) sweep(ctx context.Context) error {
	var doomed []listed
	for _, o := range s.objs {
		row := s.class(o.class)
		row.Scanned.add(o.Size)
		s.rep.Scanned.add(o.Size)
		switch {
		case o.class == ClassUnknown:
			s.rep.Unknown.add(o.Size)
		case o.class == ClassIdempotency:
			// Never reachable from a root: kept for its retention. A record
			// is rewritten in place (claimed, taken over, finished), so a
			// delete that is not conditional on the version listed could
			// remove a rewrite made after the listing: a store without
			// conditional deletes keeps them all.
			switch {
			case o.ModTime.IsZero() || s.now.IsZero():
				s.rep.UnknownAge.add(o.Size)
			case s.now.Sub(o.ModTime) <= s.opts.IdempotencyRetention:
				s.rep.Young.add(o.Size)
			case !s.b.Capabilities().ConditionalDelete:
				s.rep.Rewritable.add(o.Size)
			default:
				doomed = append(doomed, o)
				continue
			}
		case s.w.marked(o.Key):
			s.rep.Reachable.add(o.Size)
		case o.ModTime.IsZero() || s.cutoff.IsZero():
			s.rep.UnknownAge.add(o.Size)
		case !o.ModTime.Before(s.cutoff):
			s.rep.Young.add(o.Size)
		default:
			doomed = append(doomed, o)
			continue
		}
		row.Kept.add(o.Size)
	}
	var total int64
	for _, o := range doomed {
		total += o.Size
	}
	s.progress(Progress{Phase: PhaseDelete, Start: true, Total: int64(len(doomed)), Bytes: total})
	if s.opts.DryRun {
		for _, o := range doomed {
			s.rep.Deleted.add(o.Size)
			s.class(o.class).Deleted.add(o.Size)
		}
		return nil
	}
	conditional := s.b.Capabilities().ConditionalDelete
	var errs []error
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.Concurrency)
	for _, o := range doomed {
		g.Go(func() error {
			cond := bucket.Unconditional
			if conditional {
				cond = bucket.IfVersion(o.Version)
			}
			err := s.b.Delete(gctx, o.Key, cond)
			s.repMu.Lock()
			defer s.repMu.Unlock()
			switch {
			case err == nil:
				s.rep.Deleted.add(o.Size)
				s.class(o.class).Deleted.add(o.Size)
			case errors.Is(err, bucket.ErrPrecondition):
				s.rep.Changed.add(o.Size)
				s.class(o.class).Kept.add(o.Size)
			default:
				s.rep.Failed.add(o.Size)
				s.class(o.class).Kept.add(o.Size)
				if len(errs) < 10 {
					errs = append(errs, fmt.Errorf("gcsweep: delete %s: %w", o.Key, err))
				}
			}
			s.progress(Progress{Phase: PhaseDelete, Objects: 1, Bytes: o.Size})
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
