package head_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

var fam = shardstest.Fixed32

// key returns a key of the Fixed32 test family: a zero id and i.
func key(i int) []byte {
	k := make([]byte, 32)
	binary.BigEndian.PutUint64(k[24:], uint64(i))
	return k
}

func open(t testing.TB, b bucket.Bucket, id shards.ShardID, opts head.Options) *head.Store {
	t.Helper()
	opts.Check = true
	s, err := head.Open(context.Background(), b, id, head.SchemaForTest, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Initialize(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(i int, v string) head.Command {
	return head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Put(fam, key(i), []byte(v))
	}}
}

func get(t testing.TB, s *head.Store, i int) (string, bool) {
	t.Helper()
	sn, err := s.Pin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := sn.Get(context.Background(), fam, key(i))
	if err != nil {
		t.Fatal(err)
	}
	return string(v), ok
}

// twoReplicas opens two Stores of one new shard over one memory store,
// with options oa and ob.
func twoReplicas(t *testing.T, oa, ob head.Options) (*head.Store, *head.Store) {
	t.Helper()
	store := mem.NewStore()
	b1, _ := mem.New(store, "")
	b2, _ := mem.New(store, "")
	id := shards.NewShardID()
	return open(t, b1, id, oa), open(t, b2, id, ob)
}

func TestOpenPutGetAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	a, b := twoReplicas(t, head.Options{}, head.Options{})
	r, err := a.Do(ctx, put(1, "one"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Sequence != 2 {
		t.Fatalf("first commit sequence %d, want 2", r.Sequence)
	}
	if v, ok := get(t, b, 1); !ok || v != "one" {
		t.Fatalf("replica reads %q, %v", v, ok)
	}
	if _, err := b.Do(ctx, put(1, "two")); err != nil {
		t.Fatal(err)
	}
	if v, _ := get(t, a, 1); v != "two" {
		t.Fatalf("first replica reads %q after the second's commit", v)
	}
	if _, err := b.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) { return nil, tx.Delete(fam, key(1)) }}); err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, a, 1); ok {
		t.Fatal("deleted key still visible")
	}
}

func TestSchemaGateFailsClosed(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	id := shards.NewShardID()
	open(t, b, id, head.Options{})
	layout := shards.NewLayout(head.SchemaForTest.Families, id)
	body, _, err := b.Get(ctx, layout.Head())
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func([]byte) []byte{
		"format_version": func(b []byte) []byte { return replace(b, `"format_version":8`, `"format_version":9`) },
		"schema_id":      func(b []byte) []byte { return replace(b, `"test_workspace"`, `"test_other"`) },
		"garbage":        func([]byte) []byte { return []byte("{") },
		"unknown field":  func(b []byte) []byte { return replace(b, `{"committed`, `{"aaa":1,"committed`) },
	} {
		t.Run(name, func(t *testing.T) {
			bad := mem.NewBucket()
			if _, err := bad.Put(ctx, layout.Head(), edit(body), bucket.Unconditional); err != nil {
				t.Fatal(err)
			}
			s, err := head.Open(ctx, bad, id, head.SchemaForTest, head.Options{})
			if err != nil {
				t.Fatal(err) // Open does no I/O; the first Pin meets the gate
			}
			if _, err := s.Pin(ctx); err == nil {
				t.Fatal("pinned a shard with a bad head")
			}
		})
	}
	other, err := head.Open(ctx, b, shards.NewShardID(), head.SchemaForTest, head.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Initialize(ctx); err != nil {
		t.Fatalf("another shard in the same bucket: %v", err)
	}
}

func replace(b []byte, old, new string) []byte {
	s := string(b)
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return []byte(s[:i] + new + s[i+len(old):])
		}
	}
	panic("no " + old + " in " + s)
}

func TestRequestDedupe(t *testing.T) {
	ctx := context.Background()
	s := open(t, mem.NewBucket(), shards.NewShardID(), head.Options{})
	runs := 0
	cmd := head.Command{RequestID: "req-1", Digest: head.Digest([]byte("put 1")), Apply: func(tx *head.Tx) ([]byte, error) {
		runs++
		return []byte("result"), tx.Put(fam, key(1), []byte("v"))
	}}
	r1, err := s.Do(ctx, cmd)
	if err != nil || string(r1.Value) != "result" || r1.Replayed {
		t.Fatalf("first = %+v, %v", r1, err)
	}
	r2, err := s.Do(ctx, cmd)
	if err != nil || string(r2.Value) != "result" || !r2.Replayed || r2.Sequence != r1.Sequence {
		t.Fatalf("retry = %+v, %v", r2, err)
	}
	if runs != 1 {
		t.Fatalf("command ran %d times", runs)
	}
	other := cmd
	other.Digest = head.Digest([]byte("put 2"))
	if _, err := s.Do(ctx, other); !errors.Is(err, head.ErrRequestReused) {
		t.Fatalf("reused id: %v", err)
	}
}

func TestPredicateFailureAppliesNothing(t *testing.T) {
	ctx := context.Background()
	s := open(t, mem.NewBucket(), shards.NewShardID(), head.Options{})
	before, _ := s.Pin(ctx)
	boom := errors.New("predicate failed")
	_, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		tx.Put(fam, key(1), []byte("x"))
		return nil, boom
	}})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	after, _ := s.Pin(ctx)
	if after.Sequence() != before.Sequence() {
		t.Fatalf("a failed command committed: %d -> %d", before.Sequence(), after.Sequence())
	}
}

func TestGroupCommitSharesCAS(t *testing.T) {
	ctx := context.Background()
	cb := counting.New(mem.NewBucket())
	s := open(t, cb, shards.NewShardID(), head.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Do(ctx, put(i, fmt.Sprint(i)))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	sn, _ := s.Pin(ctx)
	if sn.Sequence() >= 51 {
		t.Fatalf("50 concurrent commands took %d commits", sn.Sequence()-1)
	}
	for i := range 50 {
		if v, ok := get(t, s, i); !ok || v != fmt.Sprint(i) {
			t.Fatalf("key %d = %q, %v", i, v, ok)
		}
	}
	t.Logf("50 concurrent commands landed in %d commits", sn.Sequence()-1)
}

// TestAbsorbedCommandLandsInTheSameHeadWrite: a command that arrives
// while a paced batch waits for the head's turn is applied into it and
// lands with it, not in the next head write.
func TestAbsorbedCommandLandsInTheSameHeadWrite(t *testing.T) {
	ctx := context.Background()
	s := open(t, mem.NewBucket(), shards.NewShardID(), head.Options{MinCommitInterval: time.Second})
	learnSlowBatches(t, s, "slow")
	var late <-chan answer
	var once sync.Once
	first := head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		once.Do(func() {
			late = doAsync(s, put(2, "late"))
			time.Sleep(50 * time.Millisecond) // it queues behind this batch
		})
		return nil, tx.Put(fam, key(1), []byte("first"))
	}}
	r, err := s.Do(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	a := <-late
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.r.Sequence != r.Sequence {
		t.Fatalf("the command that arrived during the batch landed at %d, the batch at %d", a.r.Sequence, r.Sequence)
	}
	for i, want := range []string{"slow", "first", "late"} {
		if v, ok := get(t, s, i); !ok || v != want {
			t.Fatalf("key %d = %q, %v; want %q", i, v, ok, want)
		}
	}
}

// learnSlowBatches commits, through s, a batch that takes 300 ms to
// apply and puts v under key 0: s's leader then takes its next batch well
// ahead of the head's turn.
func learnSlowBatches(t *testing.T, s *head.Store, v string) {
	t.Helper()
	if _, err := s.Do(context.Background(), head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		time.Sleep(300 * time.Millisecond)
		return nil, tx.Put(fam, key(0), []byte(v))
	}}); err != nil {
		t.Fatal(err)
	}
}

// answer is what a Do returned.
type answer struct {
	r   head.Result
	err error
}

// doAsync runs cmd through s on a goroutine of its own.
func doAsync(s *head.Store, cmd head.Command) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		r, err := s.Do(context.Background(), cmd)
		ch <- answer{r, err}
	}()
	return ch
}

// TestAbsorbedReadSeesWritesBeforeIt: a command absorbed into a batch
// that has nothing to write is not answered from the batch's pin, which
// predates it: another replica's write that landed before it arrived is
// what it reads.
func TestAbsorbedReadSeesWritesBeforeIt(t *testing.T) {
	ctx := context.Background()
	s, other := twoReplicas(t, head.Options{MinCommitInterval: time.Second}, head.Options{})
	learnSlowBatches(t, s, "old")
	read := func(tx *head.Tx) ([]byte, error) {
		v, _, err := tx.Get(fam, key(0))
		return v, err
	}
	var late <-chan answer
	var once sync.Once
	first := head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		once.Do(func() {
			// Another replica writes after this batch's pin; then a
			// read arrives, and is absorbed into the batch.
			if _, err := other.Do(ctx, put(0, "new")); err != nil {
				t.Error(err)
			}
			late = doAsync(s, head.Command{Apply: read})
			time.Sleep(50 * time.Millisecond)
		})
		return read(tx)
	}}
	if _, err := s.Do(ctx, first); err != nil {
		t.Fatal(err)
	}
	a := <-late
	if a.err != nil {
		t.Fatal(a.err)
	}
	if string(a.r.Value) != "new" {
		t.Fatalf("a read that arrived after another replica's write read %q", a.r.Value)
	}
}

func TestGroupCommitIsolatesFailures(t *testing.T) {
	ctx := context.Background()
	s := open(t, mem.NewBucket(), shards.NewShardID(), head.Options{})
	var wg sync.WaitGroup
	results := make([]error, 20)
	boom := errors.New("no")
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
				if err := tx.Put(fam, key(i), []byte("v")); err != nil {
					return nil, err
				}
				if i%3 == 0 {
					return nil, boom
				}
				return nil, nil
			}})
		}()
	}
	wg.Wait()
	for i, err := range results {
		_, ok := get(t, s, i)
		if i%3 == 0 {
			if !errors.Is(err, boom) || ok {
				t.Fatalf("command %d: err %v, visible %v", i, err, ok)
			}
		} else if err != nil || !ok {
			t.Fatalf("command %d: err %v, visible %v", i, err, ok)
		}
	}
}

func TestConflictingReplicasSerialize(t *testing.T) {
	ctx := context.Background()
	store := mem.NewStore()
	const replicas, each = 3, 10
	stores := make([]*head.Store, replicas)
	id := shards.NewShardID()
	for i := range stores {
		b, _ := mem.New(store, "")
		stores[i] = open(t, b, id, head.Options{NoGroupCommit: true})
	}
	counter := key(0)
	incr := head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		v, _, err := tx.Get(fam, counter)
		if err != nil {
			return nil, err
		}
		n := 0
		if v != nil {
			n = int(binary.BigEndian.Uint64(v))
		}
		return nil, tx.Put(fam, counter, binary.BigEndian.AppendUint64(nil, uint64(n+1)))
	}}
	var wg sync.WaitGroup
	for _, s := range stores {
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Do(ctx, incr); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	v, _ := get(t, stores[0], 0)
	if got := binary.BigEndian.Uint64([]byte(v)); got != replicas*each {
		t.Fatalf("counter = %d, want %d", got, replicas*each)
	}
}

func TestWarmReadIsOneRequest(t *testing.T) {
	ctx := context.Background()
	cb := counting.New(mem.NewBucket())
	s := open(t, cb, shards.NewShardID(), head.Options{})
	if _, err := s.Do(ctx, put(1, "v")); err != nil {
		t.Fatal(err)
	}
	get(t, s, 1) // warm the caches
	cb.Reset()
	if v, ok := get(t, s, 1); !ok || v != "v" {
		t.Fatal("lost the value")
	}
	if got := cb.Snapshot().Total().Requests; got != 1 {
		t.Fatalf("warm point read took %d requests, want 1", got)
	}
}
