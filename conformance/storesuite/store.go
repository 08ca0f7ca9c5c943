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
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/bucket"
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
	r.fenceInflight.Lock() // the writes already past the fence have finished
	r.fenceInflight.Unlock()
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
