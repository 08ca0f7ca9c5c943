package head

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/shards"
)

// yieldProbe slows the writes of a fold's objects and the head's, once
// armed, and counts the fold writes sent while a head write is in flight.
type yieldProbe struct {
	bucket.Bucket
	armed bool // set before the Store is used concurrently

	mu         sync.Mutex
	heads      int // head writes in flight
	folding    int // fold writes in flight
	headWrites int // head writes sent with a fold write in flight
	foldWrites int
	during     int // fold writes sent while a head write was in flight
}

func foldWrite(key string) bool {
	return strings.Contains(key, "/objects/") || strings.Contains(key, "/tables/") || strings.Contains(key, "/indexes/")
}

func (p *yieldProbe) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if !p.armed {
		return p.Bucket.Put(ctx, key, body, cond)
	}
	switch {
	case strings.HasSuffix(key, "/head"):
		p.mu.Lock()
		p.heads++
		if p.folding > 0 {
			p.headWrites++
		}
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.heads--
			p.mu.Unlock()
		}()
		time.Sleep(10 * time.Millisecond)
	case foldWrite(key):
		p.mu.Lock()
		p.folding++
		p.foldWrites++
		if p.heads > 0 {
			p.during++
		}
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.folding--
			p.mu.Unlock()
		}()
		time.Sleep(100 * time.Millisecond)
	}
	return p.Bucket.Put(ctx, key, body, cond)
}

// TestPreparedFoldYieldsToTheHeadWrite checks that a fold prepared
// beside paced commits sends none of its writes while a commit's head
// write is in flight: they would queue at the store ahead of it. Its
// writes already in flight may overlap the head write (the test checks
// that some did, or it proves nothing).
func TestPreparedFoldYieldsToTheHeadWrite(t *testing.T) {
	probe := &yieldProbe{Bucket: mem.NewBucket()}
	id := shards.NewShardID()
	s, err := Open(context.Background(), probe, id, testSchema, Options{MaxDeltaBytes: 32 << 10, MinCommitInterval: 100 * time.Millisecond, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A base of keys spread over every shard of the family, and commits
	// of 100 keys each, so that a fold rewrites many shard objects.
	const keys = 5000
	ruleDo(t, s, func(tx *Tx) error {
		for i := range keys {
			if err := tx.Put(ruleFam, ruleKey(i), preparedValue(i, 0)); err != nil {
				return err
			}
		}
		return nil
	})
	if err := s.Fold(context.Background()); err != nil {
		t.Fatal(err)
	}
	probe.armed = true
	want := map[int][]byte{}
	r := 0
	for s.CommitStats().Installed < 2 {
		r++
		if r > 60 {
			t.Fatalf("%d prepared folds installed after 60 commits", s.CommitStats().Installed)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := s.Do(ctx, Command{Apply: func(tx *Tx) ([]byte, error) {
			for j := range 100 {
				i := (r*7919 + j*53) % keys
				want[i] = preparedValue(i, r)
				if err := tx.Put(ruleFam, ruleKey(i), want[i]); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}})
		cancel()
		if err != nil {
			t.Fatalf("commit %d: %v", r, err)
		}
	}
	preparedRead(t, s, want)
	probe.mu.Lock()
	defer probe.mu.Unlock()
	t.Logf("%d commits, %d fold writes, %d head writes sent beside fold writes in flight, %d fold writes sent during a head write",
		r, probe.foldWrites, probe.headWrites, probe.during)
	if probe.headWrites == 0 {
		t.Fatal("no head write was sent while a fold write was in flight: the test proves nothing")
	}
	if probe.during > 0 {
		t.Fatalf("%d fold writes were sent while a head write was in flight", probe.during)
	}
}
