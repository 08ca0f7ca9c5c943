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
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
)

// The sweep: mark, then delete what nothing keeps.
//
// # The horizon
//
// Every age is the store's: the time the bucket recorded for an object
// (bucket.Attrs.ModTime) and for the head. The sweep reads the head, of
// store time T, and the grace period G its root records (the deployment
// root's own setting, head.Snapshot.Grace, which writers read too); its
// horizon is T − G (head.Horizon). It deletes an object only if nothing
// it marked reaches it and the store stamped it before the horizon.
// Writers name only what their parent root reaches or what the store
// stamped after T_H − G/2 for the head H they build on (head.Tx.Floor),
// which is why no head that lands after the sweep read its head names a
// deleted object, however long any process pauses (head/horizon.go has
// the argument). With Options.Touch the sweep first commits an empty
// change, so that T is the present and the horizon a grace period ago.
//
// # What is kept
//
// Sweep marks, with the engine's walker (walk.Walker), everything
// reachable from
//
//   - the current head's root, and every root its holds name (snapshots,
//     operations in flight);
//   - every root that may have been the head at or after the horizon,
//     walking back the parent chain: a root was the head until its child
//     became the head, which happened before the child's own child was
//     staged (that attempt read the child's head first), or at the store
//     time of a head the sweep read naming the child. A request that
//     pinned such a root may still be reading it, and a pin made of it
//     may be stored only now (PinHead);
//   - every pinned root (ListPins), then every kept root (keeps.go: a
//     restore in flight).
//
// Holds keep one level (roots.Root.KeptHolds): each root kept for one of
// the reasons above keeps the roots its holds name, with everything they
// reach, but the holds of a held root keep nothing. Report.Kept lists
// every root kept, with its sequence and why: what collecting a replaced
// artifact revision waits for (workbench.CollectRevisions).
//
// The head is read through head.ReadHead, the engine's own reader. A
// genesis head (sequence 0, no root: a shard whose first write stopped
// before its first commit) is a head: it keeps nothing, and what the
// first commit staged is garbage once older than the grace. A shard
// with objects but no head is ErrNoHead: nothing is deleted.
//
// It never touches the head, pins or any key it does not recognise, and
// it never deletes an object whose listing carries no time. It reads
// every root it would delete: one of a sequence above the head's (or
// right after it, written before the head was) means the head is older
// than the bucket's history, an older head put back, and then nothing is
// deleted (ErrRollback).
//
// Salting makes the other half: every object an attempt writes embeds the
// attempt's nonce, so an attempt never "finds" an orphan with the bytes it
// needs; it writes a new key, which no listing made before it holds.
//
// Before deleting, the sweep reads the head again, as ADR 0008 asks: if
// it moved, it marks the new head (and its chain back to what it marked)
// and reads again, a few times.

// Defaults of a sweep.
const (
	// DefaultGrace is the grace period of a deployment root that records
	// none (head.DefaultGrace): an hour.
	DefaultGrace = head.DefaultGrace
	// DefaultIdempotencyRetention is Options.IdempotencyRetention's
	// default: a day, as long as a client may reasonably retry a request
	// with the same Idempotency-Key.
	DefaultIdempotencyRetention = 24 * time.Hour
	// DefaultConcurrency is the default of Options.Concurrency and
	// VerifyOptions.Concurrency: the walk's (walk.DefaultConcurrency).
	DefaultConcurrency = walk.DefaultConcurrency
	// maxRemarks bounds how often a sweep marks a head that moved.
	maxRemarks = 8
)

// Errors of a sweep.
var (
	// ErrGrace is returned for a grace shorter than the one the
	// deployment root records: writers keep only that one's promise.
	ErrGrace = errors.New("gcsweep: the grace period may not be shorter than the deployment root's")
	// ErrNoHead is returned for a shard whose head is missing while
	// objects exist under its prefix: everything would look unreachable,
	// so nothing is deleted. It is head.ErrNoHead.
	ErrNoHead = head.ErrNoHead
	// ErrMarker is returned for a head whose schema marker is not
	// Options.Marker: the shard belongs to another product or version,
	// whose families the layout would misread. It is
	// head.ErrSchemaMismatch. A head that does not decode, or names
	// another shard, is head.ErrBadHead.
	ErrMarker = head.ErrSchemaMismatch
	// ErrRollback is returned when a root or pin in the bucket is newer
	// than the head: an older head object was put back (a bucket-level
	// restore, a mistake), and everything committed after it would look
	// unreachable. Nothing is deleted; cairn fsck reports it.
	ErrRollback = errors.New("gcsweep: the head is older than a root or pin in the bucket")
)

// Options tune a Sweep.
type Options struct {
	// Grace, if set, is the grace period of this sweep: at least the one
	// the deployment root records (ErrGrace otherwise), which is the
	// default. With SetGrace it is recorded as the root's first, and may
	// be shorter; a dry run reports as if it were.
	Grace time.Duration
	// SetGrace records Grace as the deployment root's grace period
	// (head.Store.SetGrace, one commit when it changes) once the sweep has
	// found nothing to stop for, before it deletes: writers read it from
	// the same root, so no value can make a write name what the sweep
	// deletes. Needs Marker; a dry run records nothing.
	SetGrace bool
	// Touch commits an empty change (head.Store.Touch) before the sweep
	// reads the head, so that its horizon is a grace period before now
	// rather than before the last write. Needs Marker. A dry run never
	// touches: it counts from the store's time now instead, as the sweep
	// it previews would.
	Touch bool
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
	// product's records keep (see walk.Walk). Without Refs no artifact
	// block is reachable, so blocks are never deleted.
	Refs        walk.Refs
	RefFamilies []shards.Family
	// Marker, if set, is the schema marker the head must carry
	// (ErrMarker otherwise): the product's, so that a shard of another
	// schema is never swept with this one's families.
	Marker *head.Marker
	// Now, if set, is the store's clock. By default the sweep reads it:
	// it writes an empty object under shards.Layout.ClockProbe, takes its
	// ModTime, and deletes it. A dry run does the same. It dates the
	// report and the idempotency records; the horizon comes from the
	// head.
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
	// ClassKeep is a keep (keeps.go): kept while younger than the
	// horizon, its root marked.
	ClassKeep Class = "keep"
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
	// Kept is every root the sweep kept, with its sequence and why
	// (KeptRoot); a root kept for several reasons is listed once for
	// each. Collecting a replaced artifact revision decides from it
	// (workbench.CollectRevisions). Not in the JSON report: the heads of
	// a busy grace period number thousands; the counts below say how
	// many of each kind.
	Kept []KeptRoot `json:"-"`
	// OldestSequence is the lowest sequence of the roots kept (Kept).
	OldestSequence uint64   `json:"oldest_sequence"`
	RootsInGrace   int      `json:"roots_in_grace"` // roots that may have been the head at or after the horizon
	Holds          int      `json:"held_roots"`     // distinct roots the holds of marked roots name
	Pins           int      `json:"pins"`
	Keeps          int      `json:"keeps"` // keeps of operations in flight (keeps.go)
	Grace          Duration `json:"grace"`
	// HeadTime is the store time of the head the horizon is counted
	// from, and Horizon that time less the grace: only what the store
	// stamped before it is deleted.
	HeadTime time.Time `json:"head_time"`
	Horizon  time.Time `json:"horizon"`
	// Touched: the sweep committed an empty change first (Options.Touch).
	Touched bool `json:"touched"`
	// RootsChecked counts the unmarked roots read for a rollback before
	// anything was deleted.
	RootsChecked int        `json:"roots_checked"`
	StoreNow     time.Time  `json:"store_now"`
	ClockSkew    Duration   `json:"clock_skew"` // the store's clock minus this machine's
	Live         Tally      `json:"live"`       // everything marked (what the walk reached), listed or not
	Scanned      Tally      `json:"scanned"`
	Reachable    Tally      `json:"kept_reachable"`
	Young        Tally      `json:"kept_within_grace"`
	UnknownAge   Tally      `json:"kept_unknown_age"`
	Unknown      Tally      `json:"kept_unknown_key"`
	Deleted      Tally      `json:"deleted"` // in a dry run: would be deleted
	Failed       Tally      `json:"delete_failed"`
	Changed      Tally      `json:"delete_skipped"` // the object changed or vanished since the listing
	ByClass      []ClassRow `json:"by_class"`
	Requests     int64      `json:"requests"`
	Duration     Duration   `json:"duration"`

	// Rewritable are idempotency records past their retention, kept
	// because the store cannot delete them conditionally (see sweep).
	Rewritable Tally `json:"kept_rewritable"`
}

// KeptRoot is one root a sweep kept: its hash, its sequence (the
// sequence of the commit that made it) and why.
type KeptRoot struct {
	Root     digest.Hash
	Sequence uint64
	Why      Why
}

// Why a sweep kept a root.
type Why string

// Reasons a root is kept. A root reached only through a hold is KeptHeld
// whatever kept the root that holds it.
const (
	// KeptHead: the root of the head (of every head the sweep read, when
	// the head moved during the sweep).
	KeptHead Why = "head"
	// KeptGrace: a root that was the head within the grace period: kept
	// for requests that pinned it and still read it, which read through
	// references.
	KeptGrace Why = "grace"
	// KeptHeld: a root a hold of a kept root names: a snapshot's frozen
	// state, the source of a restore in flight.
	KeptHeld Why = "held"
	// KeptPinned: a pinned root (ListPins).
	KeptPinned Why = "pinned"
	// KeptKept: a root a keep names (keeps.go): a pin restore in flight.
	// Collection treats it as a pinned root.
	KeptKept Why = "kept"
)

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
	if opts.Grace < 0 {
		return nil, fmt.Errorf("%w: %v", ErrGrace, opts.Grace)
	}
	if (opts.Touch || opts.SetGrace) && opts.Marker == nil {
		return nil, errors.New("gcsweep: a sweep that writes the head needs the schema marker")
	}
	if opts.SetGrace {
		if err := head.CheckGrace(opts.Grace); err != nil {
			return nil, err
		}
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.IdempotencyRetention == 0 {
		opts.IdempotencyRetention = DefaultIdempotencyRetention
	}
	cb := counting.New(b)
	s := &sweeper{b: cb, layout: layout, opts: opts, rep: &Report{DryRun: opts.DryRun}, byClass: map[Class]*ClassRow{}}
	err := s.run(ctx)
	s.rep.Requests = cb.Snapshot().Total().Requests
	s.rep.Duration = Duration(time.Since(start))
	for _, c := range []Class{ClassRoot, ClassTable, ClassDelta, ClassShard, ClassIndex, ClassStaging, ClassIntent, ClassBlock, ClassKeep, ClassIdempotency, ClassUnknown} {
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

	now     time.Time
	horizon time.Time // objects stamped before it may go; zero: none may
	objs    []listed
	times   map[string]time.Time // listed key → store time
	keeps   []listedKeep

	w       *walk.Walker
	parents map[digest.Hash]digest.Hash  // every root the walk decoded → its parent
	decoded map[digest.Hash]*roots.Root  // every root the walk decoded
	kept    map[digest.Hash]map[Why]bool // the roots kept in their own right, and why (keep)
	order   []digest.Hash                // kept's keys in the order kept
	// became holds, for roots named by a head the sweep read, that
	// head's store time: the latest the root can have become the head.
	became map[digest.Hash]time.Time
	last   *head.Head // the newest head read
	lastAt time.Time  // its store time
	mu     sync.Mutex
}

func (s *sweeper) progress(p Progress) {
	if s.opts.Progress != nil {
		s.opts.Progress(p)
	}
}

func (s *sweeper) run(ctx context.Context) error {
	hd, attrs, err := s.readHead(ctx)
	if err != nil {
		return err
	}
	if hd == nil {
		return nil // a shard never written
	}
	s.became = map[digest.Hash]time.Time{}
	s.noteHead(hd, attrs)
	if err := s.clock(ctx); err != nil {
		return err
	}
	headTime := attrs.ModTime
	if s.opts.Touch && !s.now.IsZero() {
		// The sweep touches the head once it has found nothing to stop
		// for (a dry run only reports as if): its horizon counts from
		// now, and never from later than the head it will write.
		headTime = s.now
	}
	if err := s.setHorizon(ctx, hd, headTime); err != nil {
		return err
	}
	// List before marking: whatever is written after the listing is
	// never deleted by this sweep.
	if err := s.list(ctx); err != nil {
		return err
	}
	// Pins before keeps: a keep written after this listing of the keeps
	// was written after the pins were listed, while the pin its
	// operation checked existed (keeps.go).
	pins, err := ListPins(ctx, s.b, s.layout)
	if err != nil {
		return err
	}
	if s.keeps, err = listKeeps(ctx, s.b, s.layout); err != nil {
		return err
	}
	s.progress(Progress{Phase: PhaseMark, Start: true})
	s.parents = map[digest.Hash]digest.Hash{}
	s.decoded = map[digest.Hash]*roots.Root{}
	s.kept = map[digest.Hash]map[Why]bool{}
	s.w = walk.NewWalker(s.b, s.layout, s.opts.Refs, walk.Options{
		RefFamilies: s.opts.RefFamilies, Concurrency: s.opts.Concurrency, OnRoot: s.sawRoot}, s.live)
	if err := s.markHead(ctx, hd); err != nil {
		return err
	}
	for _, p := range pins {
		if err := s.w.Walk(ctx, p.RootHash); err != nil {
			return fmt.Errorf("gcsweep: pin %s: %w", p.Name, err)
		}
		s.keep(p.RootHash, KeptPinned)
		s.rep.Pins++
	}
	for _, k := range s.keeps {
		if !s.stale(k.attrs) {
			if err := s.w.Walk(ctx, k.RootHash); err != nil {
				return fmt.Errorf("gcsweep: keep %s: %w", k.Key, err)
			}
			s.keep(k.RootHash, KeptKept)
			s.rep.Keeps++
		}
	}
	version, err := s.remark(ctx, attrs.Version)
	if err != nil {
		return err
	}
	if err := s.checkRollback(ctx, pins); err != nil {
		return err
	}
	if (s.opts.Touch || s.opts.SetGrace) && !s.opts.DryRun {
		// Nothing stops the sweep: record the grace, touch the head so
		// that the horizon may reach a grace period before now, and mark
		// what the heads since reach. An attempt built on a head before
		// these commits (and its older grace) can no longer land.
		if err := s.writeHead(ctx); err != nil {
			return err
		}
		if _, err := s.remark(ctx, version); err != nil {
			return err
		}
		if h := head.Horizon(s.lastAt, time.Duration(s.rep.Grace)); h.Before(s.horizon) {
			s.horizon, s.rep.Horizon = h, h // the store's clock went back
		}
	}
	s.keptRoots()
	return s.sweep(ctx)
}

// readHead reads the head through head.ReadHead, with the head object's
// attributes; nil, without error, for a shard never written (no head and
// nothing under its prefix). A head that is missing while objects remain
// is ErrNoHead: everything would look unreachable. A genesis head is a
// head: it names no root, so it keeps nothing.
func (s *sweeper) readHead(ctx context.Context) (*head.Head, bucket.Attrs, error) {
	var want head.Marker // the zero marker accepts any
	if s.opts.Marker != nil {
		want = *s.opts.Marker
	}
	h, attrs, err := head.ReadHead(ctx, s.b, s.layout, want)
	if errors.Is(err, head.ErrNoHead) {
		written, lerr := head.HasObjects(ctx, s.b, s.layout)
		if lerr != nil {
			return nil, bucket.Attrs{}, fmt.Errorf("gcsweep: %w", lerr)
		}
		if written {
			return nil, bucket.Attrs{}, fmt.Errorf("gcsweep: %s has objects but no head: %w", s.layout.Prefix(), err)
		}
		return nil, bucket.Attrs{}, nil
	}
	if err != nil {
		return nil, bucket.Attrs{}, fmt.Errorf("gcsweep: %w", err)
	}
	return h, attrs, nil
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
	prefixes := []string{s.layout.Prefix(), bodies.ArtifactsPrefix(s.layout), s.layout.KeepsPrefix()}
	if s.opts.IdempotencyRetention >= 0 {
		prefixes = append(prefixes, IdempotencyPrefix(s.layout))
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
	case strings.HasPrefix(key, IdempotencyPrefix(s.layout)):
		return ClassIdempotency
	case strings.HasPrefix(key, bodies.StagingPrefix(s.layout)):
		return ClassStaging
	case strings.HasPrefix(key, s.layout.IntentsPrefix()):
		return ClassIntent
	case strings.HasPrefix(key, s.layout.KeepsPrefix()):
		return ClassKeep
	case strings.HasPrefix(key, bodies.ArtifactsPrefix(s.layout)):
		if bodies.IsBlockKey(s.layout, key) || bodies.IsTreeKey(s.layout, key) {
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

// live counts a marked object.
func (s *sweeper) live(o walk.Object) error {
	s.rep.Live.add(o.Size)
	s.progress(Progress{Phase: PhaseMark, Objects: 1, Bytes: o.Size})
	return nil
}

func (s *sweeper) sawRoot(h digest.Hash, r *roots.Root) {
	s.mu.Lock()
	s.parents[h] = r.Parent
	s.decoded[h] = r
	s.mu.Unlock()
}

// keep records that root h, walked as a kept root, is kept for why.
func (s *sweeper) keep(h digest.Hash, why Why) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kept[h] == nil {
		s.kept[h] = map[Why]bool{}
		s.order = append(s.order, h)
	}
	s.kept[h][why] = true
}

// isKept reports whether root h was walked as a kept root.
func (s *sweeper) isKept(h digest.Hash) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kept[h] != nil
}

// keptRoots fills the report's Kept, Holds and OldestSequence: every
// root kept in its own right (keep), and every root their holds name
// (one level, roots.Root.KeptHolds), each with its sequence.
func (s *sweeper) keptRoots() {
	held := map[digest.Hash]bool{}
	add := func(h digest.Hash, why Why) {
		r := s.decoded[h]
		if r == nil {
			return // not decoded: the walk failed, and the sweep stops
		}
		s.rep.Kept = append(s.rep.Kept, KeptRoot{Root: h, Sequence: r.Sequence, Why: why})
		if s.rep.OldestSequence == 0 || r.Sequence < s.rep.OldestSequence {
			s.rep.OldestSequence = r.Sequence
		}
	}
	for _, h := range s.order {
		for _, why := range []Why{KeptHead, KeptGrace, KeptPinned, KeptKept} {
			if s.kept[h][why] {
				add(h, why)
			}
		}
		if r := s.decoded[h]; r != nil {
			for _, hold := range r.KeptHolds(roots.ReachKept) {
				if !held[hold.Root] {
					held[hold.Root] = true
					add(hold.Root, KeptHeld)
				}
			}
		}
	}
	s.rep.Holds = len(held)
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
		case s.w.Reached(o.Key):
			s.rep.Reachable.add(o.Size)
		case o.ModTime.IsZero() || s.horizon.IsZero():
			s.rep.UnknownAge.add(o.Size)
		case !s.stale(o.Attrs):
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
