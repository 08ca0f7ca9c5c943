package head

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/shards"
)

// Command is one request against the shard: a pure function of (pinned
// snapshot, request) to (mutations, result). It may run several times.
type Command struct {
	// Namespace is the RootId the request belongs to; with RequestID it
	// forms the command_dedupe key.
	Namespace [16]byte
	// RequestID, if set, makes the command exactly-once: an exact retry
	// (same Digest) replays the stored result, a reuse with another Digest
	// fails with ErrRequestReused.
	RequestID string
	// Digest identifies the command's exact inputs.
	Digest [32]byte
	// Apply runs the command. A non-nil error applies none of its
	// mutations and is returned to the caller as is; the result bytes are
	// stored for replay when RequestID is set.
	Apply func(tx *Tx) ([]byte, error)
	// At, if set, is a snapshot of this Store the caller pinned after its
	// request began (typically the one it read to check its predicates).
	// The first attempt builds on it, or on a newer snapshot the Store
	// holds, instead of reading the head: the conditional head write
	// proves the snapshot was still current, and a lost race rebuilds from
	// a fresh pin. A frozen snapshot (Store.At) is ignored.
	At *Snapshot
	// Kind and Payload, instead of Apply, make a data command: the Handler
	// registered for Kind (Store.Handle) applies Payload. Any replica with
	// the same handlers can apply it, so with Options.Intents it may be
	// committed by another replica of the shard (see Intents). A data
	// command without a RequestID gets a random one: its dedupe record is
	// how its owner learns its fate.
	Kind    string
	Payload []byte
	// Reads, if set, names keys the command will read (ShardRef with a
	// Prefix: the key, or the prefix it scans). Before a group commit
	// applies its commands one after another, it loads every command's
	// Reads, and their command_dedupe keys, in one parallel round, so
	// that a key not cached costs the batch one round instead of one per
	// command. Naming too much or too little changes only the requests.
	Reads []ShardRef
}

// Result is a committed (or replayed) command's outcome.
type Result struct {
	Value    []byte
	Sequence uint64 // the commit that applied it (or the pinned one, for a command that wrote nothing)
	Replayed bool   // an exact retry answered from the dedupe family
}

// Do runs cmd and commits its mutations with one CAS of the head, shared
// with concurrent commands of this Store unless NoGroupCommit is set. It
// returns cmd's own error if its predicates failed, ErrRetryable if it did
// not commit within the attempt budget, ErrUnknownOutcome if its commit
// could not be confirmed either way (a command with a RequestID is run
// again up to settleRetries times first, which replays it if it landed),
// or the store's own error, at once,
// when the store refused a write for good (bucket.Permanent) and nothing
// was applied.
func (s *Store) Do(ctx context.Context, cmd Command) (Result, error) {
	if cmd.Kind != "" {
		if cmd.Apply != nil {
			return Result{}, fmt.Errorf("head: a data command (kind %q) has no Apply", cmd.Kind)
		}
		if _, ok := s.handler(cmd.Kind); !ok {
			return Result{}, fmt.Errorf("head: no handler for command kind %q", cmd.Kind)
		}
		if cmd.RequestID == "" {
			cmd.RequestID = "cairn." + nonceString(newNonce())
		}
	}
	res, err := s.do(ctx, cmd)
	err = s.outcomes.answer(cmd, err)
	// An unknown outcome of a command with a request id is settled here:
	// run again under the same id and digest, it is replayed if it landed
	// and applied if it did not, so it applies at most once; a run that
	// decides nothing answers unknown again (unknownOutcomes).
	for try := 0; try < settleRetries && cmd.RequestID != "" && errors.Is(err, ErrUnknownOutcome) && ctx.Err() == nil; try++ {
		cmd.At = nil // settle it at a fresh pin
		res, err = s.do(ctx, cmd)
		err = s.outcomes.answer(cmd, err)
	}
	return res, err
}

// settleRetries bounds the runs Do adds to settle an unknown outcome.
const settleRetries = 3

func (s *Store) do(ctx context.Context, cmd Command) (Result, error) {
	c := &call{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	if s.opts.NoGroupCommit {
		if !s.enter() {
			return Result{}, ErrClosed
		}
		defer s.leave()
		s.commitBatch([]*call{c}, nil)
		return c.res, c.err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Result{}, ErrClosed
	}
	s.queue = append(s.queue, c)
	s.startLeader() // until it ends; Close waits for it
	s.mu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		return s.abandon(c)
	}
}

type call struct {
	ctx   context.Context
	cmd   Command
	fold  bool // the Store's own fold: no command, see runFold
	carry bool // no command: carries other replicas' intents, see carry
	all   bool // with fold: fold whatever deltas the root lists (Fold)
	// intent names the intent that carries this data command, once
	// published: another replica may apply it from then on.
	intent string
	// defers counts the attempts left to the replica that carries the
	// head, stalls those of them since the head last advanced, and
	// deferredAt is the sequence the last one was left at
	// (leaveToCarrier).
	defers, stalls int
	deferredAt     uint64
	done           chan struct{}
	once           sync.Once
	res            Result
	err            error
}

func (c *call) finish(r Result, err error) {
	c.once.Do(func() {
		c.res, c.err = r, err
		close(c.done)
	})
}

func (c *call) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// outcome is a command's result in one attempt, delivered only once the
// attempt's outcome is known.
type outcome struct {
	res Result
	err error
	// retry: the command failed in this attempt, but its intent is out,
	// so its fate is left to a later attempt, which finds it applied by
	// another replica or applies it.
	retry bool
}

// finishAll finishes each call with its outcome, except those to retry,
// and reports whether none is left.
func finishAll(calls []*call, outs []outcome) bool {
	done := true
	for i, c := range calls {
		if outs[i].retry {
			done = false
			continue
		}
		c.finish(outs[i].res, outs[i].err)
	}
	return done
}

// errIntentPending is an attempt's error when a call's data command
// failed here, or was left to another replica, while its intent may
// still be applied elsewhere. Like a race lost to another writer, it
// uses up no attempt (errOutpaced).
var errIntentPending = fmt.Errorf("a command's intent is still pending: %w", errOutpaced)

// commitBatch runs the calls as one group commit until each is finished.
// refill, if not nil, adds commands queued meanwhile to a batch that must
// retry, so that a group commit carries everything waiting.
func (s *Store) commitBatch(calls []*call, refill func(n int, room int64) []*call) {
	ctx := newBatchCtx(s.stop, calls)
	defer func() { ctx.release() }()
	var lastErr error
	var budget attemptBudget
	s.counters.batch(len(calls))
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			s.counters.retries.Add(1)
		}
		if attempt > 0 && !budget.exhausted(s.opts.MaxAttempts) && refill != nil {
			calls = slices.DeleteFunc(calls, (*call).finished)
			if more := s.takeMore(refill, s.opts.MaxBatch-len(calls), s.opts.MaxBatchBytes-payloadBytes(calls)); len(more) > 0 {
				calls = append(calls, more...)
				ctx.release()
				ctx = newBatchCtx(s.stop, calls)
			}
		}
		if attempt > 0 {
			finishEnded(calls)
		}
		if budget.exhausted(s.opts.MaxAttempts) {
			failAll(calls, fmt.Errorf("%w after %d attempts: %w", ErrRetryable, attempt, lastErr))
			return
		}
		if s.isClosed() {
			// Close began: no further attempt. The one before did not
			// land (or the calls would be finished).
			failAll(calls, ErrClosed)
			return
		}
		if ctx.Err() != nil {
			for _, c := range calls {
				err := c.ctx.Err() // the caller's own reason, when it has one
				if err == nil {
					err = ctx.Err()
				}
				c.finish(Result{}, c.unsettled(err))
			}
			return
		}
		var grow func([]*call) bool
		if refill != nil {
			grow = func(more []*call) bool {
				if !ctx.add(more) {
					return false
				}
				s.counters.commands.Add(int64(len(more)))
				calls = append(calls, more...)
				return true
			}
		}
		done, err := s.attempt(ctx, calls, attempt == 0, grow)
		if done {
			return
		}
		lastErr = err
		budget.spend(err)
		if err := s.retry.Wait(ctx, budget.backoff(), err); err != nil {
			continue // the next pass finishes the calls with ctx.Err()
		}
	}
}

// attempt pins, applies every call, and commits. It reports done when
// every call is finished; otherwise the batch is retried after a wait that
// err (throttled or not) decides. A first attempt may build on a snapshot
// a call brought instead of pinning (observed).
func (s *Store) attempt(ctx context.Context, calls []*call, first bool, grow func([]*call) bool) (done bool, err error) {
	began := time.Now()
	var sn *Snapshot
	reused := false
	if first {
		sn = s.observed(calls)
		reused = sn != nil
	}
	// The probe's listing runs beside the pin's head read.
	probed := s.probeIntents(ctx, calls)
	if sn == nil {
		sn, err = s.pinOrInitialize(ctx)
	}
	if err != nil {
		if bucket.Transient(err) && !errors.Is(err, ErrHeadRolledBack) {
			return false, err
		}
		failAll(calls, err)
		return true, nil
	}
	var foreign []foreignIntent
	shared := s.contended()
	if shared {
		var done bool
		if foreign, done, err = s.share(ctx, sn, calls); done || err != nil {
			return done, err
		}
	}
	if err := s.prefetchReads(ctx, sn, calls); err != nil && !bucket.Transient(err) {
		probed()
		failAll(calls, err)
		return true, nil
	} // a transient failure is met again, and retried, by the read itself
	if !shared {
		// Shared, the attempt listed the intents itself (share), after
		// the probe began: the probe's would only repeat them.
		foreign = probed()
	}
	floor, err := sn.Floor(ctx)
	if err != nil {
		if bucket.Transient(err) {
			return false, err
		}
		failAll(calls, err)
		return true, nil
	}
	b := &attemptBatch{s: s, sn: sn, calls: calls, state: newBatchState(s.fams), outs: make([]outcome, len(calls)),
		at: applyClock{seq: sn.head.Sequence + 1, now: s.opts.Now(), floor: floor}}
	if err := b.applyAll(ctx, foreign); err != nil {
		failAll(calls, err)
		return true, nil
	}
	var absorbed time.Duration
	if grow != nil && !shared {
		n := len(calls)
		absorbed = b.absorb(ctx, grow)
		// The commands absorbed arrived after the pin: like those of a
		// reused snapshot, their outcomes hold only if a head write
		// validates it.
		reused = reused || len(b.calls) > n
		calls = b.calls
	}
	finishing := time.Now()
	if b.state.empty() && b.fold == keepDeltas && b.install == nil {
		if reused {
			// Nothing to commit, so no head write validates a snapshot
			// that may predate a call: decide again at a fresh pin.
			return s.attempt(ctx, calls, false, nil)
		}
		return b.nothingToCommit()
	}
	cand, err := b.candidate(ctx)
	if err != nil {
		failAll(calls, err)
		return true, nil
	}
	l := s.newLanding(sn, cand, cand.nonce)
	if err := l.stage(ctx, floor); err != nil {
		if endCommit(ctx, calls, err) {
			return true, nil
		}
		return false, err
	}
	s.notePrep(time.Since(began)-absorbed, time.Since(finishing))
	if time.Since(l.staged) > s.opts.MaxAttemptAge {
		return false, fmt.Errorf("head: staging took %v, more than %v", time.Since(l.staged), s.opts.MaxAttemptAge)
	}
	release := s.holdForTurn(ctx)
	if err := s.takeTurn(ctx, sn); err != nil {
		release()
		return false, err
	}
	landed, err := l.settle(ctx)
	release()
	if err != nil {
		failAll(calls, err)
		return true, nil
	}
	if !landed {
		return false, s.lostRace(sn)
	}
	return b.landed(ctx, cand)
}

// share is the part of an attempt that replicas sharing the head add: it
// publishes the batch's data commands as intents, so that whoever wins
// carries them, and decides whether this replica builds the commit. done
// reports the calls finished (applied by another replica); an error
// (errIntentPending) leaves the batch to a later attempt. foreign are the
// other replicas' intents a carrier applies beside its own.
func (s *Store) share(ctx context.Context, sn *Snapshot, calls []*call) (foreign []foreignIntent, done bool, err error) {
	// The calls published before are answered first, if sn shows them
	// applied; those that came since are then published.
	if s.settleApplied(ctx, sn, calls) {
		return nil, true, nil
	}
	s.publishIntent(ctx, calls)
	if s.leaveToCarrier(ctx, sn, calls) {
		// Another replica carries the head now: let it carry this
		// batch too, instead of building the same commit beside it.
		return nil, false, errIntentPending
	}
	if s.takeOver(ctx, sn) {
		return nil, false, errIntentPending // another replica took over first
	}
	if s.carrying(sn) {
		foreign, _ = s.pendingIntents(ctx, calls) // unread intents wait for a later commit
	}
	return foreign, false, nil
}

// takeTurn waits for the head's turn to write. It returns an error,
// without writing, when the head moved past sn meanwhile: the head write
// could only fail.
func (s *Store) takeTurn(ctx context.Context, sn *Snapshot) error {
	if err := s.waitTurn(ctx); err != nil {
		return err
	}
	if s.othersActive() && s.opts.MinCommitInterval > 0 {
		// Other replicas write the head too: read it (reads are not
		// rate-limited) rather than send a write that would be refused or
		// throttled; if it moved, another replica may have carried this
		// batch's intents already.
		if _, perr := s.Pin(ctx); perr == nil && s.outpaced(sn) {
			return s.lostRace(sn)
		}
		if err := s.waitTurn(ctx); err != nil { // a head seen just now moves the turn
			return err
		}
	}
	if s.outpaced(sn) {
		return s.lostRace(sn)
	}
	return nil
}

// attemptBatch is one attempt's batch of calls applied at a pinned head.
type attemptBatch struct {
	s       *Store
	sn      *Snapshot
	calls   []*call
	state   *batchState
	outs    []outcome
	at      applyClock
	fold    foldMode      // a fold rides with the batch (keepDeltas: none)
	install *preparedFold // the prepared fold the commit installs, if any
	settled []string      // intents the commit settles
}

// applyAll applies every call (and the other replicas' intents foreign)
// to the batch's state, and the schema record in a shard's first commit.
// The error is the batch's (the schema record); a call's own failure is
// its outcome.
func (b *attemptBatch) applyAll(ctx context.Context, foreign []foreignIntent) error {
	s, sn := b.s, b.sn
	if sn.head.Genesis() {
		// The shard's first commit: it writes the schema record, before
		// and beside whatever the commands write.
		if err := s.schemaRecord(b.state, sn.head.Marker); err != nil {
			return err
		}
	}
	for i, c := range b.calls {
		if err := c.ctx.Err(); err != nil {
			// Its caller gave up; a command whose intent is out may still
			// be applied by another replica (call.unsettled).
			b.outs[i] = outcome{err: c.unsettled(err)}
			continue
		}
		if c.carry {
			continue
		}
		if c.fold {
			if c.all {
				if len(sn.root.Deltas) > 0 {
					b.fold = foldBase
				}
				continue
			}
			// A fold prepared beside the commits is installed (by the
			// batch, or alone), or dropped if it no longer can be;
			// without one, the commit folds (or merges) if it still must.
			if b.install = s.installable(sn, b.at.floor); b.install == nil && s.overDeltas(sn.root, 1) && s.foldInline() {
				b.fold = foldDue
			}
			continue
		}
		b.outs[i] = s.apply(ctx, sn, b.state, c.cmd, b.at, c.intent != "")
		var rej *Rejected
		if c.intent != "" && b.outs[i].err != nil && !errors.As(b.outs[i].err, &rej) {
			b.outs[i].retry = true // another replica may apply its intent: never report this failure
		}
	}
	b.settled = s.applyForeign(ctx, sn, b.state, foreign, b.at)
	return nil
}

// nothingToCommit finishes a batch that changed nothing: every outcome
// holds at the pinned head, which was read after each call arrived.
func (b *attemptBatch) nothingToCommit() (bool, error) {
	for i := range b.calls {
		if b.outs[i].err == nil && !b.outs[i].res.Replayed {
			b.outs[i].res.Sequence = b.sn.head.Sequence
		}
	}
	if !finishAll(b.calls, b.outs) {
		return false, errIntentPending
	}
	return true, nil
}

// candidate builds the batch's commit: its objects, root and head.
func (b *attemptBatch) candidate(ctx context.Context) (*candidate, error) {
	s, sn := b.s, b.sn
	nonce := newNonce()
	if b.fold == keepDeltas && b.install == nil {
		b.install = s.installable(sn, b.at.floor)
	}
	cand, err := s.build(ctx, sn, b.state, nonce, b.fold, b.at.now, b.install)
	if err != nil {
		return nil, err
	}
	cand.nonce = nonce
	cand.head = &Head{
		Marker:    sn.head.Marker, // a shard keeps the formats it was created in
		ShardID:   s.id.String(),
		Sequence:  b.at.seq,
		Root:      cand.rootRef.Hash.String(),
		RootSize:  cand.rootRef.Size,
		Nonce:     nonceString(nonce),
		Committed: b.at.now.UnixMilli(),
		Recent:    recentNonces(sn.head),
	}
	if cand.headBytes, err = s.encodeOwnHead(cand.head); err != nil {
		return nil, err
	}
	return cand, nil
}

// landed finishes the calls of a batch whose head write landed: it drops
// the intents the commit settled, forgets what it superseded and, with
// Options.Check, checks the new root first.
func (b *attemptBatch) landed(ctx context.Context, cand *candidate) (bool, error) {
	s := b.s
	settled := b.settled
	for i, c := range b.calls {
		if c.intent != "" && !b.outs[i].retry {
			settled = append(settled, c.intent)
		}
	}
	s.dropIntents(settled)
	if len(b.settled) > 0 {
		s.carryOn()
	}
	s.forget(cand.superseded)
	s.installedFold(cand.installed)
	s.noticeDeltas(cand.root)
	if s.opts.Check {
		if err := s.checkLanded(ctx, cand.rootRef.Hash); err != nil {
			for _, c := range b.calls {
				c.finish(Result{}, fmt.Errorf("head: check after commit %d: %w", b.at.seq, err))
			}
			return true, nil
		}
	}
	if !finishAll(b.calls, b.outs) {
		return false, errIntentPending
	}
	return true, nil
}

// observed returns the snapshot a first attempt may build on instead of
// reading the head: the newest of those the calls brought (Command.At) and
// the newest this Store holds, or nil when no call brought one. Building
// on it is safe for the same reason a rebuilt attempt is: the head write
// is conditional on its version, so the commit lands only if it is still
// current, and the outcomes then hold at the commit. A commit that has
// nothing to write validates nothing, so attempt pins again then.
func (s *Store) observed(calls []*call) *Snapshot {
	var sn *Snapshot
	for _, c := range calls {
		if at := c.cmd.At; at != nil && at.s == s && at.head != nil && (sn == nil || at.head.Sequence > sn.head.Sequence) {
			sn = at
		}
	}
	if sn == nil {
		return nil
	}
	s.mu.Lock()
	latest := s.latest
	s.mu.Unlock()
	if latest != nil && latest.head.Sequence > sn.head.Sequence {
		sn = latest
	}
	return sn
}

// checkLanded runs the strict Check of Options.Check on a root that has
// landed. Check only reads, so a run that fails transiently (or meets
// damaged bytes, which a flaky network can return) is repeated a few
// times, and only a finding that persists fails the commands.
func (s *Store) checkLanded(ctx context.Context, root digest.Hash) error {
	// The commit has landed: a caller that gives up now must not turn
	// it into a failure.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	p := s.retry
	p.Attempts = checkAttempts
	return bucket.Retry(ctx, p, func(ctx context.Context) error {
		return Check(ctx, s.b, s.layout, root, CheckOptions{Strict: true})
	})
}

// Tries of the requests a commit repeats on a transient failure.
const (
	checkAttempts = 5 // runs of Check after a commit
	putAttempts   = 4 // writes of one new immutable object
)

// prefetchReads loads what the calls' commands will read (Command.Reads)
// and their dedupe records, in one parallel round.
func (s *Store) prefetchReads(ctx context.Context, sn *Snapshot, calls []*call) error {
	var refs []ShardRef
	for _, c := range calls {
		refs = append(refs, c.cmd.Reads...)
		if c.cmd.RequestID != "" {
			key := dedupeKey(c.cmd)
			ref, err := sn.ShardOf(shards.CommandDedupe, key)
			if err != nil {
				return err
			}
			ref.Prefix = key
			refs = append(refs, ref)
		}
	}
	if len(refs) == 0 {
		return nil
	}
	return sn.Prefetch(ctx, nil, refs)
}

// dedupeKey is the command_dedupe key of a command with a RequestID.
func dedupeKey(cmd Command) []byte {
	return append(append([]byte(nil), cmd.Namespace[:]...), cmd.RequestID...)
}

// applyClock is what every command of one attempt reads of time and
// order: the commit sequence, the writer's clock and the attempt's floor
// on the store's clock (Tx.Floor).
type applyClock struct {
	seq   uint64
	now   time.Time
	floor time.Time
}

// apply runs one command on top of the batch so far. With published set
// (the command travels in an intent), a data command's Rejected refusal
// is recorded in the dedupe family as a result is, so that every replica
// that meets the intent again replays the refusal; a command no other
// replica can see is refused without a trace, as any command is.
func (s *Store) apply(ctx context.Context, sn *Snapshot, state *batchState, cmd Command, at applyClock, published bool) outcome {
	if cmd.Kind != "" {
		h, ok := s.handler(cmd.Kind)
		if !ok {
			return outcome{err: fmt.Errorf("head: no handler for command kind %q", cmd.Kind)}
		}
		payload := cmd.Payload
		cmd.Apply = func(tx *Tx) ([]byte, error) { return h(tx, payload) }
	}
	var dkey []byte
	if cmd.RequestID != "" {
		dkey = dedupeKey(cmd)
		v, ok, err := (&Tx{ctx: ctx, sn: sn, base: state, own: newBatchState(s.fams)}).Get(shards.CommandDedupe, dkey)
		if err != nil {
			return outcome{err: err}
		}
		if ok {
			return replay(v, cmd)
		}
	}
	tx := &Tx{ctx: ctx, sn: sn, base: state, own: newBatchState(s.fams), seq: at.seq, now: at.now, floor: at.floor}
	val, err := cmd.Apply(tx)
	if err != nil {
		var rej *Rejected
		if published && dkey != nil && errors.As(err, &rej) {
			refusal := newBatchState(s.fams)
			if perr := refusal.put(shards.CommandDedupe, dkey, encodeDedupeRecord(dedupeRejected, cmd.Digest, at.seq, rej.Value)); perr != nil {
				return outcome{err: perr}
			}
			state.merge(refusal)
		}
		return outcome{err: err}
	}
	if dkey != nil {
		if err := tx.own.put(shards.CommandDedupe, dkey, encodeDedupe(cmd.Digest, at.seq, val)); err != nil {
			return outcome{err: err}
		}
	}
	state.absorb(tx.own)
	return outcome{res: Result{Value: val, Sequence: at.seq}}
}

// The dedupe record: version 1 | command digest [32] | sequence u64 | result.
const dedupeFormat = 1

func encodeDedupe(cmdDigest [32]byte, seq uint64, result []byte) []byte {
	return encodeDedupeRecord(dedupeFormat, cmdDigest, seq, result)
}

// dedupeRejected is the format byte of the record of a data command its
// handler refused (Rejected): the same layout, the refusal for a result.
const dedupeRejected = 2

func encodeDedupeRecord(format byte, cmdDigest [32]byte, seq uint64, value []byte) []byte {
	return wire.NewWriter(make([]byte, 0, 1+32+8+len(value))).
		U8(format).Raw(cmdDigest[:]).U64(seq).Raw(value).Bytes()
}

// dedupeExpired is the engine's expiry rule for command_dedupe (see
// Options.DedupeWindow): a record written more than at.DedupeWindow
// commits before the fold that asks. Its age comes from the commit
// sequence the record carries, so every attempt of a fold agrees. A
// record that does not decode never expires: replay and Check report it.
func dedupeExpired(_, v []byte, at shards.ExpiryClock) bool {
	r := wire.NewReader(v)
	format := r.U8()
	r.Take(32) // the command digest
	seq := r.U64()
	if r.Err() != nil || (format != dedupeFormat && format != dedupeRejected) {
		return false
	}
	return seq < at.Sequence && at.Sequence-seq > at.DedupeWindow
}

func replay(v []byte, cmd Command) outcome {
	r := wire.NewReader(v)
	format := r.U8()
	var cmdDigest [32]byte
	r.Copy(cmdDigest[:])
	seq := r.U64()
	result := r.Take(r.Len())
	if r.Err() != nil || (format != dedupeFormat && format != dedupeRejected) {
		return outcome{err: fmt.Errorf("head: dedupe record of %q: %w", cmd.RequestID, bucket.ErrIntegrity)}
	}
	if cmdDigest != cmd.Digest {
		return outcome{err: fmt.Errorf("%w: %q", ErrRequestReused, cmd.RequestID)}
	}
	if format == dedupeRejected {
		return outcome{err: &Rejected{Value: bytes.Clone(result)}}
	}
	return outcome{res: Result{Value: bytes.Clone(result), Sequence: seq, Replayed: true}}
}

// Digest is a helper for command digests: the SHA-256 of its parts, each
// length-prefixed so that no two part lists collide.
func Digest(parts ...[]byte) [32]byte {
	h := sha256.New()
	var frame [8]byte
	for _, p := range parts {
		h.Write(wire.NewWriter(frame[:0]).U64(uint64(len(p))).Bytes())
		h.Write(p)
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}
