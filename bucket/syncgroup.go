package bucket

import (
	"context"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// A SyncGroup lets a bucket make many puts durable at once instead of
// one at a time. A Put whose context carries a group (WithSyncGroup) may
// return before its object is durable, having recorded in the group what
// makes it so; the object is durable once the group's Sync returns nil.
// Every other Put is durable when it returns, and a bucket whose puts are
// always durable when they return ignores the group.
//
// The object is readable as soon as Put returns either way. Use a group
// only for objects nothing refers to until Sync has returned: the objects
// a commit stages before the head write that makes them reachable. After
// a crash of the machine, an object of a group that was never synced may
// be missing or torn.
//
// A bucket whose Capabilities say SyncsGroupFirst also takes a group the
// other way round (WithSyncFirst): a Put under it syncs the group, and
// its own bytes with it, before its own object becomes visible. The head
// write that makes a commit's staged objects reachable is such a put: on
// a local disk the staged objects and the new head then take one sync of
// the file system, and the head one more of its directory.
//
// A SyncGroup is safe for concurrent use.
type SyncGroup struct {
	mu     sync.Mutex
	keys   []string
	syncs  map[string]func(context.Context) error
	failed atomic.Bool
}

// NewSyncGroup returns an empty group.
func NewSyncGroup() *SyncGroup {
	return &SyncGroup{syncs: map[string]func(context.Context) error{}}
}

type syncGroupKey struct{}

// WithSyncGroup returns ctx carrying g: puts made under it may defer
// their durability to g.
func WithSyncGroup(ctx context.Context, g *SyncGroup) context.Context {
	return context.WithValue(ctx, syncGroupKey{}, g)
}

type syncFirstKey struct{}

// WithSyncFirst returns ctx carrying g for a put that must not become
// visible before g's puts are durable: a bucket whose Capabilities say
// SyncsGroupFirst syncs g before it makes the put's object visible, and
// fails the put, placing nothing, if that sync fails. Other buckets
// ignore it: sync g yourself first.
func WithSyncFirst(ctx context.Context, g *SyncGroup) context.Context {
	return context.WithValue(ctx, syncFirstKey{}, g)
}

// SyncFirstOf returns the group WithSyncFirst put in ctx, or nil.
func SyncFirstOf(ctx context.Context) *SyncGroup {
	g, _ := ctx.Value(syncFirstKey{}).(*SyncGroup)
	return g
}

// SyncGroupOf returns the group ctx carries, or nil.
func SyncGroupOf(ctx context.Context) *SyncGroup {
	g, _ := ctx.Value(syncGroupKey{}).(*SyncGroup)
	return g
}

// Defer records sync, the work that makes a put durable, under key. Work
// already recorded under the same key and not yet run stands for both:
// a bucket names by one key what one call makes durable (a directory, a
// whole file system).
func (g *SyncGroup) Defer(key string, sync func(context.Context) error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.syncs[key]; !ok {
		g.keys = append(g.keys, key)
		g.syncs[key] = sync
	}
}

// Pending reports how many deferred syncs wait for Sync.
func (g *SyncGroup) Pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.keys)
}

// Sync runs the work deferred so far, all at once, and forgets it. When
// it returns nil, every put made under the group before it was called is
// durable. On an error nothing is known of those puts' durability: write
// them again before relying on them (a failed fsync may have dropped
// what it was to write).
func (g *SyncGroup) Sync(ctx context.Context) error {
	g.mu.Lock()
	keys, syncs := g.keys, g.syncs
	g.keys, g.syncs = nil, map[string]func(context.Context) error{}
	g.mu.Unlock()
	eg, ctx := errgroup.WithContext(ctx)
	for _, k := range keys {
		eg.Go(func() error { return syncs[k](ctx) })
	}
	err := eg.Wait()
	if err != nil {
		g.failed.Store(true)
	}
	return err
}

// Failed reports whether a Sync of g has failed: its puts until then
// may never be durable, and must be written again under new names.
func (g *SyncGroup) Failed() bool { return g.failed.Load() }
