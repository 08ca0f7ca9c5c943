package head_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// pinInHeadWrite pins its Store from inside each head write, once the
// write has taken effect and before Put returns: a reader that reads the
// new head before its writer knows the head's version.
type pinInHeadWrite struct {
	bucket.Bucket
	s       atomic.Pointer[head.Store]
	intents atomic.Int32
}

func (p *pinInHeadWrite) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	a, err := p.Bucket.Put(ctx, key, body, cond)
	if strings.Contains(key, "/intents/") {
		p.intents.Add(1)
	}
	if s := p.s.Load(); err == nil && s != nil && strings.HasSuffix(key, "/head") {
		if _, perr := s.Pin(context.Background()); perr != nil {
			return a, perr
		}
	}
	return a, err
}

// TestOwnHeadSeenEarlyIsOwn: a Store that sees its own new head before
// its head write returns (a reader pinned it meanwhile) does not take it
// for another replica's: a lone writer publishes no intents.
func TestOwnHeadSeenEarlyIsOwn(t *testing.T) {
	ctx := context.Background()
	p := &pinInHeadWrite{Bucket: mem.NewBucket()}
	s, err := head.Open(ctx, p, shards.NewShardID(), head.SchemaForTest, head.Options{Intents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	handleAppend(s)
	if err := s.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	p.s.Store(s)
	for i := range 5 {
		if _, err := s.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(i, "x")}); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.intents.Load(); n != 0 {
		t.Fatalf("a lone writer published %d intents: it took its own head for another replica's", n)
	}
}
