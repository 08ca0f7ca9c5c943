package storesuite

// The store suite's scenarios: the faults each one arms on a replica's
// injector.

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
)

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
