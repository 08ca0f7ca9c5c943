package head

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// Options tune a Store. The zero value is usable.
type Options struct {
	// CacheBytes bounds the decoded immutable objects (shards and pages,
	// page indexes, delta segments, tables, roots) this Store keeps.
	// It is a bound, not an allocation: a Store holds what it has read or
	// written, and superseded objects leave when the commit that replaced
	// them lands. Default 512 MiB, which keeps a replica of a workbench of
	// 100,000 files of 2 KiB warm (its live objects come to about 260
	// MiB, the small bodies inline in their records included).
	CacheBytes int64
	// Caches, when set, are the caches this Store reads through, shared
	// with the other Stores given them; CacheBytes is then ignored. Nil:
	// caches of the Store's own, of CacheBytes.
	Caches *Caches
	// MaxDeltas and MaxDeltaBytes bound the delta segments a root lists
	// before they are folded into the base shards. When a commit of this
	// Store lands a root with more than MaxDeltas deltas, or more than
	// MaxDeltaBytes bytes of them, the Store folds them in a commit of its
	// own, in the background; with group commit, a fold the bytes call for
	// is prepared beside the commits and installed by the next one, which
	// then lists only the deltas that came after it. A commit on a root
	// past either bound whose root would exceed twice it (four times while
	// a fold is prepared, for the bytes) folds inline instead, so reads
	// never consult more than 2 × MaxDeltas segments, nor a new process
	// more than 4 × MaxDeltaBytes and one batch's delta of at most 3 ×
	// MaxDeltaBytes (a larger batch folds). Defaults 16 and 1 MiB: a cold
	// read meets at most 4 MiB of deltas, and a fold, which rewrites most
	// base shards of a small workbench, comes after some 250 puts of
	// small files; MaxDeltas is at most roots.MaxDeltas / 2.
	MaxDeltas     int
	MaxDeltaBytes int64
	// MergeBytes bounds the deltas a root lists after a fold that merged
	// them (when their count, not their bytes, passed MaxDeltas: the fold
	// then leaves the base alone, see build and mergeDeltas). Default and
	// at most MaxDeltaBytes; negative: never merge, every fold is into
	// the base.
	MergeBytes int64
	// PageBytes bounds a base shard object. A fold that would write a
	// shard larger than this writes it as pages of at most PageBytes
	// (each a shard object of one key range) named by a small page index,
	// and later folds rewrite only the pages they change: a fold's bytes
	// grow with the pages it touches, not with the family. A page under a
	// quarter of PageBytes is merged with a neighbour, except the last
	// page of a shard that grows at its end. Smaller shards stay
	// one object. A point read of a paged shard costs one round more (the
	// index, then the page). Default 16 KiB; at least 256 bytes. Stores
	// with different PageBytes may share a shard: the bound shapes only
	// what a fold writes.
	PageBytes int64
	// InlineBytes bounds the shard objects and page indexes a table
	// carries inline: a fold writes one of at most InlineBytes bytes into
	// its table instead of as an object of its own, so that a reader
	// that has the table needs no request for it (a cold point read of a
	// paged shard then takes the page's round only). It bounds a table at
	// 256 × (46 + InlineBytes) bytes. Default 2 KiB; negative inlines
	// nothing; at most roots.MaxInline.
	InlineBytes int64
	// DedupeWindow is how many commits a command_dedupe record is kept:
	// a record whose commit sequence is more than DedupeWindow commits
	// older than a fold that rewrites its shard object or page is left
	// out of it. Within the window an exact retry of a request id always
	// replays its result; after it, a retry may find the record gone and
	// apply again, as a new request. Records are dropped only by folds
	// that rewrite their page anyway, so a record may outlive the window.
	// Default 1,000,000 commits (at least 11 days at one commit a second,
	// GCS's write rate for the head); math.MaxUint64 keeps every record.
	DedupeWindow uint64
	// NoGroupCommit makes every command commit on its own, in its caller's
	// goroutine. By default concurrent commands of one Store share a CAS.
	NoGroupCommit bool
	// MaxBatch bounds the commands one group commit applies. Default
	// 4096: at the head's one write a second, a batch carries every
	// command that arrived in that second.
	MaxBatch int
	// MaxBatchBytes bounds the payload bytes of the data commands one
	// group commit applies (Command.Payload; a command with Apply counts
	// as none), so that a batch of large commands stays within what one
	// commit stages in its interval. A batch always takes at least one
	// command. Default 32 MiB.
	MaxBatchBytes int64
	// MaxAttempts bounds the failed attempts of one commit. Default 12.
	// A race lost because another writer committed first is not a
	// failure; those are bounded by 8 × MaxAttempts (outpaced.go).
	MaxAttempts int
	// BackoffBase and BackoffMax bound the jittered exponential backoff
	// between attempts. Defaults 5 ms and 2 s.
	BackoffBase, BackoffMax time.Duration
	// ThrottleBackoff is the least wait after the store throttled the
	// head. Default 1 s, GCS's write rate for one object.
	ThrottleBackoff time.Duration
	// MinCommitInterval is the least time between two head writes a
	// Store's group commits make, counted from the last head write it
	// knows of: its own (from when it was sent) or another replica's (from
	// when it first saw it). A group commit builds and stages its batch at
	// once and only its head write waits; commands arriving meanwhile join
	// the next group. Set it to the store's write rate for one object
	// (GCS: one second) so that group commits are not throttled. Default 0.
	MinCommitInterval time.Duration
	// StageConcurrency bounds the parallel reads of one operation (the
	// pages a fold or a scan loads). Default 32.
	StageConcurrency int
	// StageBytes bounds the bytes of the staging writes of one commit in
	// flight at once (and at most 256 writes). Default 32 MiB.
	StageBytes int64
	// MaxAttemptAge abandons an attempt whose staging began longer ago
	// than this before its CAS, so that a sweep whose grace period is
	// longer never deletes an object a landing commit references.
	// Default 10 minutes.
	MaxAttemptAge time.Duration
	// Intents lets the Store's group commits share the head with other
	// replicas through intents (see Handler): once it has seen another
	// replica write the head, it publishes the data commands of each
	// batch as an intent before competing for the head, and applies the
	// pending intents of others with its own batch. Needs group commit.
	Intents bool
	// Check runs Check on every root this Store commits, in strict mode,
	// and fails the command on any finding. For tests.
	Check bool
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DefaultDedupeWindow is Options.DedupeWindow's default, in commits.
const DefaultDedupeWindow = 1_000_000

// retryPolicy is the backoff the options describe: full jitter over a
// bound from BackoffBase doubling up to BackoffMax, and ThrottleBackoff
// plus jitter after the store throttled, for up to MaxAttempts tries.
func (o *Options) retryPolicy() bucket.RetryPolicy {
	return bucket.RetryPolicy{Attempts: o.MaxAttempts, Base: o.BackoffBase, Max: o.BackoffMax, ThrottleWait: o.ThrottleBackoff}
}

func (o *Options) fill() {
	if o.CacheBytes <= 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.MaxDeltas <= 0 {
		o.MaxDeltas = 16
	}
	o.MaxDeltas = min(o.MaxDeltas, roots.MaxDeltas/2)
	if o.MaxDeltaBytes <= 0 {
		o.MaxDeltaBytes = 1 << 20
	}
	if o.MergeBytes == 0 {
		o.MergeBytes = o.MaxDeltaBytes
	}
	o.MergeBytes = min(o.MergeBytes, o.MaxDeltaBytes)
	if o.PageBytes <= 0 {
		o.PageBytes = 16 << 10
	}
	o.PageBytes = max(o.PageBytes, minPageBytes)
	if o.InlineBytes == 0 {
		o.InlineBytes = 2 << 10
	}
	o.InlineBytes = min(o.InlineBytes, roots.MaxInline)
	if o.DedupeWindow == 0 {
		o.DedupeWindow = DefaultDedupeWindow
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = 32 << 20
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 4096
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 12
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 5 * time.Millisecond
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 2 * time.Second
	}
	if o.ThrottleBackoff <= 0 {
		o.ThrottleBackoff = time.Second
	}
	if o.StageConcurrency <= 0 {
		o.StageConcurrency = 32
	}
	if o.StageBytes <= 0 {
		o.StageBytes = 32 << 20
	}
	if o.MaxAttemptAge <= 0 {
		o.MaxAttemptAge = 10 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// minPageBytes is the least page bound, of the store's and of a family's.
const minPageBytes = 256

// Store is one logical shard of cairn's engine over a bucket. It is safe
// for concurrent use. Several Stores, in one process or many, may serve one
// shard from one bucket: the head's CAS orders their commits.
type Store struct {
	b      bucket.Bucket
	id     shards.ShardID
	schema Schema
	fams   *shards.Schema // schema.Families
	layout shards.Layout
	opts   Options

	objects *shards.Cache[*shards.Object]
	indexes *shards.Cache[*shards.Index]
	deltas  *shards.Cache[*shards.Delta]
	tables  *shards.Cache[*roots.Table]
	roots   *shards.Cache[*roots.Root]

	mu     sync.Mutex
	latest *Snapshot   // the newest snapshot this Store has seen
	flight *headFlight // the head read in progress
	next   *headFlight // the read that waits for it to end
	queue  []*call     // commands waiting for group commit
	leader bool        // a group-commit leader is running
	// headWritten is the latest time a head write is known to have been
	// made: when this Store sent its last one, then when that one was
	// answered, or when it first saw a head another writer wrote. The
	// next group commit's head write waits until MinCommitInterval after
	// it (waitTurn).
	headWritten time.Time
	ownVersion  bucket.Version // the version of this Store's last landed head write
	// sending counts, by nonce, this Store's attempts whose head writes
	// may be in flight: a head read meanwhile that carries one of these
	// nonces is this Store's own, though Put has not yet told its version.
	sending     map[string]int
	othersSeen  time.Time     // when this Store last saw a head another writer wrote
	othersWrote chan struct{} // closed when this Store next sees one (leaveToCarrier), if not nil
	urgent      yieldGate     // held by a commit's staging and head write; background staging waits (yield.go)
	intentsSeen time.Time     // when this Store last found another replica's intent (pendingIntents)
	prep        time.Duration // how long attempts take to build and stage, a moving average (notePrep)
	finish      time.Duration // how long attempts take from their last command to staged, a moving average (notePrep)
	cycle       time.Duration // how long the head takes to advance, a moving average (noteAdvance)
	lastAdvance time.Time     // when this Store last saw the head advance
	lastProbe   time.Time     // when this Store last listed intents in the background (probeIntents)
	early       *probe        // a listing of intents started for a coming command (ExpectCommand)
	published   atomic.Int64  // intents this Store wrote
	dropping    sync.Map      // intent keys a landed commit settled, their deletes under way
	carried     atomic.Int64  // other replicas' commands its commits applied
	handlers    map[string]Handler
	foldDue     bool          // a landed root of this Store wants folding
	carryDue    bool          // the leader should carry other replicas' intents (carryOn)
	carriedAt   time.Time     // when a commit last carried other replicas' intents (carryOn)
	folding     bool          // a fold of this Store is queued or running
	preparing   bool          // a fold is being prepared beside the group commits (prepareFold)
	prepared    *preparedFold // a prepared fold the next commit may install
	closed      bool          // Close began: no new command or attempt (close.go)
	shut        bool          // Close ended: reads are refused too
	running     int           // leaders, synchronous commits and folds under way, which Close waits for
	quiet       chan struct{}
	gatePassed  bool  // the system record carries the marker
	gateRun     *gate // the system-record check in progress, or failed for good
	// initTurn, a slot, lets one caller of this Store at a time
	// initialize the shard (pinOrInitialize): a fresh store's first
	// requests come together, and each would otherwise write a genesis
	// head and a schema commit of its own, all but one to be refused.
	initTurn chan struct{}

	retry bucket.RetryPolicy // spaces the commit's attempts and repeated requests

	counters commitCounters // CommitStats

	// stop is cancelled when Close begins: a batch's attempt ends before
	// its head write (close.go).
	stop     context.Context
	stopNow  context.CancelFunc
	outcomes unknownOutcomes
}

// Open returns a Store for logical shard id in b under schema sc. It does
// no I/O: the first Pin reads the head, and the schema gate is checked
// then (the head's marker on every Pin; the system record once, beside
// the first reads of the first snapshot, see gate). A shard without a
// head is initialized by its first commit (create-only) if nothing else is
// stored under its prefix; PinOrEmpty reads such a shard as empty, and a
// shard whose head is lost fails with ErrNoHead and is never written.
func Open(_ context.Context, b bucket.Bucket, id shards.ShardID, sc Schema, opts Options) (*Store, error) {
	if err := sc.check(); err != nil {
		return nil, err
	}
	s := newStore(b, shards.NewLayout(sc.Families, id), opts)
	s.schema = sc
	return s, nil
}

// newStore returns a Store of layout's shard in b, its options filled
// and its caches made; Open adds the schema.
func newStore(b bucket.Bucket, layout shards.Layout, opts Options) *Store {
	opts.fill()
	caches := opts.Caches
	if caches == nil {
		caches = NewCaches(opts.CacheBytes)
	}
	stop, stopNow := context.WithCancel(context.Background())
	return &Store{
		stop:     stop,
		stopNow:  stopNow,
		b:        b,
		id:       layout.ID(),
		fams:     layout.Schema(),
		layout:   layout,
		opts:     opts,
		objects:  caches.objects,
		indexes:  caches.indexes,
		deltas:   caches.deltas,
		tables:   caches.tables,
		roots:    caches.roots,
		retry:    opts.retryPolicy(),
		initTurn: make(chan struct{}, 1),
	}
}

// pinOrInitialize pins the head for a commit. A shard never written (no
// head and no object under its prefix) gets a genesis head first
// (create-only, before anything is staged: if another process created a
// head meanwhile, that head is pinned), and a genesis head (just created,
// or left by a first write that stopped there) gets its first commit,
// the schema record alone, at sequence 1 (initialize). A shard with
// objects but no head is not initialized: its head is lost, so the head
// is read again a few times (in case it is being restored this moment);
// if it stays missing the error wraps ErrNoHead and nothing is written. A
// lost head never becomes an empty shard. The snapshot returned is of a
// genesis head only when the schema commit could not be settled; a
// commit built on it writes the schema record too (attempt). The
// callers of one Store take turns at the genesis head and the schema
// commit, so that a fresh store's first requests, which come together,
// write them once.
func (s *Store) pinOrInitialize(ctx context.Context) (*Snapshot, error) {
	sn, err := s.PinOrEmpty(ctx)
	for try := 0; errors.Is(err, ErrNoHead) && try < 5; try++ {
		if werr := s.retry.Wait(ctx, try+3, nil); werr != nil {
			return nil, err
		}
		sn, err = s.PinOrEmpty(ctx)
	}
	if err != nil {
		return nil, err
	}
	if sn.head == nil || sn.head.Genesis() {
		// One at a time: a caller that waited finds the shard initialized
		// by the one before it, and writes nothing.
		select {
		case s.initTurn <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-s.initTurn }()
		// The shard was found fresh, or at genesis: a head missing now
		// leaves that answer standing, as if read before the turn.
		again, err := s.Pin(ctx)
		switch {
		case err == nil:
			sn = again
		case !errors.Is(err, ErrNoHead):
			return nil, err
		}
	}
	if sn.head == nil {
		if err := s.createGenesis(ctx); err != nil && !errors.Is(err, bucket.ErrPrecondition) {
			return nil, fmt.Errorf("head: initialize shard %s: %w", s.id, err)
		}
		if sn, err = s.Pin(ctx); err != nil {
			return nil, err
		}
	}
	for try := 0; sn.head.Genesis() && try < s.opts.MaxAttempts; try++ {
		ierr := s.initialize(ctx, sn)
		if ierr != nil && !errors.Is(ierr, bucket.ErrPrecondition) && !bucket.Transient(ierr) {
			return nil, fmt.Errorf("head: initialize shard %s: %w", s.id, ierr)
		}
		if ierr != nil && !errors.Is(ierr, bucket.ErrPrecondition) {
			// Throttled, unavailable or unknown: wait, then the head
			// tells whether it landed.
			if werr := s.retry.Wait(ctx, try, ierr); werr != nil {
				return nil, fmt.Errorf("head: initialize shard %s: %w", s.id, ierr)
			}
		}
		// Landed, lost to another writer, or not: the head tells.
		if sn, err = s.Pin(ctx); err != nil {
			return nil, err
		}
	}
	return sn, nil
}

// Initialize makes sure the shard is initialized, as the first commit
// would: it reads the head and, if there is none and nothing is stored
// under the shard's prefix, creates the genesis head (create-only; a
// concurrent initialization wins harmlessly); on a genesis head (just
// created, or left by a write that stopped there) it commits the schema
// record, an ordinary commit of sequence 1. Then it checks the schema
// gate. Tools and tests that want an initialized shard before the first
// command call it; serving needs no call. A shard whose head is lost
// fails with ErrNoHead and nothing is written.
func (s *Store) Initialize(ctx context.Context) error {
	sn, err := s.pinOrInitialize(ctx)
	if err != nil {
		return err
	}
	if sn.head.Genesis() {
		return fmt.Errorf("%w: shard %s: the schema record's commit did not settle", ErrRetryable, s.id)
	}
	return sn.gate(ctx)
}

// gate is the check of the system family's schema record, run once per
// Store beside the first reads of its first snapshot: Pin starts it, and
// every read of a snapshot (and every commit) waits for it before it
// returns, so nothing is served or committed before it passed, yet it
// adds no round of its own. The record is written only when the shard is
// initialized, and every head carries the marker too (checked on every
// Pin), so one check per Store suffices. A mismatch is final; any other
// failure lets the next read try again.
type gate struct {
	done chan struct{}
	err  error
}

// startGate starts the system-record check on sn unless it has passed or
// is running, and returns the check to wait for (nil once it passed).
func (s *Store) startGate(sn *Snapshot) *gate {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gatePassed {
		return nil
	}
	if s.gateRun != nil {
		return s.gateRun
	}
	g := &gate{done: make(chan struct{})}
	s.gateRun = g
	go func() {
		// The check serves every request of the Store, so no one
		// caller's cancellation may fail it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		g.err = sn.checkSchemaRecord(ctx)
		cancel()
		s.mu.Lock()
		switch {
		case g.err == nil:
			s.gatePassed, s.gateRun = true, nil
		case !errors.Is(g.err, ErrSchemaMismatch):
			s.gateRun = nil
		}
		s.mu.Unlock()
		close(g.done)
	}()
	return g
}

// gate waits for the Store's schema gate, starting it on sn if need be.
func (sn *Snapshot) gate(ctx context.Context) error {
	if sn.empty {
		return nil // nothing stored, nothing to check
	}
	g := sn.s.startGate(sn)
	if g == nil {
		return nil
	}
	select {
	case <-g.done:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkSchemaRecord reads System("schema") and requires a marker the
// Store reads, exactly the head's when the snapshot has one.
func (sn *Snapshot) checkSchemaRecord(ctx context.Context) error {
	v, ok, err := sn.get(ctx, shards.System, SchemaKey)
	if err != nil {
		return fmt.Errorf("head: shard %s: read schema record: %w", sn.s.id, err)
	}
	if !ok {
		return fmt.Errorf("head: shard %s: %w: no system schema record", sn.s.id, ErrSchemaMismatch)
	}
	var m Marker
	if err := manifests.DecodeStrict(v, &m); err != nil || !sn.s.schema.Marker.reads(m) || (sn.head != nil && m != sn.head.Marker) {
		return fmt.Errorf("head: shard %s: %w: system record %q", sn.s.id, ErrSchemaMismatch, v)
	}
	return nil
}

// createGenesis creates the shard's genesis head, create-only: sequence
// 0, no root, no recent nonces, the schema's marker and a fresh nonce. It
// is the first write of a shard, before anything is staged under its
// prefix. A head that exists already is bucket.ErrPrecondition.
func (s *Store) createGenesis(ctx context.Context) error {
	h := &Head{
		Marker:    s.schema.Marker,
		ShardID:   s.id.String(),
		Nonce:     nonceString(newNonce()),
		Committed: s.opts.Now().UnixMilli(),
		Recent:    []string{},
	}
	b, err := s.encodeOwnHead(h)
	if err != nil {
		return err
	}
	s.noteHeadWrite()
	attrs, err := s.b.Put(ctx, s.layout.Head(), b, bucket.IfAbsent())
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.ownVersion = attrs.Version
	s.mu.Unlock()
	return nil
}

// initialize commits the schema record on sn, a genesis head: the
// shard's first commit, sequence 1, an ordinary commit (a delta segment
// holding the record and a root listing it, staged in one round) whose
// head write is conditional on the genesis head's version. A
// precondition failure means another process committed first.
func (s *Store) initialize(ctx context.Context, sn *Snapshot) error {
	state := newBatchState(s.fams)
	if err := s.schemaRecord(state, sn.head.Marker); err != nil {
		return err
	}
	nonce, now := newNonce(), s.opts.Now()
	c, err := s.build(ctx, sn, state, nonce, keepDeltas, now, nil)
	if err != nil {
		return err
	}
	h := &Head{
		Marker:    sn.head.Marker,
		ShardID:   s.id.String(),
		Sequence:  1,
		Root:      c.rootRef.Hash.String(),
		RootSize:  c.rootRef.Size,
		Nonce:     nonceString(nonce),
		Committed: now.UnixMilli(),
		Recent:    recentNonces(sn.head),
	}
	c.head = h
	if c.headBytes, err = s.encodeOwnHead(h); err != nil {
		return err
	}
	floor, err := sn.Floor(ctx)
	if err != nil {
		return err
	}
	l := s.newLanding(sn, c, nonce)
	if err := l.stage(ctx, floor); err != nil {
		return err
	}
	if err := s.waitTurn(ctx); err != nil { // the genesis head was written a moment ago
		return err
	}
	s.noteHeadWrite()
	// One write: its caller reads the head again, which tells whether it
	// landed, lost to another writer, or neither. Until it returns, a
	// concurrent Pin that reads it must know it for this Store's own, or
	// the Store would take itself for a second writer and publish
	// intents for a while.
	defer l.sending()()
	return l.put(ctx)
}

// noteHeadWrite records that this Store is sending a head write now, for
// the pacing of the next one (Options.MinCommitInterval, waitTurn).
func (s *Store) noteHeadWrite() {
	s.mu.Lock()
	s.headWritten = time.Now()
	s.mu.Unlock()
}

// schemaRecord adds the schema record, the genesis head's marker m in
// System("schema"), to state: the first commit of a shard writes it.
func (s *Store) schemaRecord(state *batchState, m Marker) error {
	marker, err := manifests.Encode(m)
	if err != nil {
		return err
	}
	return state.put(shards.System, SchemaKey, marker)
}

// ID returns the logical shard's id.
func (s *Store) ID() shards.ShardID { return s.id }

// Bucket returns the bucket the store reads and writes.
func (s *Store) Bucket() bucket.Bucket { return s.b }

// Schema returns the schema the store was opened with.
func (s *Store) Schema() Schema { return s.schema }

// Layout returns the shard's key layout.
func (s *Store) Layout() shards.Layout { return s.layout }

// Now returns the time of the Store's clock (Options.Now), the one its
// commits stamp.
func (s *Store) Now() time.Time { return s.opts.Now() }

// CacheStats reports the object caches' counters.
func (s *Store) CacheStats() (objects, tables, rootsStats shards.CacheStats) {
	return s.objects.Stats(), s.tables.Stats(), s.roots.Stats()
}

// Close stops the store (see close.go): queued and later commands fail
// with ErrClosed, and the batch in progress and a running fold settle
// first, for at most closeWait.
func (s *Store) Close() error {
	s.close(closeWait)
	return nil
}

func tableSize(t *roots.Table) int64 { return int64(64 + len(t.Entries)*48) }

func rootSize(r *roots.Root) int64 {
	n := int64(128 + len(r.Families)*64)
	for _, h := range r.Holds {
		n += int64(48 + len(h.Owner))
	}
	return n
}
