// Package fault wraps a bucket.Bucket and injects faults into the calls
// that go through it, deterministically, so that cairn's tests can meet a
// store's failures (an outage, a throttle, a lost response, a retried
// conditional write that answers "precondition failed", a corrupt read)
// and pause a call at a chosen point to force an interleaving.
//
// # Rules
//
// Inject arms a Rule. A rule matches a call by operation (Rule.Op, a set;
// zero matches every operation), by key (Rule.Key exact, Rule.Prefix a
// prefix; for List both are compared with ListOptions.Prefix) and
// optionally only when the call is a conditional Put or Delete
// (Rule.Conditional). When a call arrives, the armed rules are tried in
// the order they were injected and the first that matches and fires
// applies its Fault; at most one fault applies per call. A rule with
// Probability p in (0, 1) fires on a match with probability p, drawn from
// the wrapper's generator (seeded by Seed, 1 by default), so a given
// sequence of calls meets the same faults on every run; a rule that does
// not fire lets later rules try. Probability 0 or 1 fires on every match.
// A rule with Count n > 0 disarms itself after firing n times; Count 0
// never disarms. Disarm disarms one rule and Clear every rule; a Handle
// reports how often its rule fired, and Fired the total.
//
// Calls whose key breaks the key rules, and calls whose context has
// already ended, go straight to the inner bucket and never fire a rule:
// a store sees neither.
//
// # Faults
//
//   - FailBefore(err): the call fails with an error wrapping err and never
//     reaches the inner bucket. Nothing is written.
//   - LoseResponse: the call reaches the inner bucket (a write lands, or
//     fails as it would), then fails with an error wrapping
//     bucket.ErrAmbiguous, as when the response to a sent write is lost.
//     Puts and Deletes only.
//   - PreconditionAfterApply: the call reaches the inner bucket (the write
//     lands), then fails with an error wrapping bucket.ErrPrecondition, as
//     a retried conditional write does on GCS when the first attempt
//     landed and its response was lost. Puts and Deletes only.
//   - CorruptRead: a Get returns a copy of the body with one byte's bits
//     flipped (an empty body becomes one byte); the stored object and the
//     attributes are left as they are. A failed Get is left as it is. Gets
//     only.
//   - Hook(fn): fn runs before the call reaches the inner bucket and may
//     block (a test pausing a call until it signals); if fn returns an
//     error, the call fails with it without reaching the inner bucket.
//   - HookAfter(fn): fn runs after the inner bucket answered, before the
//     caller sees the answer; if fn returns an error, the call fails with
//     it and the inner call's effect stands.
//
// A failed call returns zero values beside its error. Capabilities and
// Close are forwarded. All methods are safe for concurrent use; hooks run
// without the wrapper's lock held.
package fault

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cairnstore/cairn/bucket"
)

// Op is a set of operations.
type Op uint8

// The operations. Combine them with |.
const (
	OpGet Op = 1 << iota
	OpStat
	OpPut
	OpDelete
	OpList

	opAll = OpGet | OpStat | OpPut | OpDelete | OpList
)

var opNames = []string{"get", "stat", "put", "delete", "list"}

// String names the operations in o, joined by "|"; "any" for zero.
func (o Op) String() string {
	if o == 0 {
		return "any"
	}
	var names []string
	for i, n := range opNames {
		if o&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if o&^opAll != 0 {
		names = append(names, fmt.Sprintf("op(%#x)", uint8(o&^opAll)))
	}
	return strings.Join(names, "|")
}

// HookFunc is run by a Hook or HookAfter fault with the call's context,
// operation and key (for List, ListOptions.Prefix).
type HookFunc func(ctx context.Context, op Op, key string) error

type kind uint8

const (
	kindNone kind = iota
	kindFailBefore
	kindLoseResponse
	kindPreconditionAfterApply
	kindCorruptRead
	kindHook
	kindHookAfter
)

// Fault is what a Rule does to the calls it fires on. Make one with the
// functions below.
type Fault struct {
	kind kind
	err  error
	hook HookFunc
}

// FailBefore fails the call with err without reaching the inner bucket.
func FailBefore(err error) Fault { return Fault{kind: kindFailBefore, err: err} }

// LoseResponse forwards the call, then fails it with bucket.ErrAmbiguous.
func LoseResponse() Fault { return Fault{kind: kindLoseResponse} }

// PreconditionAfterApply forwards the call, then fails it with
// bucket.ErrPrecondition.
func PreconditionAfterApply() Fault { return Fault{kind: kindPreconditionAfterApply} }

// CorruptRead flips one byte of the body a Get returns.
func CorruptRead() Fault { return Fault{kind: kindCorruptRead} }

// Hook runs fn before the call reaches the inner bucket.
func Hook(fn HookFunc) Fault { return Fault{kind: kindHook, hook: fn} }

// HookAfter runs fn after the inner bucket answered.
func HookAfter(fn HookFunc) Fault { return Fault{kind: kindHookAfter, hook: fn} }

// String describes f.
func (f Fault) String() string {
	switch f.kind {
	case kindFailBefore:
		return fmt.Sprintf("fail-before(%v)", f.err)
	case kindLoseResponse:
		return "lose-response"
	case kindPreconditionAfterApply:
		return "precondition-after-apply"
	case kindCorruptRead:
		return "corrupt-read"
	case kindHook:
		return "hook"
	case kindHookAfter:
		return "hook-after"
	}
	return "none"
}

// Rule says which calls get a Fault. See the package documentation.
type Rule struct {
	Op          Op     // operations matched; zero matches all
	Key         string // if set, only this key
	Prefix      string // if set, only keys with this prefix
	Conditional bool   // only Puts and Deletes with a condition
	Count       int    // fire this many times, then disarm; 0: never disarm
	Probability float64
	Fault       Fault
}

// check reports why r cannot be armed.
func (r Rule) check() error {
	writes := OpPut | OpDelete
	switch {
	case r.Op&^opAll != 0:
		return fmt.Errorf("unknown operation %v", r.Op)
	case r.Count < 0:
		return fmt.Errorf("count %d is negative", r.Count)
	case !(r.Probability >= 0 && r.Probability <= 1):
		return fmt.Errorf("probability %v outside [0, 1]", r.Probability)
	case r.Conditional && (r.Op == 0 || r.Op&^writes != 0):
		return fmt.Errorf("conditional rule for %v, want puts or deletes", r.Op)
	}
	switch r.Fault.kind {
	case kindNone:
		return fmt.Errorf("no fault")
	case kindFailBefore:
		if r.Fault.err == nil {
			return fmt.Errorf("FailBefore with a nil error")
		}
	case kindLoseResponse, kindPreconditionAfterApply:
		if r.Op == 0 || r.Op&^writes != 0 {
			return fmt.Errorf("%v for %v, want puts or deletes", r.Fault, r.Op)
		}
	case kindCorruptRead:
		if r.Op != OpGet {
			return fmt.Errorf("%v for %v, want get", r.Fault, r.Op)
		}
	case kindHook, kindHookAfter:
		if r.Fault.hook == nil {
			return fmt.Errorf("%v with a nil function", r.Fault)
		}
	}
	return nil
}

// matches reports whether r applies to a call.
func (r Rule) matches(op Op, key string, cond bucket.Condition) bool {
	return (r.Op == 0 || r.Op&op != 0) &&
		(r.Key == "" || r.Key == key) &&
		strings.HasPrefix(key, r.Prefix) &&
		(!r.Conditional || !cond.IsUnconditional())
}

// Handle is an armed rule.
type Handle struct {
	rule     Rule
	fired    atomic.Int64
	disarmed atomic.Bool
}

// Fired returns how many times the rule fired.
func (h *Handle) Fired() int64 { return h.fired.Load() }

// Armed reports whether the rule can still fire.
func (h *Handle) Armed() bool { return !h.disarmed.Load() }

// Bucket injects faults into the calls made to an inner bucket.
type Bucket struct {
	inner bucket.Bucket

	mu    sync.Mutex
	rules []*Handle
	rand  *rand.Rand

	fired atomic.Int64
}

var _ bucket.Bucket = (*Bucket)(nil)

// New returns a Bucket with no rule armed, forwarding every call to inner.
func New(inner bucket.Bucket) *Bucket {
	b := &Bucket{inner: inner}
	b.Seed(1)
	return b
}

// Seed resets the generator that decides probabilistic rules.
func (b *Bucket) Seed(seed uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rand = rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
}

// Inject arms r after the rules already armed and returns its handle. It
// panics if r is malformed (a fault for an operation it cannot apply to, a
// nil error or function, a probability outside [0, 1]): that is a mistake
// in the test.
func (b *Bucket) Inject(r Rule) *Handle {
	if err := r.check(); err != nil {
		panic("fault: inject: " + err.Error())
	}
	h := &Handle{rule: r}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rules = append(b.rules, h)
	return h
}

// Disarm disarms h; it does nothing if h is already disarmed.
func (b *Bucket) Disarm(h *Handle) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.remove(h)
}

// remove disarms h. The caller holds b.mu.
func (b *Bucket) remove(h *Handle) {
	b.rules = slices.DeleteFunc(b.rules, func(x *Handle) bool { return x == h })
	h.disarmed.Store(true)
}

// Clear disarms every rule.
func (b *Bucket) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range b.rules {
		h.disarmed.Store(true)
	}
	b.rules = nil
}

// Fired returns how many faults fired, over every rule since New.
func (b *Bucket) Fired() int64 { return b.fired.Load() }

// pick returns the fault a call gets, if any.
func (b *Bucket) pick(ctx context.Context, op Op, key string, cond bucket.Condition) (Fault, bool) {
	if ctx.Err() != nil || (op != OpList && bucket.ValidateKey(key) != nil) {
		return Fault{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range b.rules {
		r := h.rule
		if !r.matches(op, key, cond) {
			continue
		}
		if r.Probability > 0 && r.Probability < 1 && b.rand.Float64() >= r.Probability {
			continue
		}
		b.fired.Add(1)
		if n := h.fired.Add(1); r.Count > 0 && n >= int64(r.Count) {
			b.remove(h)
		}
		return r.Fault, true
	}
	return Fault{}, false
}

// before applies the part of f that precedes the inner call.
func (f Fault) before(ctx context.Context, op Op, key string) error {
	switch f.kind {
	case kindFailBefore:
		return fmt.Errorf("fault: %v %q: injected failure: %w", op, key, f.err)
	case kindHook:
		if err := f.hook(ctx, op, key); err != nil {
			return fmt.Errorf("fault: %v %q: hook: %w", op, key, err)
		}
	}
	return nil
}

// after applies the part of f that follows the inner call.
func (f Fault) after(ctx context.Context, op Op, key string) error {
	switch f.kind {
	case kindLoseResponse:
		return fmt.Errorf("fault: %v %q: injected lost response: %w", op, key, bucket.ErrAmbiguous)
	case kindPreconditionAfterApply:
		return fmt.Errorf("fault: %v %q: injected after the write applied: %w", op, key, bucket.ErrPrecondition)
	case kindHookAfter:
		if err := f.hook(ctx, op, key); err != nil {
			return fmt.Errorf("fault: %v %q: hook after: %w", op, key, err)
		}
	}
	return nil
}

// corrupt returns a copy of body that differs from it.
func corrupt(body []byte) []byte {
	if len(body) == 0 {
		return []byte{0xff}
	}
	c := slices.Clone(body)
	c[len(c)/2] ^= 0xff
	return c
}

// Get implements bucket.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	f, ok := b.pick(ctx, OpGet, key, bucket.Unconditional)
	if !ok {
		return b.inner.Get(ctx, key)
	}
	if err := f.before(ctx, OpGet, key); err != nil {
		return nil, bucket.Attrs{}, err
	}
	body, a, err := b.inner.Get(ctx, key)
	if err := f.after(ctx, OpGet, key); err != nil {
		return nil, bucket.Attrs{}, err
	}
	if err == nil && f.kind == kindCorruptRead {
		body = corrupt(body)
	}
	return body, a, err
}

// Stat implements bucket.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	f, ok := b.pick(ctx, OpStat, key, bucket.Unconditional)
	if !ok {
		return b.inner.Stat(ctx, key)
	}
	if err := f.before(ctx, OpStat, key); err != nil {
		return bucket.Attrs{}, err
	}
	a, err := b.inner.Stat(ctx, key)
	if err := f.after(ctx, OpStat, key); err != nil {
		return bucket.Attrs{}, err
	}
	return a, err
}

// Put implements bucket.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	f, ok := b.pick(ctx, OpPut, key, cond)
	if !ok {
		return b.inner.Put(ctx, key, body, cond)
	}
	if err := f.before(ctx, OpPut, key); err != nil {
		return bucket.Attrs{}, err
	}
	a, err := b.inner.Put(ctx, key, body, cond)
	if err := f.after(ctx, OpPut, key); err != nil {
		return bucket.Attrs{}, err
	}
	return a, err
}

// Delete implements bucket.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	f, ok := b.pick(ctx, OpDelete, key, cond)
	if !ok {
		return b.inner.Delete(ctx, key, cond)
	}
	if err := f.before(ctx, OpDelete, key); err != nil {
		return err
	}
	err := b.inner.Delete(ctx, key, cond)
	if err := f.after(ctx, OpDelete, key); err != nil {
		return err
	}
	return err
}

// List implements bucket.Bucket.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	f, ok := b.pick(ctx, OpList, opts.Prefix, bucket.Unconditional)
	if !ok {
		return b.inner.List(ctx, opts)
	}
	if err := f.before(ctx, OpList, opts.Prefix); err != nil {
		return bucket.ListPage{}, err
	}
	p, err := b.inner.List(ctx, opts)
	if err := f.after(ctx, OpList, opts.Prefix); err != nil {
		return bucket.ListPage{}, err
	}
	return p, err
}

// Capabilities returns the inner bucket's capabilities.
func (b *Bucket) Capabilities() bucket.Capabilities { return b.inner.Capabilities() }

// Close closes the inner bucket.
func (b *Bucket) Close() error { return b.inner.Close() }
