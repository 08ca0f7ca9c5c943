// Package mem is an in-memory Bucket: the fake used across cairn's tests.
//
// A Store holds the objects; several Buckets (New, or Open with the same
// mem://NAME) can share one Store and act as replicas of one bucket. A
// Bucket may keep its keys under a prefix. Versions are decimal counters,
// unique across the Store and never reused, so a recreated object always
// gets a new version. Conditional delete is supported.
//
// The URL is mem://NAME[/PREFIX]; buckets opened with the same NAME in one
// process share a Store. There are no query parameters.
package mem

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

func init() {
	bucket.Register("mem", open)
}

var (
	namedMu sync.Mutex
	named   = map[string]*Store{}
)

func open(_ context.Context, u *url.URL) (bucket.Bucket, error) {
	if _, err := bucket.Query(u); err != nil {
		return nil, err
	}
	if u.Host == "" {
		return nil, fmt.Errorf("mem: want mem://NAME")
	}
	prefix, err := bucket.NormalizePrefix(u.Path)
	if err != nil {
		return nil, err
	}
	namedMu.Lock()
	s := named[u.Host]
	if s == nil {
		s = NewStore()
		named[u.Host] = s
	}
	namedMu.Unlock()
	return New(s, prefix)
}

// Store is the shared state behind one or more Buckets.
type Store struct {
	// Clock, if set, is the store's clock: the time it records for each
	// write (Attrs.ModTime). Tests set it to move the store's time apart
	// from the writers' clocks. Set it before first use. Default time.Now.
	Clock func() time.Time

	mu      sync.RWMutex
	objects map[string]object
	next    uint64 // last version handed out

	// keys is every key in order, built by List when a Put or Delete
	// has changed the set since (nil), so that paging through a large
	// store that is not changing sorts it once, not once a page.
	keysMu sync.Mutex
	keys   []string
}

type object struct {
	body    []byte
	version bucket.Version
	mod     time.Time
}

// NewStore returns an empty Store.
func NewStore() *Store { return &Store{objects: map[string]object{}} }

// Bucket is a view of a Store under a prefix.
type Bucket struct {
	s      *Store
	prefix string
}

var _ bucket.Bucket = (*Bucket)(nil)

// New returns a Bucket over s that keeps its keys under prefix ("" or a
// string ending in "/").
func New(s *Store, prefix string) (*Bucket, error) {
	if prefix != "" {
		if _, err := bucket.NormalizePrefix(prefix); err != nil || prefix[len(prefix)-1] != '/' {
			return nil, fmt.Errorf("mem: bad prefix %q", prefix)
		}
	}
	return &Bucket{s: s, prefix: prefix}, nil
}

// NewBucket returns a Bucket over a fresh Store.
func NewBucket() *Bucket { return &Bucket{s: NewStore()} }

// NewBucketAt returns a Bucket over a fresh Store whose clock is clock
// (Store.Clock).
func NewBucketAt(clock func() time.Time) *Bucket {
	s := NewStore()
	s.Clock = clock
	return &Bucket{s: s}
}

func (b *Bucket) key(ctx context.Context, key string) (string, error) {
	k, err := bucket.JoinKey(b.prefix, key)
	if err != nil {
		return "", err
	}
	return k, ctx.Err()
}

func (b *Bucket) attrs(key string, o object) bucket.Attrs {
	return bucket.Attrs{
		Key:     key[len(b.prefix):],
		Size:    int64(len(o.body)),
		Version: o.version,
		ModTime: o.mod,
	}
}

// Get implements bucket.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	k, err := b.key(ctx, key)
	if err != nil {
		return nil, bucket.Attrs{}, err
	}
	b.s.mu.RLock()
	o, ok := b.s.objects[k]
	b.s.mu.RUnlock()
	if !ok {
		return nil, bucket.Attrs{}, fmt.Errorf("mem: get %q: %w", key, bucket.ErrNotExist)
	}
	return append([]byte(nil), o.body...), b.attrs(k, o), nil
}

// Stat implements bucket.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	k, err := b.key(ctx, key)
	if err != nil {
		return bucket.Attrs{}, err
	}
	b.s.mu.RLock()
	o, ok := b.s.objects[k]
	b.s.mu.RUnlock()
	if !ok {
		return bucket.Attrs{}, fmt.Errorf("mem: stat %q: %w", key, bucket.ErrNotExist)
	}
	return b.attrs(k, o), nil
}

// check reports whether cond holds for the current object under k.
// The caller holds the write lock.
func (b *Bucket) check(op, key, k string, cond bucket.Condition) error {
	o, exists := b.s.objects[k]
	if cond.IsAbsent() && exists {
		return fmt.Errorf("mem: %s %q: %w: object exists", op, key, bucket.ErrPrecondition)
	}
	if v, ok := cond.Version(); ok && (!exists || o.version != v) {
		return fmt.Errorf("mem: %s %q: %w: version is not %s", op, key, bucket.ErrPrecondition, v)
	}
	return nil
}

// Put implements bucket.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	k, err := b.key(ctx, key)
	if err != nil {
		return bucket.Attrs{}, err
	}
	now := time.Now
	if b.s.Clock != nil {
		now = b.s.Clock
	}
	o := object{body: append([]byte(nil), body...), mod: now()}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if err := b.check("put", key, k, cond); err != nil {
		return bucket.Attrs{}, err
	}
	b.s.next++
	o.version = bucket.Version(strconv.FormatUint(b.s.next, 10))
	if _, exists := b.s.objects[k]; !exists {
		b.s.dropKeys()
	}
	b.s.objects[k] = o
	return b.attrs(k, o), nil
}

// Delete implements bucket.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	k, err := b.key(ctx, key)
	if err != nil {
		return err
	}
	if cond.IsAbsent() {
		return fmt.Errorf("mem: delete %q if-absent: %w", key, bucket.ErrUnsupported)
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if err := b.check("delete", key, k, cond); err != nil {
		return err
	}
	if _, exists := b.s.objects[k]; exists {
		b.s.dropKeys()
	}
	delete(b.s.objects, k)
	return nil
}

// dropKeys forgets the ordered keys; the caller holds s.mu for writing.
func (s *Store) dropKeys() {
	s.keysMu.Lock()
	s.keys = nil
	s.keysMu.Unlock()
}

// sortedKeys returns every key in order; the caller holds s.mu for
// reading, so the set cannot change meanwhile.
func (s *Store) sortedKeys() []string {
	s.keysMu.Lock()
	defer s.keysMu.Unlock()
	if s.keys == nil {
		s.keys = make([]string, 0, len(s.objects))
		for k := range s.objects {
			s.keys = append(s.keys, k)
		}
		sort.Strings(s.keys)
	}
	return s.keys
}

// List implements bucket.Bucket.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return bucket.ListPage{}, err
	}
	full := b.prefix + opts.Prefix
	// Keys at or before the page's start are never listed: begin there.
	from := full
	if after := b.prefix + opts.StartAfter; opts.StartAfter != "" && after > from {
		from = after
	}
	if tok := opts.PageToken; len(tok) > 1 && (tok[0] == 'k' || tok[0] == 'p') && b.prefix+tok[1:] > from {
		from = b.prefix + tok[1:]
	}
	b.s.mu.RLock()
	keys := b.s.sortedKeys()
	// Without a delimiter a page needs at most its size, one more to
	// tell that more follow, and the key it starts after (listed again
	// and skipped); with one, folded prefixes may skip any number.
	limit := len(keys)
	if opts.Delimiter == "" {
		limit = bucket.PageSize(opts.PageSize) + 2
	}
	var all []bucket.Attrs
	for i := sort.SearchStrings(keys, from); i < len(keys) && len(all) < limit && strings.HasPrefix(keys[i], full); i++ {
		all = append(all, b.attrs(keys[i], b.s.objects[keys[i]]))
	}
	b.s.mu.RUnlock()
	return bucket.ListSorted(all, opts)
}

// Capabilities implements bucket.Bucket.
func (b *Bucket) Capabilities() bucket.Capabilities {
	return bucket.Capabilities{ConditionalDelete: true}
}

// Close implements bucket.Bucket; it is a no-op.
func (b *Bucket) Close() error { return nil }
