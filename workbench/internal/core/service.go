package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/payload"
	"github.com/cairnstore/cairn/workbench/internal/tree"
)

// Limits and defaults of a Service.
const (
	// DefaultMaxBytes is the largest payload or whole body a tool moves.
	DefaultMaxBytes = 16 << 20
	// DefaultBlockSize is the size of the blocks a body is stored in.
	DefaultBlockSize = 4 << 20
	// DefaultAgentID is the agent whose root a Service serves by default.
	DefaultAgentID = "default"
	// DefaultInlineMax is the largest body kept inline in its manifest
	// row instead of a block object (see docs/workbench.md, section 4).
	DefaultInlineMax = 4 << 10
)

// Options configure a Service.
type Options struct {
	// AgentID names the deployment root /agents/{AgentID}/wb. Default
	// DefaultAgentID.
	AgentID string
	// MaxBytes bounds a payload and a whole body. Default DefaultMaxBytes.
	MaxBytes int64
	// BlockSize is the size of the blocks a body is stored in. Default
	// DefaultBlockSize.
	BlockSize int
	// InlineMax is the largest body, or appended delta, kept inline in its
	// manifest row: no ledger, no block object, no round of its own. A
	// body of one block only is inlined: the threshold is the smaller of
	// InlineMax and BlockSize. Default DefaultInlineMax (at most
	// nokv.MaxInlineBytes); negative inlines nothing.
	InlineMax int
	// CleanupDelay is how long after a publication landed its staging
	// ledger is deleted, in the background. Default DefaultCleanupDelay.
	CleanupDelay time.Duration
	// BlockCacheBytes is the budget of the cache of small block objects
	// (at most bodies.CacheMaxBlock bytes each) that reads fill, so that
	// a grep over the same small files reads no block again. Default
	// bodies.DefaultCacheBytes; negative caches no block. The engine's
	// cache of shards, tables and roots is Engine.CacheBytes.
	BlockCacheBytes int64
	// BlockCache, when set, is the cache of small blocks, shared with
	// the other Services given it; BlockCacheBytes is then ignored.
	BlockCache *bodies.BlockCache
	// TreeCacheBytes is the budget of the cache of decoded member tree
	// nodes: a commit reads the inner nodes of its parent's tree and the
	// leaves its changes fall in, and a warm replica's commit reads none
	// of them while its workbench's tree fits. Default
	// DefaultTreeCacheBytes; negative caches no node.
	TreeCacheBytes int64
	// TreeCache, when set, is the cache of tree nodes, shared with the
	// other Services given it (NewTreeCache); TreeCacheBytes is then
	// ignored.
	TreeCache *TreeCache
	// CloseTimeout bounds the time Close spends on queued ledger deletes.
	// Default DefaultCloseTimeout.
	CloseTimeout time.Duration
	// Now is the wall clock snapshot leases are judged by (see
	// snapshot_lease.go). Default time.Now.
	Now func() time.Time
	// LeaseGrace is the clock-skew grace: the reaper ends a snapshot only
	// once wall time is this far past its lease deadline, and after a
	// clock regression only once wall time is this far past the lease
	// clock's high-water mark. Default DefaultLeaseGrace; negative means
	// none.
	LeaseGrace time.Duration
	// ReapBatch is the most snapshots one reap command ends. Default
	// DefaultReapBatch.
	ReapBatch int
	// ReadBudget bounds the memory whole-body reads hold at once; give
	// every Service of a process the same one. Default: a budget of the
	// Service's own, of DefaultReadBudget.
	ReadBudget *ReadBudget
	// MemberTrees makes commits freeze their members in a member tree
	// (Commit value version 3, docs/workbench.md "Member trees") instead
	// of a CommitMember row per file, so that a commit writes what
	// changed since its parent rather than the whole tree. Every
	// replica of this release reads both; turn it on once no replica
	// of an older release shares the bucket, which refuses version 3.
	MemberTrees bool
	// ValueFormat is the value format the Service creates new shards in:
	// 0 or nokv.ValueFormatVersion (6) for today's, or one of the four
	// before (5, 4, 3, 2), which a cairn of that format can still read, while
	// replicas of it share the bucket. Shards that exist keep their own.
	ValueFormat int
	// Engine tunes the commit engine.
	Engine head.Options
}

// TestValueFormat, when not 0, is the value format every Service the
// process opens without a ValueFormat creates new shards in, as a cairn
// of that format would (2: members in rows; 3: member trees with flat
// digests): tests run whole suites with it.
var TestValueFormat = 0

// OldestValueFormat is the oldest value format a Service reads and
// creates: a Store opens shards of the five value formats before its
// own.
const OldestValueFormat = nokv.ValueFormatVersion - 5

// Service serves the Workbench tools of one agent's deployment root over
// one bucket. Any number of Services, in one process or many, may serve
// the same root from the same bucket.
type Service struct {
	store   *head.Store
	Bodies  *bodies.Store
	Cleanup *ledgerCleanup
	root    nokv.RootID
	logical string // the deployment root, "/agents/{agent}/wb"
	Opts    Options

	seqMu sync.Mutex
	seq   uint64 // request ids of this Service
	seed  [16]byte

	// QueryScanOnly makes every query scan its scope (tests compare the
	// index-answered results with it); queryIndexAnswers counts the
	// queries an index answered (query_index.go).
	QueryScanOnly     bool
	QueryIndexAnswers atomic.Int64

	// Trees reads and caches member-tree nodes (members.go).
	Trees *tree.Objects

	// RestoreHook, when set (tests only), runs after each command of a
	// restore lands ("prepare", "copy", "final"); an error stops the
	// restore there, as a crash between its commands would.
	RestoreHook func(step string) error
}

// Derive16 derives a stable 16-byte id from an agent id, so that every
// replica of one agent finds the same logical shard and RootId.
func Derive16(kind, agent string) [16]byte {
	h := sha256.Sum256([]byte("cairn.workbench." + kind + ".v1\x00" + agent))
	var id [16]byte
	copy(id[:], h[:16])
	return id
}

// Open opens the Workbench deployment root of opts.AgentID in b.
func Open(ctx context.Context, b bucket.Bucket, opts Options) (*Service, error) {
	if opts.AgentID == "" {
		opts.AgentID = DefaultAgentID
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.BlockSize <= 0 {
		opts.BlockSize = DefaultBlockSize
	}
	if opts.InlineMax == 0 {
		opts.InlineMax = DefaultInlineMax
	}
	opts.InlineMax = min(opts.InlineMax, opts.BlockSize, nokv.MaxInlineBytes)
	if opts.CleanupDelay <= 0 {
		opts.CleanupDelay = DefaultCleanupDelay
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = DefaultCloseTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	switch {
	case opts.LeaseGrace == 0:
		opts.LeaseGrace = DefaultLeaseGrace
	case opts.LeaseGrace < 0:
		opts.LeaseGrace = 0
	}
	if opts.ReapBatch <= 0 {
		opts.ReapBatch = DefaultReapBatch
	}
	if opts.ReadBudget == nil {
		opts.ReadBudget = NewReadBudget(0)
	}
	logical, werr := AgentRoot(opts.AgentID)
	if werr != nil {
		return nil, werr
	}
	id := shards.ShardID(Derive16("shard", opts.AgentID))
	// Publications are data commands, so replicas of one deployment
	// carry each other's through intents when they share a head
	// (docs/engine.md).
	opts.Engine.Intents = true
	schema := nokv.Schema()
	if opts.ValueFormat == 0 {
		opts.ValueFormat = TestValueFormat
	}
	switch v := opts.ValueFormat; {
	case v == 0:
	case v <= nokv.ValueFormatVersion && v >= OldestValueFormat:
		schema.Marker.ValueFormatVersion = uint64(v)
	default:
		return nil, fmt.Errorf("workbench: value format %d: this cairn creates shards of %d to %d", v, OldestValueFormat, nokv.ValueFormatVersion)
	}
	store, err := head.Open(ctx, b, id, schema, opts.Engine)
	if err != nil {
		return nil, err
	}
	bs := bodies.New(b, store.Layout(), bodies.Options{BlockSize: opts.BlockSize, CacheBytes: opts.BlockCacheBytes, Cache: opts.BlockCache})
	s := &Service{
		store:   store,
		Bodies:  bs,
		Cleanup: newLedgerCleanup(bs, opts.CleanupDelay, opts.CloseTimeout),
		root:    nokv.RootID(Derive16("root", opts.AgentID)),
		logical: logical,
		Opts:    opts,
	}
	trees := opts.TreeCache
	if trees == nil {
		trees = NewTreeCache(opts.TreeCacheBytes)
	}
	s.Trees = &tree.Objects{Bucket: b, Prefix: bodies.TreePrefix(store.Layout(), s.root), Cache: trees.c}
	if _, err := rand.Read(s.seed[:]); err != nil {
		s.Close()
		return nil, err
	}
	for kind, h := range commands {
		store.Handle(kind, func(tx *head.Tx, payload []byte) ([]byte, error) { return h(s, tx, payload) })
	}
	return s, nil
}

// commands are the handlers of the engine's data commands that the
// workbench issues, by kind; every Service registers all of them with its
// store, so that a replica carries any other replica's intents.
var commands = map[string]func(s *Service, tx *head.Tx, payload []byte) ([]byte, error){}

// RegisterCommand adds the handler of the data commands of kind. It is
// called from init; a second registration of one kind panics.
func RegisterCommand(kind string, h func(s *Service, tx *head.Tx, payload []byte) ([]byte, error)) {
	if _, dup := commands[kind]; dup {
		panic("workbench: command kind " + kind + " registered twice")
	}
	commands[kind] = h
}

// Close releases the Service. It first tries the queued deletes of landed
// publications' staging ledgers, for at most Options.CloseTimeout; what
// remains is garbage the sweep owns.
func (s *Service) Close() error {
	s.Cleanup.close()
	return s.store.Close()
}

// Inlines reports whether a body (or an appended delta) of n bytes is kept
// inline in its manifest row.
func (s *Service) Inlines(n int) bool { return n > 0 && n <= s.Opts.InlineMax }

// Store returns the engine store under the Service.
func (s *Service) Store() *head.Store { return s.store }

// Root returns the RootId the Service serves.
func (s *Service) Root() nokv.RootID { return s.root }

// LogicalRoot returns the deployment root, "/agents/{agent}/wb".
func (s *Service) LogicalRoot() string { return s.logical }

// RequestID returns a fresh engine request id for one tool call. The
// engine reuses it across its own retries of the call's commit, so the
// call applies at most once.
//
// The id is "t", the call's time in milliseconds (12 hex digits) and 20
// hex digits of a digest of the Service's random seed and a counter,
// which alone make it unique. The time only orders: the engine keeps
// its dedupe records sorted by id, so records of time-ordered ids are
// added at the end of their shards and a fold rewrites the last page of
// a shard, not a page for nearly every record as random ids make it (a
// million-file store held 1.6 GB of those pages and their page indexes
// before a sweep); and they expire from the front, where the fold drops
// whole expired pages (package head). "t" sorts after the hex digits of
// the random ids of earlier releases, so a store's older records sit
// before every new one and expire from the front too. A clock that is
// wrong, or goes back, only puts records out of that order.
func (s *Service) RequestID() string {
	s.seqMu.Lock()
	s.seq++
	n := s.seq
	s.seqMu.Unlock()
	h := sha256.New()
	h.Write([]byte("cairn.workbench.request\x00"))
	h.Write(s.seed[:])
	fmt.Fprintf(h, "%d", n)
	ms := uint64(max(s.Opts.Now().UnixMilli(), 0))
	return fmt.Sprintf("t%012x%s", ms&(1<<48-1), hex.EncodeToString(h.Sum(nil)[:10]))
}

// tool is one Workbench tool's implementation as the registry
// (registry.go) holds it: it takes the canonical text of arguments its
// schema has validated.
// Its result is the value Call prints, status member included: a map, or
// a typed result (a struct that embeds Success).
type tool func(ctx context.Context, s *Service, args []byte) (any, *Error)

// RegisterTool installs a contract tool's implementation in the
// registry; each tool file registers its own from init. run receives the
// arguments decoded into the tool's input type In, after In's resolve has
// passed (input.go). An input type whose members are not exactly the
// schema's properties panics, as a second registration of one name does.
func RegisterTool[In any, P interface {
	*In
	input
}, R any](name string, run func(context.Context, *Service, P) (R, *Error)) {
	CheckInputType(name, reflect.TypeFor[In]())
	registry.install(name, func(ctx context.Context, s *Service, args []byte) (any, *Error) {
		in := P(new(In))
		if err := DecodeInput(args, in); err != nil {
			// Unreachable: the input type has the schema's members and the
			// schema checked their types.
			return nil, Internal(name + ": decode validated arguments: " + err.Error())
		}
		if n := oversizeOf(ctx); n > 0 {
			if o, ok := any(in).(oversized); ok {
				o.setOversize(n)
			}
		}
		if werr := in.Resolve(s); werr != nil {
			return nil, werr
		}
		if j, ok := any(in).(interface{ joinedPathRefusal() *Error }); ok {
			if werr := j.joinedPathRefusal(); werr != nil {
				return nil, werr
			}
		}
		res, werr := run(ctx, s, in)
		if werr != nil {
			return nil, werr
		}
		return succeeded(name, res)
	})
}

// Call runs one tool on its JSON input and returns the JSON result and
// whether it is a success. Errors are results too: the error envelope of
// the contract, {status:"error", code, message, retryable, details}.
func (s *Service) Call(ctx context.Context, name string, input []byte) ([]byte, bool) {
	res, werr := s.Dispatch(ctx, name, input)
	if werr != nil {
		b, err := MarshalResult(werr.Envelope())
		if err != nil {
			panic("workbench: marshal error envelope: " + err.Error())
		}
		return b, false
	}
	b, err := MarshalResult(res)
	if err != nil {
		b, _ = MarshalResult(FromError(err).Envelope())
		return b, false
	}
	return b, true
}

// MaxInputBytes is the largest raw JSON input of tool that a Service
// whose body limit is maxBytes (Options.MaxBytes; zero or less: the
// default) parses. A larger input is refused, unparsed, with
// InputTooLarge. The bound is what the largest input that can succeed may
// take: a payload of maxBytes written as JSON text can take 6 bytes per
// byte (a control byte written \u0001; base64 takes 4/3), so 6 × maxBytes,
// plus inputSlack for the other members. An edit carries two strings
// (old_string and new_string, neither useful past maxBytes), so its bound
// is 12 × maxBytes + inputSlack.
func MaxInputBytes(tool string, maxBytes int64) int64 {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	per := int64(6)
	if tool == "workbench_edit" {
		per = 12
	}
	return per*maxBytes + inputSlack
}

// inputSlack is what MaxInputBytes allows beyond the payload: ids, paths,
// content types and the JSON around them.
const inputSlack = 64 << 10

func (s *Service) Dispatch(ctx context.Context, name string, input []byte) (any, *Error) {
	if _, known := registry.lookup(name); known {
		if limit := MaxInputBytes(name, s.Opts.MaxBytes); int64(len(input)) > limit {
			return nil, InputTooLarge(uint64(len(input)), uint64(limit), false)
		}
	}
	if (name == "workbench_put_file" || name == "workbench_append") && !lookedAt(ctx) {
		if reduced, size, ok := payload.EmptyOversizedText(input, s.Opts.MaxBytes); ok {
			input, ctx = reduced, withOversize(ctx, size)
		}
	}
	_, args, werr := validateInput(name, input)
	if werr != nil {
		return nil, werr
	}
	t := registry.implementation(name)
	if t == nil {
		return nil, &Error{Code: "Unimplemented", Message: name + " is not available in this version of cairn", Details: map[string]any{"tool": name}}
	}
	return t(ctx, s, args)
}

// CacheStats reports the engine's caches of decoded objects: shard
// objects and pages, tables, roots.
func (s *Service) CacheStats() (objects, tables, roots shards.CacheStats) {
	return s.store.CacheStats()
}

// Detached returns a Service that has a root and a logical root and no
// store: enough for what reads no storage (signing a cursor, planning a
// restore's manifest), as the fuzz and vector tests use it.
func Detached(root nokv.RootID, logical string) *Service {
	return &Service{root: root, logical: logical}
}
