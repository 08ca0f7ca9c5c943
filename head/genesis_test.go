package head

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// decodeHead is DecodeHead with the root the head names.
func decodeHead(b []byte, id shards.ShardID, want Marker) (*Head, digest.Hash, error) {
	h, err := DecodeHead(b, id, want)
	if err != nil {
		return nil, digest.Hash{}, err
	}
	return h, h.RootHash(), nil
}

// goldenGenesisHead is the genesis head of the golden shard: sequence 0,
// no root, no recent nonces.
const goldenGenesisHead = `{"committed_at_unix_ms":1767225600000,` +
	`"logical_shard_id":"000102030405060708090a0b0c0d0e0f",` +
	`"marker":{"format_version":8,"schema_id":"test_workspace","value_format_version":1},` +
	`"nonce":"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf",` +
	`"recent_nonces":[],` +
	`"root":"",` +
	`"root_size":0,` +
	`"schema":"cairn.head.v2",` +
	`"sequence":0}`

func goldenGenesisValue() *Head {
	return &Head{
		Marker:    testSchema.Marker,
		ShardID:   goldenShardID.String(),
		Nonce:     "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf",
		Committed: 1767225600000,
		Recent:    []string{},
	}
}

func TestGenesisHeadGolden(t *testing.T) {
	b, err := encodeHead(goldenGenesisValue())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != goldenGenesisHead {
		t.Fatalf("encoded %s\nwant    %s", b, goldenGenesisHead)
	}
	h, root, err := decodeHead(b, goldenShardID, testSchema.Marker)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Genesis() || !root.IsZero() || h.Sequence != 0 || h.Root != "" || h.RootSize != 0 || len(h.Recent) != 0 {
		t.Fatalf("decoded %+v, root %s", h, root)
	}
	if next := recentNonces(h); len(next) != 0 {
		t.Fatalf("the head after a genesis head remembers %q; a genesis head is no commit", next)
	}
	t.Logf("genesis head, %d bytes: %s", len(b), b)
}

// TestGenesisHeadRejects: a genesis head is held to its own shape as
// strictly as any head, and no other head may look like one.
func TestGenesisHeadRejects(t *testing.T) {
	edit := func(src, old, new string) []byte {
		if !strings.Contains(src, old) {
			t.Fatalf("no %q in %s", old, src)
		}
		return []byte(strings.Replace(src, old, new, 1))
	}
	g := func(old, new string) []byte { return edit(goldenGenesisHead, old, new) }

	root := strings.Repeat("11", 32)
	// A valid head at sequence 1 but for one recent nonce, which sequence
	// 1 cannot have: the genesis head before it was written by no commit.
	one := goldenHeadValue()
	one.Sequence, one.Recent = 1, []string{"b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"}
	seqOne, err := encodeHead(one)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"genesis naming a root", g(`"root":""`, `"root":"`+root+`"`), ErrBadHead},
		{"genesis naming a root of size 181", g(`"root":"","root_size":0`, `"root":"`+root+`","root_size":181`), ErrBadHead},
		{"genesis with a root size", g(`"root_size":0`, `"root_size":1`), ErrBadHead},
		{"genesis with a zero root", g(`"root":""`, `"root":"`+strings.Repeat("0", 64)+`"`), ErrBadHead},
		{"genesis remembering a nonce", g(`"recent_nonces":[]`, `"recent_nonces":["b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"]`), ErrBadHead},
		{"genesis with recent nonces null", g(`"recent_nonces":[]`, `"recent_nonces":null`), ErrBadHead},
		{"genesis without a nonce", g(`"nonce":"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"`, `"nonce":""`), ErrBadHead},
		{"genesis of another shard", g(`"000102030405060708090a0b0c0d0e0f"`, `"000102030405060708090a0b0c0d0e10"`), ErrBadHead},
		{"genesis of another marker", g(`"format_version":8`, `"format_version":9`), ErrSchemaMismatch},
		{"genesis without a root member", g(`"root":"",`, ``), manifests.ErrInvalid},
		{"genesis with a negative sequence", g(`"sequence":0`, `"sequence":-1`), manifests.ErrInvalid},
		{"sequence 1 naming no root", g(`"root_size":0,"schema":"cairn.head.v2","sequence":0`, `"root_size":0,"schema":"cairn.head.v2","sequence":1`), ErrBadHead},
		{"sequence 1 naming no root with a size", g(`"root_size":0,"schema":"cairn.head.v2","sequence":0`, `"root_size":181,"schema":"cairn.head.v2","sequence":1`), ErrBadHead},
		{"sequence 1 remembering a nonce", seqOne, ErrBadHead},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, root, err := decodeHead(c.b, goldenShardID, testSchema.Marker)
			if err == nil || h != nil || !root.IsZero() {
				t.Fatalf("decodeHead(%s) = %+v, %v; want an error", c.b, h, err)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if c.want != ErrSchemaMismatch && !errors.Is(err, ErrBadHead) {
				t.Fatalf("error %v, want also ErrBadHead", err)
			}
		})
	}
	// The zero marker accepts any marker (a sweep that does not know the
	// product); the shard id is still checked.
	other := g(`"format_version":8`, `"format_version":9`)
	if _, err := DecodeHead(other, goldenShardID, Marker{}); err != nil {
		t.Fatalf("zero marker: %v", err)
	}
	if _, err := DecodeHead(other, shards.ShardID{1}, Marker{}); !errors.Is(err, ErrBadHead) {
		t.Fatalf("zero marker, another shard: %v", err)
	}
}

// TestReadHead: the one reader returns the head and the head object's
// attributes (version and store time); a missing head is ErrNoHead and
// bucket.ErrNotExist; a malformed one ErrBadHead.
func TestReadHead(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	layout := shards.NewLayout(testSchema.Families, goldenShardID)
	if _, _, err := ReadHead(ctx, b, layout, testSchema.Marker); !errors.Is(err, ErrNoHead) || !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("missing head: %v", err)
	}
	if written, err := HasObjects(ctx, b, layout); err != nil || written {
		t.Fatalf("HasObjects of an empty shard = %v, %v", written, err)
	}
	put, err := b.Put(ctx, layout.Head(), []byte(goldenGenesisHead), bucket.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	h, attrs, err := ReadHead(ctx, b, layout, testSchema.Marker)
	if err != nil || !h.Genesis() {
		t.Fatalf("ReadHead = %+v, %v", h, err)
	}
	if attrs.Version != put.Version || attrs.ModTime.IsZero() || !attrs.ModTime.Equal(put.ModTime) {
		t.Fatalf("attrs %+v, written %+v", attrs, put)
	}
	if written, err := HasObjects(ctx, b, layout); err != nil || !written {
		t.Fatalf("HasObjects of a shard with a head = %v, %v", written, err)
	}
	if _, err := b.Put(ctx, layout.Head(), []byte(`{"schema":"cairn.head.v2"}`), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadHead(ctx, b, layout, testSchema.Marker); !errors.Is(err, ErrBadHead) {
		t.Fatalf("malformed head: %v", err)
	}
}

// crashAfterWrite returns a fault bucket over a fresh store, and a plain
// view of it, that fails every call once n writes have reached the
// store: a process that died right after its nth write. The counter
// counts the writes sent.
func crashAfterWrite(t *testing.T, n int64) (*fault.Bucket, bucket.Bucket, *atomic.Int64) {
	t.Helper()
	store := mem.NewStore()
	inner, err := mem.New(store, "")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := mem.New(store, "")
	if err != nil {
		t.Fatal(err)
	}
	fb := fault.New(inner)
	seen := new(atomic.Int64)
	var dead atomic.Bool
	fb.Inject(fault.Rule{Fault: fault.Hook(func(_ context.Context, op fault.Op, _ string) error {
		if dead.Load() {
			return errors.New("crashed")
		}
		if op&(fault.OpPut|fault.OpDelete) != 0 && seen.Add(1) == n {
			dead.Store(true)
		}
		return nil
	})})
	return fb, plain, seen
}

// TestGenesisFirstWriteCrash: the first write of a shard creates its
// genesis head before it stages anything, then commits the schema record
// (sequence 1), then the command (2), so a process that dies after any
// of its writes leaves a shard that a new process reads (as empty, or
// with the commits that landed) and writes to.
func TestGenesisFirstWriteCrash(t *testing.T) {
	ctx := context.Background()
	id := shards.NewShardID()
	put := func(v string) Command {
		return Command{Apply: func(tx *Tx) ([]byte, error) {
			return nil, tx.Put(shardstest.Fixed32, make([]byte, 32), []byte(v))
		}}
	}
	// Count the writes of a whole first commit.
	fb, _, writes := crashAfterWrite(t, 1<<40)
	s, err := Open(ctx, fb, id, testSchema, Options{NoGroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, put("first")); err != nil {
		t.Fatal(err)
	}
	total := writes.Load()
	if total != 7 { // genesis head; delta, root, head of the schema record; delta, root, head of the command
		t.Fatalf("a first commit made %d writes, want 7", total)
	}
	for n := int64(1); n <= total; n++ {
		fb, plain, _ := crashAfterWrite(t, n)
		s, err := Open(ctx, fb, id, testSchema, Options{NoGroupCommit: true, MaxAttempts: 2})
		if err != nil {
			t.Fatal(err)
		}
		_, derr := s.Do(ctx, put("crashed"))
		s.Close()
		// A new process over the same store.
		fresh, err := Open(ctx, plain, id, testSchema, Options{Check: true, NoGroupCommit: true})
		if err != nil {
			t.Fatal(err)
		}
		sn, err := fresh.PinOrEmpty(ctx)
		if err != nil {
			t.Fatalf("crash after write %d (%v): a new process cannot read the shard: %v", n, derr, err)
		}
		if sn.Head() == nil || sn.Head().Sequence > 2 || (sn.Head().Sequence == 0) != sn.Empty() {
			t.Fatalf("crash after write %d: head %+v, empty %v", n, sn.Head(), sn.Empty())
		}
		if sn.Head().Genesis() && (sn.StoreTime().IsZero() || Check(ctx, plain, fresh.Layout(), sn.RootHash(), CheckOptions{Strict: true}) != nil) {
			t.Fatalf("crash after write %d: genesis snapshot has no store time or fails Check", n)
		}
		res, err := fresh.Do(ctx, put(fmt.Sprint("after ", n)))
		if err != nil {
			t.Fatalf("crash after write %d: the next write fails: %v", n, err)
		}
		// On a genesis head the schema record commits first, at 1.
		if want := max(sn.Head().Sequence, 1) + 1; res.Sequence != want {
			t.Fatalf("crash after write %d: next write landed at %d, want %d", n, res.Sequence, want)
		}
		after, err := fresh.Pin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, ok, err := after.Get(ctx, shardstest.Fixed32, make([]byte, 32))
		if err != nil || !ok || string(v) != fmt.Sprint("after ", n) {
			t.Fatalf("crash after write %d: read back %q, %v, %v", n, v, ok, err)
		}
		if err := after.checkSchemaRecord(ctx); err != nil {
			t.Fatalf("crash after write %d: %v", n, err)
		}
		t.Logf("crash after write %d of %d: left head sequence %d; the next write landed at %d", n, total, sn.Head().Sequence, res.Sequence)
		fresh.Close()
	}
}

// TestGenesisInitialize: Initialize on a genesis head commits the schema
// record; a second Initialize writes nothing.
func TestGenesisInitialize(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	id := shards.NewShardID()
	s, err := Open(ctx, b, id, testSchema, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.createGenesis(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.createGenesis(ctx); !errors.Is(err, bucket.ErrPrecondition) {
		t.Fatalf("a second genesis: %v, want ErrPrecondition", err)
	}
	sn, err := s.Pin(ctx)
	if err != nil || !sn.Empty() || sn.Sequence() != 0 || !sn.RootHash().IsZero() {
		t.Fatalf("Pin of a genesis head = %+v, %v", sn, err)
	}
	if v, ok, err := sn.Get(ctx, shards.System, SchemaKey); err != nil || ok {
		t.Fatalf("a genesis snapshot reads %q, %v, %v", v, ok, err)
	}
	if err := s.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	sn, err = s.Pin(ctx)
	if err != nil || sn.Sequence() != 1 || len(sn.Head().Recent) != 0 || !sn.Root().Parent.IsZero() {
		t.Fatalf("after Initialize: %+v, %v", sn, err)
	}
	if n := countKeys(t, b); n != 3 {
		t.Fatalf("initialized shard holds %d objects, want 3 (head, root, delta)", n)
	}
	// A replica that saw sequence 1 refuses a genesis head put back.
	genesis := goldenGenesisValue()
	genesis.ShardID = id.String()
	gb, err := encodeHead(genesis)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, s.Layout().Head(), gb, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pin(ctx); !errors.Is(err, ErrHeadRolledBack) {
		t.Fatalf("a genesis head after sequence 1: %v, want ErrHeadRolledBack", err)
	}
}

// TestGenesisInitializedOnce: the first requests of a fresh store come
// together; one of them initializes the shard and the others, waiting
// their turn, find it done. No genesis head or schema commit is written
// to be refused.
func TestGenesisInitializedOnce(t *testing.T) {
	ctx := context.Background()
	cb := counting.New(latency.New(mem.NewBucket(), latency.Options{PerRequest: 2 * time.Millisecond}))
	s, err := Open(ctx, cb, shards.NewShardID(), testSchema, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var g errgroup.Group
	for range 32 {
		g.Go(func() error { return s.Initialize(ctx) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	sn, err := s.Pin(ctx)
	if err != nil || sn.Sequence() != 1 {
		t.Fatalf("after 32 Initialize calls: %+v, %v; want sequence 1", sn, err)
	}
	kinds := cb.Kinds()
	if st := cb.Snapshot(); st.Put.Errors != 0 || kinds[counting.KindPutIfAbsent] != 1 || kinds[counting.KindPutIfVersion] != 1 {
		t.Errorf("32 Initialize calls of one Store: %d puts refused, %d create-only and %d replace-if-version puts; want 0, 1 (the genesis head) and 1 (the schema commit's head)",
			st.Put.Errors, kinds[counting.KindPutIfAbsent], kinds[counting.KindPutIfVersion])
	}
}

// TestGenesisLostHead: a shard with objects but no head is a lost head:
// a commit fails closed and writes no genesis head over it.
func TestGenesisLostHead(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	id := shards.NewShardID()
	s, err := Open(ctx, b, id, testSchema, Options{MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, s.Layout().Head(), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	lost, err := Open(ctx, b, id, testSchema, Options{MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer lost.Close()
	if _, err := lost.Do(ctx, Command{Apply: func(*Tx) ([]byte, error) { return nil, nil }}); !errors.Is(err, ErrNoHead) {
		t.Fatalf("a commit on a lost head: %v, want ErrNoHead", err)
	}
	if err := lost.Initialize(ctx); !errors.Is(err, ErrNoHead) {
		t.Fatalf("Initialize on a lost head: %v, want ErrNoHead", err)
	}
	if _, _, err := b.Get(ctx, s.Layout().Head()); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("a head was written over a lost one: %v", err)
	}
}

// TestWriteHeadAtGenesis: a copy's head takes the place of a genesis
// head (the shard holds nothing) but never of a committed one.
func TestWriteHeadAtGenesis(t *testing.T) {
	ctx := context.Background()
	src := mem.NewBucket()
	id := shards.NewShardID()
	s, err := Open(ctx, src, id, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	sn, err := s.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The state's objects, as a pin's copy brings them, but not the head.
	dst := mem.NewBucket()
	objs, _, err := bucket.ListAll(ctx, src, bucket.ListOptions{Prefix: s.Layout().Prefix()})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Key == s.Layout().Head() {
			continue
		}
		body, _, err := src.Get(ctx, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.Put(ctx, o.Key, body, bucket.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Open(ctx, dst, id, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.createGenesis(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := WriteHeadAt(ctx, dst, id, testSchema, sn.RootHash(), time.UnixMilli(sn.Head().Committed))
	if err != nil || h.Sequence != 1 || h.RootHash() != sn.RootHash() {
		t.Fatalf("WriteHeadAt over a genesis head = %+v, %v", h, err)
	}
	got, _, err := ReadHead(ctx, dst, d.Layout(), testSchema.Marker)
	if err != nil || got.RootHash() != sn.RootHash() {
		t.Fatalf("head after the copy: %+v, %v", got, err)
	}
	// Again: the same root is there, and returned as is.
	if _, err := WriteHeadAt(ctx, dst, id, testSchema, sn.RootHash(), time.UnixMilli(sn.Head().Committed)); err != nil {
		t.Fatal(err)
	}
	// A committed head naming another root is never replaced.
	other := mem.NewBucket()
	o, err := Open(ctx, other, id, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if obj.Key == s.Layout().Head() {
			continue
		}
		body, _, err := src.Get(ctx, obj.Key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Put(ctx, obj.Key, body, bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := WriteHeadAt(ctx, other, id, testSchema, sn.RootHash(), time.UnixMilli(sn.Head().Committed)); !errors.Is(err, ErrHeadExists) {
		t.Fatalf("WriteHeadAt over a committed head: %v, want ErrHeadExists", err)
	}
}

// TestGenesisCommitAt: a command that brings a snapshot of a genesis head
// (Command.At) commits on it directly: its commit is the shard's first,
// and writes the schema record beside the command's own records.
func TestGenesisCommitAt(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s, err := Open(ctx, b, shards.NewShardID(), testSchema, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.createGenesis(ctx); err != nil {
		t.Fatal(err)
	}
	genesis, err := s.Pin(ctx)
	if err != nil || !genesis.Head().Genesis() {
		t.Fatalf("Pin = %+v, %v", genesis, err)
	}
	res, err := s.Do(ctx, Command{At: genesis, Apply: func(tx *Tx) ([]byte, error) {
		return nil, tx.Put(shardstest.Fixed32, make([]byte, 32), []byte("v"))
	}})
	if err != nil || res.Sequence != 1 {
		t.Fatalf("Do at a genesis head = %+v, %v", res, err)
	}
	sn, err := s.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sn.checkSchemaRecord(ctx); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := sn.Get(ctx, shardstest.Fixed32, make([]byte, 32)); err != nil || !ok || string(v) != "v" {
		t.Fatalf("read back %q, %v, %v", v, ok, err)
	}
}
