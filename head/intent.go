package head

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/shards"
)

// Intents: many replicas, one head.
//
// The head takes about one write a second, so replicas that share a
// shard take turns at it, and without help a replica that loses the race
// rebuilds and waits for another turn while the winner commits again at
// once. A data command (Command.Kind) can be applied by any replica that
// has the same Handler, so a replica with Options.Intents publishes the
// data commands of each batch as an intent, a create-only object under
// the shard's intents/ prefix (new names are not rate-limited), before
// it competes for the head. Every group commit lists the intents and
// applies, after its own commands, those not applied yet: whichever
// replica wins the head carries everyone's commands. The dedupe family
// tells each command's fate: an applied data command always leaves a
// record there (its result, or its Rejected refusal), so an owner that
// lost the race finds its commands applied at its next pin and answers
// from the record, and a second application of an intent is a replay
// that changes nothing. The winner deletes the intents it applied once
// its commit has landed; intents older than Options.MaxAttemptAge are
// ignored, and the sweep owns what is left.

// Handler applies one kind of data command: a pure function of what it
// reads through tx and of its payload, like Command.Apply. It must be
// the same on every replica of a shard.
type Handler func(tx *Tx, payload []byte) ([]byte, error)

// Rejected is the error a Handler returns to refuse its command
// deterministically: nothing of the command is applied, and Value is the
// refusal, which the dedupe family keeps as it keeps a result, so that
// every replica and every retry learns the same answer.
type Rejected struct {
	Value []byte
	// Err, if set, is the refusal as the handler knows it, for a caller
	// on the replica that applied the command; it does not travel (a
	// replay, or another replica's application, has Value alone).
	Err error
}

func (r *Rejected) Error() string {
	if r.Err != nil {
		return r.Err.Error()
	}
	return fmt.Sprintf("head: command rejected (%d bytes)", len(r.Value))
}

// Unwrap returns Err.
func (r *Rejected) Unwrap() error { return r.Err }

// Handle registers the Handler of data commands of kind. Register every
// kind before the first command; every replica of a shard registers the
// same handlers.
func (s *Store) Handle(kind string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handlers == nil {
		s.handlers = map[string]Handler{}
	}
	s.handlers[kind] = h
}

// contendedFor is how long after seeing another replica's head write a
// Store keeps publishing and carrying intents.
const contendedFor = 10 * time.Second

// contended reports whether this Store uses intents now: Options.Intents
// is set and another replica wrote the head recently.
func (s *Store) contended() bool {
	return s.opts.Intents && s.othersActive()
}

// othersActive reports whether, in group commit, another replica wrote
// the head recently: the head's write slot is shared.
func (s *Store) othersActive() bool {
	if s.opts.NoGroupCommit {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	recent := func(t time.Time) bool { return !t.IsZero() && time.Since(t) < contendedFor }
	return recent(s.othersSeen) || recent(s.intentsSeen)
}

// probeIntents lists, for a leader that does not know of other writers,
// the intents other replicas published: a replica that keeps winning the
// head never sees another's head write, while the others, losing every
// race, publish their commands as intents and wait for a carrier. Found
// ones make this Store contended (othersActive). A paced Store carries
// them in this attempt. Its listing starts with the attempt, beside its
// read of the head, or earlier, beside the reads of the caller whose
// command this is (ExpectCommand), so it costs a request, not a round. A
// Store that does not pace probes at most once a second, and only for
// batches of more than one call (a load that others may share), so that
// a lone writer's commits seldom wait for a listing. Nothing is probed
// when the Store is contended already: the attempt lists intents itself
// then. In a shard whose heads say whether their writer carries
// (HeadFormat), a paced Store's heads say it does not, and it probes a
// commit of one call only every loneProbeEvery (loneProbeDue).
func (s *Store) probeIntents(ctx context.Context, calls []*call) func() []foreignIntent {
	none := func() []foreignIntent { return nil }
	if !s.opts.Intents || s.opts.NoGroupCommit || s.othersActive() {
		return none
	}
	if s.opts.MinCommitInterval > 0 {
		p := s.takeEarly()
		if p == nil {
			if len(calls) <= 1 && !s.loneProbeDue() {
				return none
			}
			p = s.listIntents(ctx)
		}
		return func() []foreignIntent { return p.take(calls) }
	}
	s.mu.Lock()
	due := len(calls) > 1 && time.Since(s.lastProbe) >= time.Second
	if due {
		s.lastProbe = time.Now()
	}
	s.mu.Unlock()
	if !due {
		return none
	}
	p := s.listIntents(ctx)
	return func() []foreignIntent { return p.take(calls) }
}

// encodeOwnHead encodes a head this Store writes: in the head format of
// its marker's value format (a shard keeps its formats), saying what it
// can of this Store (Head.Carrier): in HeadFormat, whether it lists the
// other replicas' intents, which it does while it knows of them
// (contended); a head of HeadFormatV2 says nothing and is read as a
// carrier's.
func (s *Store) encodeOwnHead(h *Head) ([]byte, error) {
	h.Format = s.schema.headFormat(h.Marker)
	h.Carrier = h.Format != HeadFormat || s.contended()
	return encodeHead(h)
}

// loneProbeEvery is how often a paced Store that does not know of other
// writers lists the intents for a commit of one call in a shard whose
// heads say whether their writer carries (HeadFormat). Its heads say it
// does not, so a replica that loses the head to it commits its own
// commands rather than wait for it, and once one of those lands this
// Store knows of the other. But a writer that takes every turn of the
// head leaves the other none: its own turn comes first, by its own clock,
// and the other reads the head before writing and finds it moved. So a
// commit of more than one call (a load that others may share, and one
// that takes every turn) still lists, which costs little per call; a
// commit of one call lists every loneProbeEvery, the backstop for a
// replica that keeps losing to a writer of one call a turn.
const loneProbeEvery = contendedFor

// loneProbeDue reports whether a paced Store that does not know of other
// writers lists the intents for a commit of one call: always in a shard
// of HeadFormatV2 (whose readers leave their commands to whoever wrote
// the head last), else once every loneProbeEvery. A due probe is counted
// as made.
func (s *Store) loneProbeDue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loneProbeDueLocked()
}

// loneProbeDueLocked is loneProbeDue with s.mu held.
func (s *Store) loneProbeDueLocked() bool {
	if s.latest == nil || s.latest.head.Format != HeadFormat {
		return true
	}
	if !s.lastProbe.IsZero() && time.Since(s.lastProbe) < loneProbeEvery {
		return false
	}
	s.lastProbe = time.Now()
	return true
}

// A probe is one listing of other replicas' intents under way.
type probe struct {
	at      time.Time
	done    chan struct{} // closed once foreign is set
	foreign []foreignIntent
}

// age is how long ago p began, by whichever of the monotonic and the
// wall clock moved more: a suspended machine may stop the first.
func (p *probe) age() time.Duration {
	return max(time.Since(p.at), time.Now().Round(0).Sub(p.at.Round(0)))
}

// take waits for the listing and returns the intents it found that calls
// did not publish. It runs on the attempt's goroutine, which publishes
// the calls' intents (share), so it reads them after any the attempt
// published while the listing ran.
func (p *probe) take(calls []*call) []foreignIntent {
	<-p.done
	own := ownIntents(calls)
	return slices.DeleteFunc(slices.Clone(p.foreign), func(f foreignIntent) bool { return own[f.key] })
}

// listIntents starts a probe. Found intents make this Store contended
// (pendingIntents); a failed listing finds none (a later commit probes
// again).
func (s *Store) listIntents(ctx context.Context) *probe {
	p := &probe{at: time.Now(), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		foreign, err := s.pendingIntents(ctx, nil)
		if err == nil {
			p.foreign = foreign
		}
	}()
	return p
}

// ExpectCommand tells s that the caller is about to pin and read for a
// command it will then Do. A paced Store that would probe for other
// replicas' intents at that command's commit (probeIntents) starts the
// listing now, beside the caller's reads; the commit takes it if it
// starts within one MinCommitInterval, and lists again otherwise. One
// early probe is under way at a time.
func (s *Store) ExpectCommand() {
	if !s.opts.Intents || s.opts.NoGroupCommit || s.opts.MinCommitInterval <= 0 || s.othersActive() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.early != nil && s.early.age() < s.opts.MinCommitInterval || !s.loneProbeDueLocked() {
		return
	}
	s.early = s.listIntents(s.stop)
}

// takeEarly returns the early probe for this attempt, if one started
// within the interval.
func (s *Store) takeEarly() *probe {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.early
	s.early = nil
	if e == nil || e.age() >= s.opts.MinCommitInterval {
		return nil
	}
	return e
}

// settleApplied finishes the calls whose data commands another replica
// has applied by sn (their dedupe record is there), and reports whether
// none is left. It reads the records in one round.
func (s *Store) settleApplied(ctx context.Context, sn *Snapshot, calls []*call) bool {
	var mine []*call
	for _, c := range calls {
		if c.intent != "" && !c.finished() {
			mine = append(mine, c)
		}
	}
	if len(mine) == 0 {
		return false
	}
	if err := s.prefetchReads(ctx, sn, mine); err != nil {
		return false
	}
	left := false
	for _, c := range calls {
		if c.finished() {
			continue
		}
		if c.intent == "" {
			left = true
			continue
		}
		v, ok, err := sn.Get(ctx, shards.CommandDedupe, dedupeKey(c.cmd))
		if err != nil || !ok {
			left = true
			continue
		}
		o := replay(v, c.cmd)
		o.res.Replayed = false // its own intent, applied by another replica: not a client's retry
		c.finish(o.res, o.err)
	}
	return !left
}

// unsettled is the error a call ends with when its commit failed: a data
// command whose intent is out may still be applied by another replica, so
// its outcome is unknown.
func (c *call) unsettled(err error) error {
	if c.intent == "" {
		return err
	}
	return fmt.Errorf("%w: its intent may still be applied by another replica: %w", ErrUnknownOutcome, err)
}

func (s *Store) handler(kind string) (Handler, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.handlers[kind]
	return h, ok
}

// Intent object format, version 1.
const (
	intentMagic  = "CRNI"
	intentFormat = 1
	// maxIntentCommands bounds the commands of one intent.
	maxIntentCommands = 1 << 16
)

// intentCmd is one command of an intent: what another replica needs to
// apply it.
type intentCmd struct {
	Namespace [16]byte
	RequestID string
	Digest    [32]byte
	Kind      string
	Payload   []byte
}

func (ic intentCmd) command() Command {
	return Command{Namespace: ic.Namespace, RequestID: ic.RequestID, Digest: ic.Digest, Kind: ic.Kind, Payload: ic.Payload}
}

func encodeIntent(created time.Time, cmds []intentCmd) ([]byte, error) {
	w := wire.NewWriter(nil).Raw([]byte(intentMagic)).U8(intentFormat).U64(uint64(created.UnixMilli())).U32(uint32(len(cmds)))
	for _, c := range cmds {
		w.Raw(c.Namespace[:]).Bytes16([]byte(c.RequestID)).Raw(c.Digest[:]).Bytes16([]byte(c.Kind)).Bytes32(c.Payload)
	}
	if err := w.Err(); err != nil {
		return nil, fmt.Errorf("head: encode intent: %w", err)
	}
	return w.Bytes(), nil
}

func decodeIntent(b []byte) (time.Time, []intentCmd, error) {
	r := wire.NewReader(b)
	if got := r.Take(len(intentMagic)); r.Err() == nil && string(got) != intentMagic {
		r.Fail("magic", fmt.Sprintf("bad magic %q", got))
	}
	if v := r.U8(); r.Err() == nil && v != intentFormat {
		r.Fail("version", fmt.Sprintf("unknown intent format %d", v))
	}
	created := time.UnixMilli(int64(r.U64()))
	n := r.U32()
	if r.Err() == nil && (n == 0 || n > maxIntentCommands) {
		r.Fail("count", fmt.Sprintf("%d commands", n))
	}
	var cmds []intentCmd
	for i := uint32(0); i < n && r.Err() == nil; i++ {
		var c intentCmd
		r.Copy(c.Namespace[:])
		c.RequestID = string(r.Bytes16())
		r.Copy(c.Digest[:])
		c.Kind = string(r.Bytes16())
		c.Payload = r.Bytes32()
		if r.Err() == nil && (c.RequestID == "" || c.Kind == "") {
			r.Fail("command", fmt.Sprintf("command %d has no request id or kind", i))
		}
		cmds = append(cmds, c)
	}
	if err := r.End(); err != nil {
		return time.Time{}, nil, fmt.Errorf("head: decode intent: %w: %w", err, bucket.ErrIntegrity)
	}
	return created, cmds, nil
}

// intentsPrefix is where a shard's intents live.
func (s *Store) intentsPrefix() string { return s.layout.IntentsPrefix() }

// publishIntent writes the calls' data commands that have no intent yet
// as one intent, and marks them with its name. A write the store refused
// before it took effect (throttled, or refused for good) leaves them
// without one: they are then committed by this Store alone, as before.
// Any other failure (a lost answer, a cancelled request, a timeout, a
// precondition failure that a retried create of our own may answer) may
// have left the intent in the bucket, where another replica may apply it:
// the calls are marked as published, so that none of them is ever told it
// was not applied (call.unsettled).
func (s *Store) publishIntent(ctx context.Context, calls []*call) {
	var cmds []intentCmd
	var mine []*call
	for _, c := range calls {
		if c.cmd.Kind == "" || c.intent != "" || c.finished() {
			continue
		}
		cmds = append(cmds, intentCmd{Namespace: c.cmd.Namespace, RequestID: c.cmd.RequestID, Digest: c.cmd.Digest, Kind: c.cmd.Kind, Payload: c.cmd.Payload})
		mine = append(mine, c)
	}
	if len(cmds) == 0 {
		return
	}
	now := time.Now()
	body, err := encodeIntent(now, cmds)
	if err != nil {
		return
	}
	var salt [8]byte
	rand.Read(salt[:])
	key := s.layout.Intent(now.UnixMilli(), salt)
	if ctx.Err() != nil {
		return // nothing sent
	}
	_, err = s.b.Put(ctx, key, body, bucket.IfAbsent())
	if err != nil && (errors.Is(err, bucket.ErrThrottled) || bucket.Permanent(err)) {
		return
	}
	for _, c := range mine {
		c.intent = key
	}
	if err == nil {
		s.published.Add(1)
	}
}

// IntentStats reports the intents this Store published and the commands
// of other replicas' intents its commits applied (counted per attempt,
// landed or not).
func (s *Store) IntentStats() (published, carried int64) {
	return s.published.Load(), s.carried.Load()
}

// intentBudget bounds, in MaxDeltaBytes, the payloads of the commands one
// commit carries, its own and other replicas' intents, so that a
// carrier's batch stays within the delta segment it may list without
// folding (loneDeltaFactor; a delta's records take more bytes than the
// payloads they come from, about twice for files of 2 KiB): a carrier
// that fell behind catches up over several commits, each a delta, rather
// than folding everything waiting at once, a commit so long that the
// others would take over and build the same one beside it.
const intentBudget = 1

// foreignIntent is another replica's intent, read to be applied.
type foreignIntent struct {
	key  string
	cmds []intentCmd
}

// pendingIntents lists the shard's intents and reads, in parallel, those
// not published by these calls and not older than MaxAttemptAge, oldest
// first, up to intentBudget × MaxDeltaBytes of them less the calls' own
// payloads (the oldest always). An intent that cannot be read (gone:
// applied and deleted meanwhile) is left out.
func (s *Store) pendingIntents(ctx context.Context, calls []*call) ([]foreignIntent, error) {
	objs, _, err := bucket.ListAll(ctx, s.b, bucket.ListOptions{Prefix: s.intentsPrefix()})
	if err != nil {
		return nil, err
	}
	own := ownIntents(calls)
	cutoff := time.Now().Add(-s.opts.MaxAttemptAge).UnixMilli()
	var pending []bucket.Attrs
	for _, o := range objs {
		// An intent being deleted was settled by a landed commit: applying
		// it again would only replay it, and settle it again.
		_, dropping := s.dropping.Load(o.Key)
		if ms, ok := s.layout.ParseIntent(o.Key); ok && !own[o.Key] && !dropping && ms >= cutoff {
			pending = append(pending, o)
		}
	}
	slices.SortFunc(pending, func(a, b bucket.Attrs) int { return strings.Compare(a.Key, b.Key) })
	var keys []string
	budget := intentBudget*s.opts.MaxDeltaBytes - payloadBytes(calls)
	for _, o := range pending {
		if len(keys) > 0 && o.Size > budget {
			break // the rest wait for a later commit
		}
		keys = append(keys, o.Key)
		budget -= o.Size
	}
	out := make([]foreignIntent, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.StageConcurrency)
	for i, key := range keys {
		g.Go(func() error {
			b, _, err := s.b.Get(gctx, key)
			if errors.Is(err, bucket.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			_, cmds, err := decodeIntent(b)
			if err != nil {
				return nil // not ours to judge: the sweep owns it
			}
			out[i] = foreignIntent{key: key, cmds: cmds}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out = slices.DeleteFunc(out, func(f foreignIntent) bool { return f.key == "" })
	if len(out) > 0 {
		// Another replica shares the head: a carrier that keeps winning
		// sees no head write of theirs, and their intents are what keep
		// it contended (othersActive), so that its heads go on saying it
		// carries and the others go on leaving their commands to it.
		s.mu.Lock()
		s.intentsSeen = time.Now()
		s.mu.Unlock()
	}
	return out, nil
}

// ownIntents is the set of the intents calls published.
func ownIntents(calls []*call) map[string]bool {
	own := map[string]bool{}
	for _, c := range calls {
		if c.intent != "" {
			own[c.intent] = true
		}
	}
	return own
}

// applyForeign applies the commands of other replicas' intents on top of
// the batch, each as an exactly-once command: one already applied replays
// and changes nothing. A command whose handler is unknown here, or that
// fails for a reason other than Rejected, is left out, to be applied by a
// later commit. It returns the intents whose every command is now settled
// (applied, replayed or rejected), which the commit deletes once landed.
func (s *Store) applyForeign(ctx context.Context, sn *Snapshot, state *batchState, foreign []foreignIntent, at applyClock) []string {
	var settled []string
	for _, fi := range foreign {
		all := true
		for _, ic := range fi.cmds {
			o := s.apply(ctx, sn, state, ic.command(), at, true)
			var rej *Rejected
			if o.err != nil && !errors.As(o.err, &rej) {
				all = false
			}
			if !o.res.Replayed {
				s.carried.Add(1)
			}
		}
		if all {
			settled = append(settled, fi.key)
		}
	}
	return settled
}

// dropIntents deletes, in the background, intents whose commands a landed
// commit settled, each once however many commits settle it while its
// delete is under way. A delete that fails leaves the intent to the next
// commit (which replays it) and to the sweep.
func (s *Store) dropIntents(keys []string) {
	keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
		_, under := s.dropping.LoadOrStore(k, true)
		return under
	})
	if len(keys) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		sem := make(chan struct{}, s.opts.StageConcurrency)
		for _, k := range keys {
			wg.Go(func() {
				defer s.dropping.Delete(k)
				if d := s.intentDeleteDelay(k); d > 0 && bucket.Sleep(ctx, d) != nil {
					return
				}
				sem <- struct{}{}
				defer func() { <-sem }()
				_ = s.b.Delete(ctx, k, bucket.Unconditional)
			})
		}
		wg.Wait()
	}()
}

// intentDeleteDelay is how long dropIntents waits before it deletes
// intent key: until one commit interval (and a tenth) after the intent
// was published, by its publisher's clock, and at most two intervals. A
// store that limits the writes to one object (GCS: one a second) counts
// a delete as one and refuses one that comes sooner; refused, the intent
// stayed, to be listed and read again by every carrier. A Store that
// does not pace deletes at once.
func (s *Store) intentDeleteDelay(key string) time.Duration {
	interval := s.opts.MinCommitInterval
	if interval <= 0 {
		return 0
	}
	ms, ok := s.layout.ParseIntent(key)
	if !ok {
		return 0
	}
	d := time.Until(time.UnixMilli(ms).Add(interval + interval/10))
	return min(max(d, 0), 2*interval)
}
