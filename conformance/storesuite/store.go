package storesuite

// The store suite: several head.Store replicas, each with its own cache and
// its own fault injector, serve one shard of one shared bucket while
// clients on every replica run randomized commands against a few keys. The
// history the clients observe is checked for linearizability (porcupine),
// every acknowledged append must survive, and no append may apply twice.
//
// # Operations
//
// Each key (of the artifact_revision family, 32 bytes) holds a list of ids.
// append(key, id) is a command that reads the list and writes it back with
// id at its end, returning the new list. Three appends in four carry a
// RequestID and Digest unique to the logical operation, and their client
// retries the same RequestID and Digest on any error (on its own replica
// or another one), so they apply exactly once however often they are sent.
// The fourth carries no RequestID and is sent once: the commit protocol
// alone must apply it at most once. read(key) either pins a snapshot and
// gets the key, or runs a read-only command that shares group commits with
// appends.
//
// An append's outcome is what its client learned: acknowledged (with the
// list it returned), failed (its first attempt was refused with
// head.ErrRetryable or by the command's own read, and the client gave up:
// nothing of it may ever be visible), or unknown (the client gave up after
// any other error, or after too many attempts). An unknown append may
// apply at any point after it was called, or never; the final state
// settles which (see storeModel).
//
// # Checks
//
// After the clients finish, the faults are cleared and an auditor store
// (no faults, a fresh cache) reads the final lists; the final reads join
// the history. A scenario passes when porcupine finds every key's history
// linearizable within the check timeout (violations and undecided both 0),
// no acknowledged append is missing from its key's final list (lost acks
// 0), no id appears twice in a list (duplicates 0), no id appears that no
// client appended or whose append failed, no client met an error outside
// the expected classes, the final root passes head.Check in strict mode,
// the chain of roots from the head back to the first has one root per
// sequence, and the bucket accepted exactly one conditional head write per
// commit.
//
// # Scenarios
//
// See Scenarios. Every scenario runs with head.Options.Check on, small
// backoffs (a few milliseconds), and a seed that decides the clients'
// choices and the probabilistic faults; a failing run reproduces its
// faults and choices (not its goroutine schedule) with the same seed, set
// through Options.Seed or the environment variable CAIRN_STORE_SEED.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// SeedEnv names the environment variable that overrides the store
// suite's seed.
const SeedEnv = "CAIRN_STORE_SEED"

// VizEnv names an environment variable holding a directory: when a
// key's history is not linearizable, porcupine's HTML visualization of it
// is written there.
const VizEnv = "CAIRN_STORE_VIZ"

// Options size the store suite and adjust it to a backend. Zero
// fields take the defaults in brackets.
type Options struct {
	Replicas int // head.Store instances over the shared bucket [3]
	Clients  int // client goroutines per replica [3]
	Ops      int // operations per client [40]
	Keys     int // keys the clients share [3], at most 256

	// Seed decides the clients' choices and the faults. Zero takes
	// CAIRN_STORE_SEED, else a seed from the clock; the seed is logged and
	// reported either way. CAIRN_STORE_SEED, when set, overrides Seed.
	Seed uint64

	// Scenarios restricts a run of the whole suite (such as
	// conformancetest.RunStoreSuite) to these scenarios (nil: all). Run
	// ignores it.
	Scenarios []string
	// Skip maps a scenario to why this backend does not run it; a run of
	// the whole suite reports it as skipped with the reason. Run ignores
	// it.
	Skip map[string]string

	// OpTimeout bounds one attempt of one operation [10s].
	OpTimeout time.Duration
	// ClientAttempts bounds the attempts of one append before its client
	// gives it up as unknown [12].
	ClientAttempts int
	// CheckTimeout bounds porcupine's check of one key [30s].
	CheckTimeout time.Duration

	// Replica, if set, returns replica i's own client of the store behind
	// shared (another handle on the same directory, another client of the
	// same bucket), so that the replicas share nothing in-process; the
	// suite closes it. Nil gives every replica shared itself.
	Replica func(shared bucket.Bucket, replica int) (bucket.Bucket, error)

	// Head tunes the replicas. Zero fields take the suite's defaults
	// (BackoffBase 1ms, BackoffMax 20ms, ThrottleBackoff 2ms, MaxAttempts
	// 20); Check is always on.
	Head head.Options
}

func (o *Options) fill() {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.Replicas, 3)
	def(&o.Clients, 3)
	def(&o.Ops, 40)
	def(&o.Keys, 3)
	def(&o.ClientAttempts, 12)
	if o.OpTimeout <= 0 {
		o.OpTimeout = 10 * time.Second
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 30 * time.Second
	}
	h := &o.Head
	if h.BackoffBase <= 0 {
		h.BackoffBase = time.Millisecond
	}
	if h.BackoffMax <= 0 {
		h.BackoffMax = 20 * time.Millisecond
	}
	if h.ThrottleBackoff <= 0 {
		h.ThrottleBackoff = 2 * time.Millisecond
	}
	if h.MaxAttempts <= 0 {
		h.MaxAttempts = 20
	}
	h.Check = true
}

// Seed returns the seed a run uses: CAIRN_STORE_SEED if set, else
// seed if non-zero, else one from the clock.
func Seed(seed uint64) (uint64, error) {
	if s := os.Getenv(SeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("conformance: %s=%q: %w", SeedEnv, s, err)
		}
		return v, nil
	}
	if seed != 0 {
		return seed, nil
	}
	return uint64(time.Now().UnixNano()) | 1, nil
}

// errStoreCrash is what a crash fault answers the dying replica's write.
var errStoreCrash = errors.New("conformance: injected crash")

// errStoreReopen marks an error of opening a replica's store again after
// it crashed.
var errStoreReopen = errors.New("conformance: reopen after a crash")

// errStoreApplyRead marks an error of the append command's own read, so
// that it is told apart from errors the engine returns by itself.
var errStoreApplyRead = errors.New("conformance: append read")

// storeRule is one fault of a scenario, with the name it is counted under.
type storeRule struct {
	kind string
	rule fault.Rule
}

// storeScenario is one subtest of the suite.
type storeScenario struct {
	name  string
	about string
	// rules returns the faults armed on one replica's injector.
	rules func(rep *storeReplica) []storeRule
	// abandon is the probability that a client gives an append up after
	// a failed attempt.
	abandon float64
	// late is the probability that a conditional put of the head answers
	// ErrAmbiguous at once and lands a few milliseconds later.
	late float64
}

func storeLose(head string, p float64) storeRule {
	return storeRule{"lose-response", fault.Rule{Op: fault.OpPut, Key: head, Conditional: true, Probability: p, Fault: fault.LoseResponse()}}
}

func storePrecondition(head string, p float64) storeRule {
	return storeRule{"precondition-after-apply", fault.Rule{Op: fault.OpPut, Key: head, Conditional: true, Probability: p, Fault: fault.PreconditionAfterApply()}}
}

func storeThrottle(p float64) storeRule {
	return storeRule{"throttled-put", fault.Rule{Op: fault.OpPut, Probability: p, Fault: fault.FailBefore(bucket.ErrThrottled)}}
}

func storeUnavailable(head string, put, getHead, get float64) []storeRule {
	return []storeRule{
		{"unavailable-put", fault.Rule{Op: fault.OpPut, Probability: put, Fault: fault.FailBefore(bucket.ErrUnavailable)}},
		{"unavailable-get-head", fault.Rule{Op: fault.OpGet, Key: head, Probability: getHead, Fault: fault.FailBefore(bucket.ErrUnavailable)}},
		{"unavailable-get", fault.Rule{Op: fault.OpGet, Probability: get, Fault: fault.FailBefore(bucket.ErrUnavailable)}},
	}
}

// storeCorrupt flips a byte of some immutable objects' bodies as they are
// read (roots, tables, shard objects; not the head, whose damage the
// engine rightly refuses as a bad head). The engine verifies every one
// against its hash, so none may ever be served.
func storeCorrupt(rep *storeReplica, p float64) []storeRule {
	var rules []storeRule
	for _, dir := range []string{"roots/", "tables/", "objects/"} {
		rules = append(rules, storeRule{"corrupt-read", fault.Rule{Op: fault.OpGet, Prefix: rep.run.layout.Prefix() + dir,
			Probability: p, Fault: fault.CorruptRead()}})
	}
	return rules
}

// storeSlow delays some calls by up to two milliseconds, to vary the
// interleavings of replicas.
func storeSlow(p float64) storeRule {
	return storeRule{"delay", fault.Rule{Probability: p, Fault: fault.Hook(func(ctx context.Context, _ fault.Op, _ string) error {
		t := time.NewTimer(time.Duration(rand.IntN(2000)) * time.Microsecond)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})}}
}

// storeCrash makes a replica die at its head CAS: before the write is
// sent (Hook) or after it landed (HookAfter). The replica's in-flight
// requests end with a cancelled context, its store is closed, and the
// next request on it opens a new store with an empty cache (and a new
// fault injector, so that a dying store's last writes cannot kill its
// successor).
func storeCrash(rep *storeReplica, head string, before, after float64) []storeRule {
	gen := rep.gen
	die := func(context.Context, fault.Op, string) error {
		rep.crash(gen)
		return errStoreCrash
	}
	return []storeRule{
		{"crash-before-cas", fault.Rule{Op: fault.OpPut, Key: head, Conditional: true, Probability: before, Fault: fault.Hook(die)}},
		{"crash-after-cas", fault.Rule{Op: fault.OpPut, Key: head, Conditional: true, Probability: after, Fault: fault.HookAfter(die)}},
	}
}

func storeScenarioList() []storeScenario {
	return []storeScenario{
		{name: "no-faults", about: "no faults",
			rules: func(*storeReplica) []storeRule { return nil }},
		{name: "lost-cas-response", about: "the response to a conditional head put is lost after the write landed",
			rules: func(rep *storeReplica) []storeRule { return []storeRule{storeLose(rep.head, 0.3)} }},
		{name: "precondition-after-apply", about: "a conditional head put lands and answers 412, as a retried GCS write does",
			rules: func(rep *storeReplica) []storeRule { return []storeRule{storePrecondition(rep.head, 0.3)} }},
		{name: "throttling", about: "puts are throttled before they take effect",
			rules: func(*storeReplica) []storeRule { return []storeRule{storeThrottle(0.15)} }},
		{name: "transient-5xx", about: "gets and puts fail with 5xx before they take effect",
			rules: func(rep *storeReplica) []storeRule { return storeUnavailable(rep.head, 0.05, 0.1, 0.002) }},
		{name: "corrupt-reads", about: "immutable objects come back damaged",
			rules: func(rep *storeReplica) []storeRule { return storeCorrupt(rep, 0.05) }},
		{name: "late-landing", about: "a conditional head put answers ambiguous at once and lands milliseconds later, or not at all",
			rules: func(*storeReplica) []storeRule { return nil },
			late:  0.3},
		{name: "crash", about: "a replica dies between staging and its head CAS, or just after the CAS landed",
			rules:   func(rep *storeReplica) []storeRule { return storeCrash(rep, rep.head, 0.1, 0.1) },
			abandon: 0.1},
		{name: "mixed", about: "every fault above at once",
			rules: func(rep *storeReplica) []storeRule {
				rules := storeCrash(rep, rep.head, 0.04, 0.04)
				rules = append(rules, storeLose(rep.head, 0.1), storePrecondition(rep.head, 0.1), storeThrottle(0.05))
				rules = append(rules, storeUnavailable(rep.head, 0.03, 0.05, 0.001)...)
				rules = append(rules, storeCorrupt(rep, 0.005)...)
				return append(rules, storeSlow(0.1))
			},
			abandon: 0.05,
			late:    0.1},
	}
}

// Scenarios returns the names of the store suite's scenarios, in the
// order the suite runs them:
//
//   - no-faults: no faults.
//   - lost-cas-response: fault.LoseResponse on conditional puts of the head.
//   - precondition-after-apply: fault.PreconditionAfterApply on conditional
//     puts of the head.
//   - throttling: puts fail with bucket.ErrThrottled before taking effect.
//   - transient-5xx: gets and puts fail with bucket.ErrUnavailable before
//     taking effect.
//   - corrupt-reads: gets of roots, tables and shard objects return a
//     damaged body (fault.CorruptRead); the engine must never serve one.
//   - late-landing: a conditional put of the head answers bucket.ErrAmbiguous
//     at once and is sent on a few milliseconds later, landing if its
//     condition still holds, as a request its caller gave up on may.
//   - crash: a replica dies at its head CAS, before the write or after it
//     landed; its clients retry the same request, often on another replica.
//   - mixed: all of the above at lower rates, and calls delayed at random
//     by up to two milliseconds.
func Scenarios() []string {
	var names []string
	for _, s := range storeScenarioList() {
		names = append(names, s.name)
	}
	return names
}

// Report is what one scenario observed.
type Report struct {
	Scenario string
	Seed     uint64
	Replicas int
	Clients  int // in all

	Operations int // recorded in the history, the final reads included
	Appends    int // acknowledged
	Unknown    int // appends given up, outcome unknown to the client
	// UnknownApplied counts the unknown appends the final state shows
	// applied.
	UnknownApplied int
	Failed         int // appends given up after a refusal: known not applied
	Bare           int // appends without a request id (sent once, never retried)
	Reads          int // successful, the final reads included
	FailedRead     int // reads that failed (not in the history)
	Retries        int // client retries of an append
	Replays        int // acknowledged appends answered by an exact-retry replay
	Crashes        int // replica crashes

	Faults map[string]int64 // fired faults by kind, over every replica
	Errors map[string]int   // errors clients saw, by class
	// ErrorSamples holds the first error of each class, for diagnosis.
	ErrorSamples map[string]string

	Violations int // keys whose history is not linearizable
	Undecided  int // keys porcupine could not decide within the timeout
	LostAcks   int // acknowledged appends missing from the final state
	Duplicates int // ids appearing more than once in a final list
	Foreign    int // ids in a final list that no client appended, or whose append failed
	Commits    uint64
	// CASConflicts counts conditional head puts the bucket refused.
	CASConflicts int64

	// Unexpected lists errors outside the expected classes (at most 10);
	// Integrity lists findings of the final audit (head.Check, the root
	// chain).
	Unexpected []string
	Integrity  []string
	// Details explains violations: the offending keys' histories.
	Details []string
	Elapsed time.Duration
}

// Problems lists why the scenario failed; empty means it passed.
func (r *Report) Problems() []string {
	var p []string
	add := func(n int, what string) {
		if n != 0 {
			p = append(p, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(r.Violations, "keys with a non-linearizable history")
	add(r.Undecided, "keys whose linearizability check timed out")
	add(r.LostAcks, "acknowledged appends lost")
	add(r.Duplicates, "duplicate ids in the final state")
	add(r.Foreign, "ids in the final state that no client appended, or whose append failed")
	for _, u := range r.Unexpected {
		p = append(p, "unexpected error: "+u)
	}
	p = append(p, r.Integrity...)
	return p
}

func storeCounts[V int | int64](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	return strings.Join(parts, ",")
}

// String is the scenario's one-line summary.
func (r *Report) String() string {
	return fmt.Sprintf("store %s: seed=%d ops=%d (appends=%d bare=%d unknown=%d/%d applied failed=%d reads=%d failed_reads=%d) replicas=%d clients=%d "+
		"faults=[%s] violations=%d undecided=%d lost_acks=%d duplicates=%d commits=%d cas_conflicts=%d retries=%d replays=%d crashes=%d "+
		"client_errors=[%s] elapsed=%s",
		r.Scenario, r.Seed, r.Operations, r.Appends, r.Bare, r.Unknown, r.UnknownApplied, r.Failed, r.Reads, r.FailedRead, r.Replicas, r.Clients,
		storeCounts(r.Faults), r.Violations, r.Undecided, r.LostAcks, r.Duplicates, r.Commits, r.CASConflicts, r.Retries, r.Replays, r.Crashes,
		storeCounts(r.Errors), r.Elapsed.Round(time.Millisecond))
}

// Run runs one scenario over shared, which must hold nothing of the
// shard the run creates (a fresh bucket is simplest), and reports what it
// observed. It returns an error only when the scenario could not run; a
// misbehaving store shows in the report's Problems.
func Run(ctx context.Context, shared bucket.Bucket, scenario string, opts Options) (*Report, error) {
	opts.fill()
	var sc storeScenario
	for _, s := range storeScenarioList() {
		if s.name == scenario {
			sc = s
		}
	}
	if sc.name == "" {
		return nil, fmt.Errorf("conformance: unknown store scenario %q", scenario)
	}
	if opts.Keys > 256 {
		return nil, fmt.Errorf("conformance: %d keys, at most 256", opts.Keys)
	}
	seed, err := Seed(opts.Seed)
	if err != nil {
		return nil, err
	}
	r := &storeRun{
		opts:    opts,
		sc:      sc,
		shared:  shared,
		id:      shards.NewShardID(),
		start:   time.Now(),
		acked:   map[string]int{},
		issued:  map[string]int{},
		failed:  map[string]int{},
		errs:    map[string]int{},
		ctx:     ctx,
		keyRoot: [16]byte{0xca, 0x12, 0x0e},
	}
	r.layout = shards.NewLayout(storeSchema().Families, r.id)
	r.rep = &Report{Scenario: scenario, Seed: seed, Replicas: opts.Replicas, Clients: opts.Replicas * opts.Clients,
		Faults: map[string]int64{}, ErrorSamples: map[string]string{}}
	for i := range opts.Keys {
		k := make([]byte, 32)
		copy(k, r.keyRoot[:])
		k[31] = byte(i)
		r.keys = append(r.keys, k)
	}
	if err := r.setup(seed); err != nil {
		r.close()
		return nil, err
	}
	r.runClients(seed)
	// A dead replica's commit may still be winding down: fence the
	// replicas' writes off, let the late writes in flight land, and only
	// then audit.
	r.fenced.Store(true)
	r.late.Wait()
	err = r.audit()
	r.close()
	if err != nil {
		return nil, err
	}
	r.check()
	r.rep.Elapsed = time.Since(r.start)
	return r.rep, nil
}

// storeFamily is the family the suite's keys live in: 32-byte keys, each
// its own shard key.
const storeFamily shards.Family = 0x04

// storeSchema is the suite's own schema: storeFamily and the engine's.
var storeSchema = sync.OnceValue(func() head.Schema {
	fams, err := shards.NewSchema(shards.FamilySpec{Family: storeFamily, Name: "appends",
		ShardKey: func(key []byte) ([]byte, error) {
			if len(key) != 32 {
				return nil, &shards.KeyError{Op: "appends key", Reason: fmt.Sprintf("%d bytes, want 32", len(key))}
			}
			return key, nil
		}})
	if err != nil {
		panic(err)
	}
	return head.Schema{Marker: head.Marker{SchemaID: "cairn_conformance_store", FormatVersion: 1, ValueFormatVersion: 1}, Families: fams}
})

// storeRun is one scenario's run.
type storeRun struct {
	opts     Options
	sc       storeScenario
	shared   bucket.Bucket
	id       shards.ShardID
	layout   shards.Layout
	start    time.Time
	ctx      context.Context
	keyRoot  [16]byte
	keys     [][]byte
	replicas []*storeReplica
	// The conditional head writes the bucket accepted and refused, and
	// the fence that stops the replicas' writes once the clients are done.
	landed, conflicts atomic.Int64
	fenced            atomic.Bool
	initial           uint64 // the head sequence before the clients start
	landed0           int64  // landed conditional head puts before the clients start
	nextID            atomic.Uint64
	late              sync.WaitGroup // late-landing writes in flight

	mu      sync.Mutex
	history []porcupine.Operation
	acked   map[string]int // acknowledged id → key
	issued  map[string]int // every appended id → key, but those in failed
	failed  map[string]int // appends known to have failed → key
	errs    map[string]int
	final   [][]string // each key's final list
	rep     *Report
}

// storeReplica is one process serving the shard: a store over its own
// fault injector, replaced by a new store (and injector) when it crashes.
type storeReplica struct {
	idx   int
	run   *storeRun
	head  string // the head's key
	seed  uint64
	own   bucket.Bucket // the replica's own client, from Options.Replica
	cas   *storeCASCounter
	fence *storeFence

	mu      sync.Mutex
	gen     int           // the current generation (process) of the replica
	fb      *fault.Bucket // the current generation's injector
	late    *storeLateWrites
	fbs     []*fault.Bucket
	st      *head.Store // nil after a crash, until the next request
	ctx     context.Context
	cancel  context.CancelFunc
	crashes int
	handles []storeHandle
	lates   []*storeLateWrites
}

// arm gives the replica's current generation a new injector with the
// scenario's faults. The caller holds rep.mu (or has the replica to itself).
func (rep *storeReplica) arm(faults bool) {
	rep.late = &storeLateWrites{Bucket: rep.fence, direct: rep.cas, head: rep.head, p: rep.run.sc.late, wg: &rep.run.late,
		rng: rand.New(rand.NewPCG(rep.seed, uint64(rep.gen)))}
	rep.lates = append(rep.lates, rep.late)
	rep.fb = fault.New(rep.late)
	rep.fbs = append(rep.fbs, rep.fb)
	rep.fb.Seed(rep.seed ^ uint64(rep.gen)*0xbf58476d1ce4e5b9)
	if faults {
		rep.armRules()
	}
}

func (rep *storeReplica) armRules() {
	rep.late.enable(true)
	for _, sr := range rep.run.sc.rules(rep) {
		rep.handles = append(rep.handles, storeHandle{sr.kind, rep.fb.Inject(sr.rule)})
	}
}

type storeHandle struct {
	kind string
	h    *fault.Handle
}

func (r *storeRun) now() int64 { return time.Since(r.start).Nanoseconds() }

// setup opens the replicas concurrently (the first commit initializes the
// shard), then arms the scenario's faults.
func (r *storeRun) setup(seed uint64) error {
	for i := range r.opts.Replicas {
		rep := &storeReplica{idx: i, run: r, head: r.layout.Head(), seed: seed ^ uint64(i+1)*0x9e3779b97f4a7c15}
		base := r.shared
		if r.opts.Replica != nil {
			b, err := r.opts.Replica(r.shared, i)
			if err != nil {
				return fmt.Errorf("conformance: replica %d's bucket: %w", i, err)
			}
			rep.own = b
			base = b
		}
		rep.cas = &storeCASCounter{Bucket: base, head: rep.head, landed: &r.landed, conflicts: &r.conflicts}
		rep.fence = &storeFence{Bucket: rep.cas, closed: &r.fenced}
		rep.ctx, rep.cancel = context.WithCancel(r.ctx)
		rep.arm(false)
		r.replicas = append(r.replicas, rep)
	}
	errs := make([]error, len(r.replicas))
	var wg sync.WaitGroup
	for i, rep := range r.replicas {
		wg.Go(func() {
			st, err := head.Open(r.ctx, rep.fb, r.id, storeSchema(), r.opts.Head)
			if err != nil {
				errs[i] = fmt.Errorf("conformance: open replica %d: %w", i, err)
				return
			}
			rep.st = st
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	sn, err := r.replicas[0].st.Pin(r.ctx)
	if err != nil {
		return fmt.Errorf("conformance: pin the new shard: %w", err)
	}
	r.initial = sn.Sequence()
	r.landed0 = r.landed.Load()
	for _, rep := range r.replicas {
		rep.armRules()
	}
	return nil
}

// current returns the replica's live store and the context its requests
// run under, opening a new store after a crash.
func (rep *storeReplica) current() (*head.Store, context.Context, error) {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if rep.st == nil {
		// The shard exists, so Open only reads: no conditional put, and
		// no crash fault, can fire under rep.mu.
		st, err := head.Open(rep.ctx, rep.fb, rep.run.id, storeSchema(), rep.run.opts.Head)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errStoreReopen, err)
		}
		rep.st = st
	}
	return rep.st, rep.ctx, nil
}

// crash kills generation gen of the replica, if it is still alive: its
// in-flight requests are cancelled and its store (with its cache) is
// dropped. It runs inside a fault hook.
func (rep *storeReplica) crash(gen int) {
	rep.mu.Lock()
	if rep.gen != gen {
		rep.mu.Unlock()
		return
	}
	rep.cancel()
	old := rep.st
	rep.st = nil
	rep.gen++
	rep.ctx, rep.cancel = context.WithCancel(rep.run.ctx)
	rep.arm(true)
	rep.crashes++
	rep.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

func (r *storeRun) close() {
	for _, rep := range r.replicas {
		rep.mu.Lock()
		if rep.st != nil {
			rep.st.Close()
		}
		rep.cancel()
		rep.mu.Unlock()
		if rep.own != nil {
			rep.own.Close()
		}
	}
}

// runClients runs every client to completion.
func (r *storeRun) runClients(seed uint64) {
	var wg sync.WaitGroup
	for _, rep := range r.replicas {
		for c := range r.opts.Clients {
			client := rep.idx*r.opts.Clients + c
			rng := rand.New(rand.NewPCG(seed, uint64(client)+1))
			wg.Go(func() { r.client(client, rep, rng) })
		}
	}
	wg.Wait()
	// A dead replica's commit may still be winding down and fire a fault:
	// disarm them all before counting.
	for _, rep := range r.replicas {
		rep.mu.Lock()
		for _, fb := range rep.fbs {
			fb.Clear()
		}
		for _, lw := range rep.lates {
			lw.enable(false)
		}
		rep.mu.Unlock()
	}
	for _, rep := range r.replicas {
		rep.mu.Lock()
		r.rep.Crashes += rep.crashes
		handles := rep.handles
		for _, lw := range rep.lates {
			if n := lw.fired.Load(); n > 0 {
				r.rep.Faults["late-landing"] += n
			}
		}
		rep.mu.Unlock()
		for _, h := range handles {
			if n := h.h.Fired(); n > 0 {
				r.rep.Faults[h.kind] += n
			}
		}
	}
}

func (r *storeRun) client(id int, home *storeReplica, rng *rand.Rand) {
	for range r.opts.Ops {
		if r.ctx.Err() != nil {
			return
		}
		k := rng.IntN(len(r.keys))
		if rng.IntN(2) == 0 {
			r.appendOp(id, home, rng, k)
		} else {
			r.readOp(id, home, k, rng.IntN(2) == 0)
		}
	}
}

// storeErrClass classifies an error a client saw, and says whether it is
// one the suite expects under faults. A bucket error that the append
// command's own read did not return is marked "raw-": the engine returned
// it as it was.
func storeErrClass(err error) (string, bool) {
	engine := ""
	switch {
	case errors.Is(err, errStoreReopen):
		engine = "reopen-"
	case !errors.Is(err, errStoreApplyRead):
		engine = "raw-"
	}
	switch {
	case errors.Is(err, head.ErrRetryable):
		return "retryable", true
	case errors.Is(err, head.ErrUnknownOutcome):
		return "unknown-outcome", true
	case errors.Is(err, head.ErrClosed):
		return "closed", true
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", true
	case errors.Is(err, context.Canceled):
		return "canceled", true
	case errors.Is(err, errStoreCrash):
		return "crash", true
	case errors.Is(err, bucket.ErrThrottled):
		return engine + "throttled", true
	case errors.Is(err, bucket.ErrUnavailable):
		return engine + "unavailable", true
	case errors.Is(err, bucket.ErrAmbiguous):
		return engine + "ambiguous", true
	case errors.Is(err, bucket.ErrIntegrity):
		return engine + "integrity", true
	}
	return "other", false
}

func (r *storeRun) noteErr(op string, err error) {
	class, ok := storeErrClass(err)
	class = op + ":" + class
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs[class]++
	if _, ok := r.rep.ErrorSamples[class]; !ok {
		r.rep.ErrorSamples[class] = err.Error()
	}
	if !ok && len(r.rep.Unexpected) < 10 {
		r.rep.Unexpected = append(r.rep.Unexpected, err.Error())
	}
}

func (r *storeRun) record(op porcupine.Operation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, op)
}

// appendCommand is append(key k, id) with its own request id.
func (r *storeRun) appendCommand(k int, id string) head.Command {
	key := r.keys[k]
	return head.Command{
		Namespace: r.keyRoot,
		RequestID: "append/" + id,
		Digest:    head.Digest([]byte("append"), key, []byte(id)),
		Apply: func(tx *head.Tx) ([]byte, error) {
			v, _, err := tx.Get(storeFamily, key)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", errStoreApplyRead, err)
			}
			list := []byte(storeAppendID(string(v), id))
			if err := tx.Put(storeFamily, key, list); err != nil {
				return nil, err
			}
			return list, nil
		},
	}
}

func (r *storeRun) appendOp(client int, home *storeReplica, rng *rand.Rand, k int) {
	id := strconv.FormatUint(r.nextID.Add(1), 10)
	cmd := r.appendCommand(k, id)
	// A quarter of the appends carry no request id: the client cannot
	// retry them, and one Do must apply them at most once by the commit
	// protocol alone, dedupe aside.
	bare := rng.IntN(4) == 0
	if bare {
		cmd.RequestID, cmd.Digest = "", [32]byte{}
	}
	r.mu.Lock()
	r.issued[id] = k
	if bare {
		r.rep.Bare++
	}
	r.mu.Unlock()
	in := storeInput{Key: k, Append: true, ID: id}
	call := r.now()
	for attempt := 1; ; attempt++ {
		rep := home
		if attempt > 1 && rng.IntN(2) == 0 {
			rep = r.replicas[rng.IntN(len(r.replicas))]
		}
		res, err := r.do(rep, cmd)
		if err == nil {
			ret := r.now()
			r.record(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: storeOutput{List: string(res.Value)}, Return: ret})
			r.mu.Lock()
			r.acked[id] = k
			r.rep.Appends++
			if res.Replayed {
				r.rep.Replays++
			}
			r.mu.Unlock()
			return
		}
		r.noteErr("append", err)
		// A first attempt refused outright (the engine's attempt budget ran
		// out, or the command's own read failed) applied nothing: a client
		// that gives up on it knows the append failed, and the id must
		// never appear.
		if attempt == 1 && (errors.Is(err, head.ErrRetryable) || errors.Is(err, errStoreApplyRead)) && (bare || rng.IntN(2) == 0) {
			r.mu.Lock()
			delete(r.issued, id)
			r.failed[id] = k
			r.rep.Failed++
			r.mu.Unlock()
			return
		}
		if bare || attempt >= r.opts.ClientAttempts || rng.Float64() < r.sc.abandon || r.ctx.Err() != nil {
			r.record(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: storeOutput{Unknown: true}, Return: storeUnknownReturn})
			r.mu.Lock()
			r.rep.Unknown++
			r.mu.Unlock()
			return
		}
		r.mu.Lock()
		r.rep.Retries++
		r.mu.Unlock()
		time.Sleep(time.Millisecond + time.Duration(rng.IntN(3000))*time.Microsecond)
	}
}

// do runs cmd once on rep.
func (r *storeRun) do(rep *storeReplica, cmd head.Command) (head.Result, error) {
	st, gen, err := rep.current()
	if err != nil {
		return head.Result{}, err
	}
	ctx, cancel := context.WithTimeout(gen, r.opts.OpTimeout)
	defer cancel()
	return st.Do(ctx, cmd)
}

// readOp reads key k through a pinned snapshot or, with viaDo, through a
// read-only command, which shares group commits with appends.
func (r *storeRun) readOp(client int, rep *storeReplica, k int, viaDo bool) {
	call := r.now()
	read := r.read
	if viaDo {
		read = r.readCommand
	}
	v, err := read(rep, k)
	if err != nil {
		r.noteErr("read", err)
		r.mu.Lock()
		r.rep.FailedRead++
		r.mu.Unlock()
		return
	}
	r.record(porcupine.Operation{ClientId: client, Input: storeInput{Key: k}, Call: call, Output: storeOutput{List: v}, Return: r.now()})
	r.mu.Lock()
	r.rep.Reads++
	r.mu.Unlock()
}

func (r *storeRun) read(rep *storeReplica, k int) (string, error) {
	st, gen, err := rep.current()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(gen, r.opts.OpTimeout)
	defer cancel()
	sn, err := st.Pin(ctx)
	if err != nil {
		return "", err
	}
	v, _, err := sn.Get(ctx, storeFamily, r.keys[k])
	return string(v), err
}

func (r *storeRun) readCommand(rep *storeReplica, k int) (string, error) {
	res, err := r.do(rep, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		v, _, err := tx.Get(storeFamily, r.keys[k])
		return v, err
	}})
	return string(res.Value), err
}

// audit reads the final state through a fresh store over the shared bucket
// (no faults), records the final reads, checks the final root and walks
// the chain of roots.
func (r *storeRun) audit() error {
	ctx := r.ctx
	hopts := r.opts.Head
	hopts.Check = false
	auditor, err := head.Open(ctx, r.shared, r.id, storeSchema(), hopts)
	if err != nil {
		return fmt.Errorf("conformance: open the auditor: %w", err)
	}
	defer auditor.Close()
	call := r.now()
	sn, err := auditor.Pin(ctx)
	if err != nil {
		return fmt.Errorf("conformance: audit: pin: %w", err)
	}
	for k, key := range r.keys {
		v, _, err := sn.Get(ctx, storeFamily, key)
		if err != nil {
			return fmt.Errorf("conformance: audit: get key %d: %w", k, err)
		}
		r.final = append(r.final, storeSplitList(string(v)))
		r.history = append(r.history, porcupine.Operation{ClientId: r.rep.Clients, Input: storeInput{Key: k},
			Call: call, Output: storeOutput{List: string(v)}, Return: r.now()})
		r.rep.Reads++
	}
	r.rep.Commits = sn.Sequence() - r.initial
	r.rep.CASConflicts = r.conflicts.Load()
	if landed := r.landed.Load() - r.landed0; landed != int64(r.rep.Commits) {
		r.rep.Integrity = append(r.rep.Integrity, fmt.Sprintf("%d conditional head puts landed for %d commits", landed, r.rep.Commits))
	}
	if err := head.Check(ctx, r.shared, r.layout, sn.RootHash(), head.CheckOptions{Strict: true}); err != nil {
		r.rep.Integrity = append(r.rep.Integrity, fmt.Sprintf("final root %s fails head.Check: %v", sn.RootHash(), err))
	}
	// One root per sequence, each naming its predecessor, down to the
	// first.
	root, hash := sn.Root(), sn.RootHash()
	for root.Sequence > 1 {
		parent, err := auditor.At(ctx, root.Parent)
		if err != nil {
			r.rep.Integrity = append(r.rep.Integrity, fmt.Sprintf("root %s (sequence %d): parent %s: %v", hash, root.Sequence, root.Parent, err))
			break
		}
		if got, want := parent.Sequence(), root.Sequence-1; got != want {
			r.rep.Integrity = append(r.rep.Integrity, fmt.Sprintf("root %s has sequence %d, its parent %s has %d, want %d", hash, root.Sequence, root.Parent, got, want))
			break
		}
		root, hash = parent.Root(), parent.RootHash()
	}
	if root.Sequence == 1 && !root.Parent.IsZero() {
		r.rep.Integrity = append(r.rep.Integrity, fmt.Sprintf("first root %s names a parent %s", hash, root.Parent))
	}
	return nil
}

// check computes the report's verdicts from the history and final state.
func (r *storeRun) check() {
	rep := r.rep
	rep.Errors = r.errs
	rep.Operations = len(r.history)
	for k, list := range r.final {
		seen := map[string]bool{}
		for _, id := range list {
			if seen[id] {
				rep.Duplicates++
				rep.Details = append(rep.Details, fmt.Sprintf("id %s appears more than once in key %d", id, k))
			}
			seen[id] = true
			if ik, ok := r.issued[id]; !ok || ik != k {
				rep.Foreign++
				what := "which no client appended to it"
				if _, ok := r.failed[id]; ok {
					what = "whose append its client was told failed"
				}
				rep.Details = append(rep.Details, fmt.Sprintf("key %d holds id %s, %s", k, id, what))
			}
		}
	}
	var lost []string
	for id, k := range r.acked {
		if !slices.Contains(r.final[k], id) {
			lost = append(lost, fmt.Sprintf("%s (key %d)", id, k))
		}
	}
	sort.Strings(lost)
	rep.LostAcks = len(lost)
	if len(lost) > 0 {
		if len(lost) > 20 {
			lost = append(lost[:20], "...")
		}
		rep.Details = append(rep.Details, "acknowledged appends missing from the final state: "+strings.Join(lost, ", "))
	}
	byKey := make([][]porcupine.Operation, len(r.keys))
	for _, op := range r.history {
		in := op.Input.(storeInput)
		if op.Output.(storeOutput).Unknown {
			if !slices.Contains(r.final[in.Key], in.ID) {
				continue // never applied (see storeModel)
			}
			rep.UnknownApplied++
		}
		byKey[in.Key] = append(byKey[in.Key], op)
	}
	model := storeModel()
	for k, ops := range byKey {
		res, info := porcupine.CheckOperationsVerbose(model, ops, r.opts.CheckTimeout)
		switch res {
		case porcupine.Ok:
			continue
		case porcupine.Illegal:
			rep.Violations++
			rep.Details = append(rep.Details, fmt.Sprintf("key %d: history not linearizable (%d operations):", k, len(ops)))
		default:
			rep.Undecided++
			rep.Details = append(rep.Details, fmt.Sprintf("key %d: linearizability undecided after %v (%d operations):", k, r.opts.CheckTimeout, len(ops)))
		}
		rep.Details = append(rep.Details, storeDescribeHistory(ops, 60)...)
		if dir := os.Getenv(VizEnv); dir != "" && res == porcupine.Illegal {
			path := filepath.Join(dir, fmt.Sprintf("store-%s-%d-key%d.html", rep.Scenario, rep.Seed, k))
			if err := porcupine.VisualizePath(model, info, path); err != nil {
				rep.Details = append(rep.Details, "visualization: "+err.Error())
			} else {
				rep.Details = append(rep.Details, "visualization: "+path)
			}
		}
	}
}
